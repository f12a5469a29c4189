{% macro cdc_detect_format(value_text) -%}
    {#-
        The format of a message whose topic has none configured, from its shape alone. Returns
        null when the shape says nothing (silver quarantines it as "unknown format") and
        'ambiguous:<ids>' for look-alikes that cannot be told apart (canal-json, drs-json and
        drs-json-c share one shape), so that the quarantine reason names the candidates.

        The shapes (vendor documents in shared/formats, samples in shared/conformance):
        - payload + version '2.0' (or schema.column / schema.pk): dataworks-v2 (OMS DataWorks 2.0);
        - payload + version, schema.dataColumn, payload.sequenceId or payload.op MHEARTBEAT:
          dataworks (its ops are upper case: INSERT, UPDATE_BEFOR, ...);
        - payload with op / ddl / before / after / status: debezium-json (schema + payload);
        - allMetaData / recordType / prevStruct / postStruct: oms-json (Default, ExtendColumnType);
        - meta.op: shareplex-json;
        - operation with objectName / fields / beforeImages / afterImages: oms-avro-json;
        - metadata.operation or metadata.record-type: aws-dms-json;
        - op_type: ogg-json;
        - action with data / db / pks / execTs / entryType: cloudcanal-json;
        - type + xid / xoffset / commit / position / primary_key_columns, or a lower-case type
          (insert, update, bootstrap-insert, table-create, ...): maxwell-json (data is an object);
        - type + an array data, isDdl, pkNames, mysqlType, sqlType or es: canal-json, drs-json
          and drs-json-c alike: ambiguous;
        - op + source / before / after: debezium-flat; ddl + databaseName / tableChanges /
          position (dtle's schema-change topic) or status BEGIN / END (transaction topic):
          debezium-json;
        - __deleted: debezium-smt.
        Cost: the top level is parsed once (from_json into a map of raw field texts); nested
        checks parse only the small field they look at.
    -#}
    case
        when {{ value_text }} is null then null
        {# transform over a one-element array binds the parsed map to a name, so the message
            is parsed once however many checks follow (Spark SQL has no let) #}
        else transform(array(from_json({{ value_text }}, 'map<string,string>')), m -> case
            when m is null then null
            when map_contains_key(m, 'payload') then case
                when m['version'] = '2.0'
                    or get_json_object(m['schema'], '$.column') is not null
                    or get_json_object(m['schema'], '$.pk') is not null
                    then 'dataworks-v2'
                when map_contains_key(m, 'version')
                    or get_json_object(m['schema'], '$.dataColumn') is not null
                    or get_json_object(m['payload'], '$.sequenceId') is not null
                    or get_json_object(m['payload'], '$.op') = 'MHEARTBEAT'
                    then 'dataworks'
                when get_json_object(m['payload'], '$.op') is not null
                    or get_json_object(m['payload'], '$.ddl') is not null
                    or get_json_object(m['payload'], '$.after') is not null
                    or get_json_object(m['payload'], '$.before') is not null
                    or get_json_object(m['payload'], '$.status') in ('BEGIN', 'END')
                    then 'debezium-json'
            end
            when map_contains_key(m, 'allMetaData') or map_contains_key(m, 'recordType')
                or map_contains_key(m, 'prevStruct') or map_contains_key(m, 'postStruct')
                then 'oms-json'
            when get_json_object(m['meta'], '$.op') is not null then 'shareplex-json'
            when map_contains_key(m, 'operation') and (
                map_contains_key(m, 'objectName') or map_contains_key(m, 'fields')
                or map_contains_key(m, 'beforeImages') or map_contains_key(m, 'afterImages')
            ) then 'oms-avro-json'
            when get_json_object(m['metadata'], '$.operation') is not null
                or get_json_object(m['metadata'], '$.record-type') is not null
                then 'aws-dms-json'
            when map_contains_key(m, 'op_type') then 'ogg-json'
            when map_contains_key(m, 'action') and (
                map_contains_key(m, 'data') or map_contains_key(m, 'db') or map_contains_key(m, 'pks')
                or map_contains_key(m, 'execTs') or map_contains_key(m, 'entryType')
            ) then 'cloudcanal-json'
            when map_contains_key(m, 'type') and (
                map_contains_key(m, 'xid') or map_contains_key(m, 'xoffset') or map_contains_key(m, 'commit')
                or map_contains_key(m, 'position') or map_contains_key(m, 'primary_key_columns')
                or m['type'] rlike '^(insert|update|delete|bootstrap-[a-z]+|table-[a-z]+|database-[a-z]+)$'
            ) then 'maxwell-json'
            when map_contains_key(m, 'type') and (
                m['data'] like '[%' or map_contains_key(m, 'isDdl') or map_contains_key(m, 'pkNames')
                or map_contains_key(m, 'mysqlType') or map_contains_key(m, 'sqlType') or map_contains_key(m, 'es')
            ) then 'ambiguous:canal-json,drs-json,drs-json-c'
            when map_contains_key(m, 'op') and (
                map_contains_key(m, 'source') or map_contains_key(m, 'before') or map_contains_key(m, 'after')
            ) then 'debezium-flat'
            when map_contains_key(m, 'ddl') and (
                map_contains_key(m, 'databaseName') or map_contains_key(m, 'tableChanges')
                or map_contains_key(m, 'position')
            ) then 'debezium-json'
            when m['status'] in ('BEGIN', 'END') and map_contains_key(m, 'id') then 'debezium-json'
            when map_contains_key(m, '__deleted') then 'debezium-smt'
        end)[0]
    end
{%- endmacro %}

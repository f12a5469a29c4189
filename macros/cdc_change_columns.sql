{% macro cdc_parser_columns() -%}
    {#-
        The contract between the vendor parsers (macros/formats/<format id>.sql) and silver.
        Every parser returns exactly these columns, in this order, one row per row-level change
        or control event it finds (or one row with parse_error set when the record cannot be
        understood). Silver (cdc_parsed) maps vendor_op through the op-code seed, applies key
        overrides, derives the key values, ids and the record kind.
    -#}
    {{ return([
        ('kafka_topic', 'string'),
        ('kafka_partition', 'int'),
        ('kafka_offset', 'bigint'),
        ('kafka_timestamp', 'timestamp'),
        ('ingested_at', 'timestamp'),
        ('batch_id', 'string'),
        ('source_format', 'string'),
        ('row_index', 'int'),
        ('vendor_op', 'string'),
        ('source_database', 'string'),
        ('source_schema', 'string'),
        ('source_table', 'string'),
        ('key_columns', 'array<string>'),
        ('key_values', 'map<string,string>'),
        ('before_values', 'map<string,string>'),
        ('after_values', 'map<string,string>'),
        ('before_image', 'string'),
        ('after_image', 'string'),
        ('column_types', 'string'),
        ('event_time', 'timestamp'),
        ('vendor_sequence', 'string'),
        ('apply_order', 'string'),
        ('transaction_id', 'string'),
        ('statement', 'string'),
        ('parse_error', 'string'),
        ('raw_value', 'string'),
        ('raw_value_base64', 'string'),
        ('raw_key', 'string'),
    ]) }}
{%- endmacro %}

{% macro cdc_parser_select(exprs) -%}
    {#-
        The parser's final select list: `exprs` maps contract column -> SQL expression; columns
        a parser leaves out are null. Casting here makes every parser's output union-compatible.
        Where the record carries a fast parser's row (`_fast`, see cdc_fast_parsers), that row's
        columns are taken instead, and the SQL expressions only for the records it left.
    -#}
    {%- set fast = exprs.get('_fast') %}
    {%- set fast_columns = cdc_fast_parse_columns() | map(attribute=0) | list %}
    {%- for name, type in cdc_parser_columns() %}
        {%- set expr = exprs.get(name, 'null') %}
        {%- if fast and name in fast_columns %}
            {%- set expr = 'case when ' ~ fast ~ ' is not null then ' ~ fast ~ '.' ~ name ~ ' else ' ~ expr ~ ' end' %}
        {%- endif %}
    cast({{ expr }} as {{ type }}) as {{ name }}{{ "," if not loop.last }}
    {%- endfor %}
{%- endmacro %}

{% macro cdc_fast_parse_columns() -%}
    {#- The columns a fast parser returns: the contract's, less those copied from the record.
        jvm/functions/.../FastParsers.java declares the same row. -#}
    {%- set copied = ['kafka_topic', 'kafka_partition', 'kafka_offset', 'kafka_timestamp', 'ingested_at',
                      'batch_id', 'source_format', 'raw_value', 'raw_value_base64', 'raw_key'] %}
    {{ return(cdc_parser_columns() | rejectattr(0, 'in', copied) | list) }}
{%- endmacro %}

{% macro cdc_fast_parse_type() -%}
    {#- The SQL type of a fast parser's row. -#}
    struct<{% for name, type in cdc_fast_parse_columns() %}{{ name }}: {{ type }}{{ ", " if not loop.last }}{% endfor %}>
{%- endmacro %}

{% macro cdc_fast_parsers() -%}
    {#-
        Parser macro -> the JVM function (jvm/functions, FastParsers) that reads the common
        message of its format in one pass and returns the parser's columns, or null for any
        other message, which the SQL parser then reads (silver.cdc_parsed's post-hook,
        cdc_parse_leftovers). The SQL parsers remain the definition of each format:
        tests/python/test_fast_parser_*.py require both to give the same rows. Off with the JVM functions (cdc_jvm_functions:
        false) or with `cdc_fast_parsers: false`.
    -#}
    {%- if not cdc_jvm_functions() or var('cdc_fast_parsers', true) in (false, 'false') %}
        {{ return({}) }}
    {%- endif %}
    {{ return({
        'parse_debezium_json': 'cdc_lakehouse.json.parse_debezium',
        'parse_oms_json': 'cdc_lakehouse.json.parse_oms',
        'parse_maxwell_json': 'cdc_lakehouse.json.parse_maxwell',
        'parse_canal_json': 'cdc_lakehouse.json.parse_canal',
    }) }}
{%- endmacro %}

{% macro cdc_record_passthrough(alias='r') -%}
    {#- The contract columns every parser copies from the bronze record unchanged. -#}
    {#- raw_value and raw_key from the bytes, not value_text / key_text: silver empties those
        for the records a fast parser has read (models/silver/cdc_parsed.sql). `_fast` is that
        parser's row (cdc_parser_select). -#}
    {{ return({
        'kafka_topic': alias ~ '.topic',
        'kafka_partition': alias ~ '.partition',
        'kafka_offset': alias ~ '.offset',
        'kafka_timestamp': alias ~ '.timestamp',
        'ingested_at': alias ~ '.ingested_at',
        'batch_id': alias ~ '.batch_id',
        'source_format': alias ~ '.resolved_format',
        'raw_value': 'case when ' ~ alias ~ '.value_is_utf8 then cast(' ~ alias ~ '.value as string) end',
        'raw_value_base64': 'case when not ' ~ alias ~ '.value_is_utf8 then base64(' ~ alias ~ '.value) end',
        'raw_key': 'coalesce(' ~ cdc_utf8_text(alias ~ '.key') ~ ', base64(' ~ alias ~ '.key))',
        '_fast': alias ~ '.fast',
    }) }}
{%- endmacro %}

{% macro cdc_formats() -%}
    {#-
        Every format id of SPEC -> the parser macro that reads it (macros/formats/). A parser
        may serve several ids (it is called once with all of them). An id whose parser macro
        does not exist quarantines its records with "no parser".
    -#}
    {{ return({
        'dataworks': 'parse_dataworks',
        'drs-json': 'parse_drs_json',
        'drs-json-c': 'parse_drs_json',
        'cloudcanal-json': 'parse_cloudcanal_json',
        'canal-json': 'parse_canal_json',
        'debezium-json': 'parse_debezium_json',
        'debezium-flat': 'parse_debezium_json',
        'debezium-smt': 'parse_debezium_smt',
        'oms-json': 'parse_oms_json',
        'dataworks-v2': 'parse_dataworks_v2',
        'shareplex-json': 'parse_shareplex_json',
        'oms-avro-json': 'parse_oms_avro_json',
        'maxwell-json': 'parse_maxwell_json',
        'ogg-json': 'parse_ogg_json',
        'aws-dms-json': 'parse_aws_dms_json',
    }) }}
{%- endmacro %}

{#
    Typing of gold columns from the vendor type metadata that silver keeps in column_types.

    cdc_column_spark_type() decides the Spark type of a column from its metadata (Debezium
    schema type + semantic name, a SQL type such as canal's mysqlType "decimal(10,2) unsigned",
    OMS __light_type, OMS Avro dataTypeNumber / precision / scale / charset, JDBC sqlType codes,
    DataWorks column types) or an override; cdc_typed_value() turns the exact text of a value
    into that type, decoding what each vendor encodes. The decisions, from the vendor documents
    in shared/formats:

    - Integers take the range the source type may hold: MySQL `bigint unsigned` is
      decimal(20,0), `int unsigned` bigint. OMS Avro's dataTypeNumber does not say signed or
      unsigned, so its LONGLONG (8) and BIT (16) are decimal(20,0) and LONG (3) bigint. OMS's
      type BIGINT (oms-json __light_type, DataWorks 2.0 columns) is its type for integers beyond
      64 bits (the examples send 10223372036854775806 under it; 64-bit is INT64): decimal(20,0).
      DataWorks LONG is bigint. tinyint(1) stays an integer: MySQL stores -128..127 in it.
    - DECIMAL(p,s) with p <= 38 is decimal(p,s); wider, or without a precision, it is the exact
      text (a string), never a double. DataWorks writes DECIMAL under its type DOUBLE as JSON
      strings, and its type alone cannot tell them from real doubles: DataWorks DOUBLE is the
      exact text too (a row in seeds/cdc_column_type_overrides.csv gives such a column its
      type). Kafka Connect Decimal and Debezium's VariableScaleDecimal bytes are converted
      exactly at any width (base-10^9 limbs, no 38-digit arithmetic).
    - Binary: base64 (Debezium, DataWorks, OMS formats), one ISO-8859-1 character per byte
      (Canal, CloudCanal, Maxwell), Java's byte[] text "[106, -1]" (Huawei DRS); OMS Avro
      bytes without charset or with charset "binary" (BINARY / VARBINARY) are binary, with a
      text charset a string.
    - Time zones. The session time zone is UTC (profiles/profiles.yml); a Spark timestamp is an
      instant, shown in UTC. So:
      * date-time text without a zone (canal, DRS, OMS DATETIME "2024-02-29 23:59:59.123456",
        Avro DateTime records) is the source's wall-clock time and reads back as that
        wall-clock; so do Debezium Timestamp / MicroTimestamp / NanoTimestamp, which are the
        wall-clock as epoch ms / us / ns in UTC; canal also writes TIMESTAMP columns this way;
      * epoch numbers are instants: DataWorks DATE (every date or time column: epoch ms, so a
        Spark timestamp, not a date, keeps the time of day; negative before 1970), DRS and OMS
        TIMESTAMP "[Unix seconds][.fraction]" (12 or more integer digits: epoch ms, as in the
        DataWorks 2.0 header example), Avro Timestamp records {timestamp: seconds, millis:
        microseconds} (as Alibaba DTS's Avro reader reads them);
      * text with a zone ("... Asia/Shanghai", Debezium ZonedTimestamp "...Z") is that instant.
      Analysts who want another zone use from_utc_timestamp().
    - Debezium's logical types (the schema's `name`) are decoded by _cdc_debezium_types() and
      cdc_typed_value (docs/types.md is the table). Spark's TIME type needs a session flag
      (spark.sql.timeType.enabled) and Delta stores neither TIME nor intervals, so a time of
      day is ISO text HH:MM:SS[.fff...] (signed and over 24 h for MySQL's TIME durations) and a
      duration ISO-8601 text [-]PnDTnHnMn[.n]S; Bits are the big-endian bytes the database
      shows; geometry is its WKB; an `array` is a Spark array of its `items` type.
    - Other formats' TIME, INTERVAL, JSON, ENUM, SET and geometry stay text.
#}

{% macro _cdc_debezium_types() -%}
    {#- Debezium logical type (schema `name`) -> Spark type; any other io.debezium name is text. -#}
    {{ return({
        'io.debezium.time.Date': 'date',
        'io.debezium.time.IsoDate': 'date',
        'org.apache.kafka.connect.data.Date': 'date',
        'io.debezium.time.Timestamp': 'timestamp',
        'io.debezium.time.MicroTimestamp': 'timestamp',
        'io.debezium.time.NanoTimestamp': 'timestamp',
        'io.debezium.time.ZonedTimestamp': 'timestamp',
        'io.debezium.time.IsoTimestamp': 'timestamp',
        'org.apache.kafka.connect.data.Timestamp': 'timestamp',
        'io.debezium.time.Time': 'string',
        'io.debezium.time.MicroTime': 'string',
        'io.debezium.time.NanoTime': 'string',
        'org.apache.kafka.connect.data.Time': 'string',
        'io.debezium.time.ZonedTime': 'string',
        'io.debezium.time.IsoTime': 'string',
        'io.debezium.time.MicroDuration': 'string',
        'io.debezium.time.NanoDuration': 'string',
        'io.debezium.time.Interval': 'string',
        'io.debezium.time.Year': 'int',
        'io.debezium.data.VariableScaleDecimal': 'string',
        'io.debezium.data.Bits': 'binary',
        'io.debezium.data.geometry.Geometry': 'binary',
        'io.debezium.data.geometry.Geography': 'binary',
        'io.debezium.data.geometry.Point': 'binary',
    }) }}
{%- endmacro %}

{% macro _cdc_debezium_clock_units() -%}
    {#- integer times of day / durations -> units per second -#}
    {{ return({
        'io.debezium.time.Time': 1000,
        'org.apache.kafka.connect.data.Time': 1000,
        'io.debezium.time.MicroTime': 1000000,
        'io.debezium.time.NanoTime': 1000000000,
    }) }}
{%- endmacro %}

{% macro _cdc_debezium_duration_units() -%}
    {{ return({'io.debezium.time.MicroDuration': 1000000, 'io.debezium.time.NanoDuration': 1000000000}) }}
{%- endmacro %}

{% macro _cdc_sql_type_text(meta) -%}
    {#- The SQL type text the metadata names, lower case ('' when it names none). -#}
    {%- set jdbc = {
        '-7': 'bit', '-6': 'tinyint', '5': 'smallint', '4': 'int', '-5': 'bigint', '6': 'float',
        '7': 'real', '8': 'double', '2': 'numeric', '3': 'decimal', '1': 'char', '12': 'varchar',
        '-1': 'text', '91': 'date', '92': 'time', '93': 'timestamp', '-2': 'binary',
        '-3': 'varbinary', '-4': 'blob', '2004': 'blob', '2005': 'text', '16': 'boolean',
        '-15': 'char', '-9': 'varchar', '2014': 'timestamp with time zone', '2013': 'time'
    } -%}
    {#- MySQL's enum_field_types (OMS Avro dataTypeNumber); signedness unknown: the unsigned range -#}
    {%- set avro = {
        '0': 'decimal', '1': 'tinyint', '2': 'smallint', '3': 'int unsigned', '4': 'float', '5': 'double',
        '7': 'timestamp', '8': 'bigint unsigned', '9': 'mediumint', '10': 'date', '11': 'time',
        '12': 'datetime', '13': 'year', '14': 'date', '15': 'varchar', '16': 'bigint unsigned',
        '17': 'timestamp', '18': 'datetime', '19': 'time', '245': 'json', '246': 'decimal', '247': 'enum',
        '248': 'set', '249': 'blob', '250': 'blob', '251': 'blob', '252': 'blob', '253': 'varchar',
        '254': 'char', '255': 'geometry'
    } -%}
    {%- for key in ['mysqlType', 'columnType', 'dataTypeName', 'schemaType', 'sqlTypeName', 'type_name',
                    'typeName'] -%}
        {%- if meta.get(key) is string and meta.get(key) -%}
            {{ return(meta.get(key) | lower) }}
        {%- endif -%}
    {%- endfor -%}
    {%- if meta.get('dataTypeNumber') is not none and (meta.get('dataTypeNumber') | string) in avro -%}
        {{ return(avro[meta.get('dataTypeNumber') | string]) }}
    {%- endif -%}
    {%- if meta.get('sqlType') is not none and (meta.get('sqlType') | string) in jdbc -%}
        {{ return(jdbc[meta.get('sqlType') | string]) }}
    {%- endif -%}
    {{ return((meta.get('type') or '') | string | lower) }}
{%- endmacro %}

{% macro cdc_column_spark_type(source_format, meta, override=none) -%}
    {#- The Spark type of a column; 'string' when the metadata says nothing usable. -#}
    {%- if override -%}{{ return(override | lower) }}{%- endif -%}
    {%- set name = (meta.get('name') or '') | string -%}
    {%- set debezium = _cdc_debezium_types() -%}
    {%- if name in debezium -%}{{ return(debezium[name]) }}{%- endif -%}
    {%- if name.startswith('io.debezium.') -%}{{ return('string') }}{%- endif -%}
    {%- if meta.get('type') == 'array' and meta.get('items') is mapping -%}
        {{ return('array<' ~ cdc_column_spark_type(source_format, meta.get('items')) ~ '>') }}
    {%- endif -%}
    {#- PostgreSQL hstore with hstore.handling.mode=map #}
    {%- if meta.get('type') == 'map' -%}{{ return('map<string,string>') }}{%- endif -%}
    {%- set source_type = (meta.get('parameters') or {}).get('__debezium.source.column.type') -%}
    {%- if meta.get('type') == 'string' and not name and source_type -%}
        {#- decimal.handling.mode=string and the string binary.handling.modes, named by
            column.propagate.source.type: the source type says decimal or binary -#}
        {%- set params = meta.get('parameters') -%}
        {%- set sized = cdc_column_spark_type(source_format, {'type': source_type ~ (
            '(' ~ params.get('__debezium.source.column.length') ~ ',' ~ (params.get('__debezium.source.column.scale') or 0) ~ ')'
            if params.get('__debezium.source.column.length') else '')}) -%}
        {{ return(sized if sized == 'binary' or sized.startswith('decimal') else 'string') }}
    {%- endif -%}
    {%- if name == 'org.apache.kafka.connect.data.Decimal' -%}
        {%- set params = meta.get('parameters') or {} -%}
        {%- set precision = (params.get('connect.decimal.precision') or 38) | int -%}
        {%- set scale = (params.get('scale') or 0) | int -%}
        {{ return('decimal(' ~ precision ~ ',' ~ scale ~ ')' if precision <= 38 else 'string') }}
    {%- endif -%}
    {%- if source_format == 'dataworks' -%}
        {#- DataWorks' six column types (dataworks-realtime-sync.txt, "Field types") -#}
        {%- set dataworks = {'long': 'bigint', 'double': 'string', 'date': 'timestamp', 'bytes': 'binary',
                             'boolean': 'boolean', 'string': 'string'} -%}
        {%- set kind = (meta.get('type') or '') | string | lower -%}
        {%- if kind in dataworks -%}{{ return(dataworks[kind]) }}{%- endif -%}
    {%- endif -%}
    {%- if meta.get('dataTypeNumber') is not none and meta.get('charset') -%}
        {#- OMS Avro bytes with a charset: text, unless the charset is binary (BINARY / VARBINARY) -#}
        {{ return('binary' if (meta.get('charset') | string | lower) == 'binary' else 'string') }}
    {%- endif -%}

    {%- set text = _cdc_sql_type_text(meta) -%}
    {%- if source_format in ['oms-json', 'dataworks-v2'] and text == 'bigint' -%}
        {#- OMS's BIGINT: integers beyond 64 bits (INT64 is its 64-bit type) -#}
        {{ return('decimal(20,0)') }}
    {%- endif -%}
    {%- set m = modules.re.match('^\\s*([a-z_0-9 ]+?)\\s*(?:\\(\\s*(\\d+)\\s*(?:,\\s*(-?\\d+)\\s*)?\\))?\\s*(unsigned|signed|zerofill)?\\s*(?:unsigned|zerofill)?\\s*$', text) -%}
    {%- if not m -%}{{ return('string') }}{%- endif -%}
    {%- set base = m.group(1) -%}
    {%- set p = m.group(2) | int if m.group(2) else none -%}
    {%- set s = m.group(3) | int if m.group(3) else 0 -%}
    {%- set unsigned = m.group(4) == 'unsigned' or 'unsigned' in text -%}
    {%- set meta_p = meta.get('precision') -%}
    {%- set meta_s = meta.get('scale') -%}
    {%- if p is none and meta_p is not none and modules.re.match('^[0-9]+$', meta_p | string) -%}
        {%- set p = meta_p | int -%}
        {%- set s = (meta_s or 0) | int -%}
    {%- endif -%}
    {%- if base in ['boolean', 'bool'] -%}{{ return('boolean') }}{%- endif -%}
    {%- if base in ['tinyint', 'smallint', 'mediumint', 'int', 'integer', 'int8', 'int16', 'int32', 'int2', 'int4', 'year'] -%}
        {{ return('bigint' if unsigned and base in ['int', 'integer', 'int32', 'int4'] else 'int') }}
    {%- endif -%}
    {%- if base in ['bigint', 'int64', 'long', 'int8 ', 'serial', 'bigserial'] -%}
        {{ return('decimal(20,0)' if unsigned else 'bigint') }}
    {%- endif -%}
    {%- if base in ['decimal', 'numeric', 'number', 'dec', 'fixed', 'money'] -%}
        {%- if p is none or p > 38 or s < 0 or s > p -%}{{ return('string') }}{%- endif -%}
        {{ return('decimal(' ~ p ~ ',' ~ s ~ ')') }}
    {%- endif -%}
    {%- if base in ['float', 'real', 'float32', 'float4'] -%}{{ return('float') }}{%- endif -%}
    {%- if base in ['double', 'double precision', 'float64', 'float8', 'binary_double'] -%}{{ return('double') }}{%- endif -%}
    {%- if base == 'date' -%}{{ return('date') }}{%- endif -%}
    {%- if base in ['datetime', 'timestamp', 'timestamptz', 'timestamp with time zone', 'datetime2', 'smalldatetime',
                    'zoned_datetime', 'timestamp_ltz', 'timestamp with local time zone'] -%}
        {{ return('timestamp') }}
    {%- endif -%}
    {%- if base in ['binary', 'varbinary', 'blob', 'tinyblob', 'mediumblob', 'longblob', 'bytes', 'bytea', 'raw', 'long raw', 'image'] -%}
        {{ return('binary') }}
    {%- endif -%}
    {%- if base == 'bit' and (p or 1) > 1 -%}{{ return('binary') }}{%- endif -%}
    {%- if base == 'bit' -%}{{ return('boolean') }}{%- endif -%}
    {{ return('string') }}
{%- endmacro %}


{% macro _cdc_binary_encoding(source_format, meta) -%}
    {#- How a format writes binary values into JSON text. -#}
    {%- if meta.get('encoding') -%}{{ return(meta.get('encoding')) }}{%- endif -%}
    {#- Debezium's binary.handling.mode: its schema does not say; bytes (base64 in JSON), base64
        and base64-url-safe are all read as base64, hex only when the project's var says so -#}
    {%- if source_format.startswith('debezium') -%}
        {{ return('hex' if meta.get('type') == 'string'
            and var('cdc_debezium_binary_handling_mode', 'base64') == 'hex' else 'base64') }}
    {%- endif -%}
    {%- if source_format in ['canal-json', 'cloudcanal-json', 'maxwell-json'] -%}
        {{ return('iso-8859-1') }}
    {%- endif -%}
    {#- DRS prints Java's byte[]: "[106, 103, -1]" (huawei-drs.txt) -#}
    {%- if source_format in ['drs-json', 'drs-json-c'] -%}{{ return('java-bytes') }}{%- endif -%}
    {#- the OMS Avro parser writes bytes without a text charset in base64 -#}
    {{ return('base64') }}
{%- endmacro %}

{% macro _cdc_let(value, variable, body) -%}
    {#- `body` with the lambda variable `variable` bound to `value`: a long expression used
        several times is written (and evaluated) once. -#}
    element_at(transform(array({{ value }}), {{ variable }} -> {{ body }}), 1)
{%- endmacro %}

{% macro _cdc_times_plus(limbs, factor, addend) -%}
    {#- limbs * factor + addend, on little-endian base-10^9 limbs (array<bigint>) -#}
    aggregate(
        {{ limbs }},
        named_struct('out', cast(array() as array<bigint>), 'carry', cast({{ addend }} as bigint)),
        (_cds, _cdl) -> named_struct(
            'out', concat(_cds.out, array((_cdl * {{ factor }} + _cds.carry) % 1000000000)),
            'carry', (_cdl * {{ factor }} + _cds.carry) div 1000000000
        ),
        _cds -> case when _cds.carry > 0 then concat(_cds.out, array(_cds.carry)) else _cds.out end
    )
{%- endmacro %}

{% macro _cdc_unscaled_text(bytes, scale) -%}
    {#-
        The exact decimal text of a big-endian two's complement integer (`bytes`, a binary SQL
        expression: Kafka Connect Decimal's unscaled value) with `scale` (an int or a SQL
        expression) digits after the point. Any width: the digits are computed on base-10^9
        limbs (a negative value is the inverted bytes plus one), never through decimal(38).
    -#}
    {%- set digits -%}
        {{ _cdc_let(
            "transform(sequence(1, length(_cdb)), _cdi -> "
            ~ "cast(conv(hex(substr(_cdb, _cdi, 1)), 16, 10) as int))",
            '_cdu',
            "named_struct('negative', _cdu[0] >= 128, 'limbs', "
            ~ "aggregate(case when _cdu[0] >= 128 then transform(_cdu, _cdx -> 255 - _cdx) else _cdu end, "
            ~ "array(cast(0 as bigint)), (_cda, _cdx) -> " ~ _cdc_times_plus('_cda', 256, '_cdx') ~ "))"
        ) }}
    {%- endset -%}
    {%- set text -%}
        {{ _cdc_let(
            "case when _cdn.negative then " ~ _cdc_times_plus('_cdn.limbs', 1, 1) ~ " else _cdn.limbs end",
            '_cdm',
            "named_struct('negative', _cdn.negative, 'digits', concat(cast(_cdm[size(_cdm) - 1] as string), "
            ~ "array_join(transform(slice(reverse(_cdm), 2, size(_cdm)), "
            ~ "_cdl -> lpad(cast(_cdl as string), 9, '0')), '')))"
        ) }}
    {%- endset -%}
    {#- the point goes into the digits (padded to scale + 1; lpad alone would cut longer ones) #}
    {%- set pointed -%}
        {{ _cdc_let(
            "lpad(_cdt.digits, greatest(length(_cdt.digits), _cdsc + 1), '0')",
            '_cdp',
            "concat(case when _cdt.negative then '-' else '' end, case "
            ~ "when _cdsc > 0 then concat(substr(_cdp, 1, length(_cdp) - _cdsc), '.', substr(_cdp, -_cdsc)) "
            ~ "when _cdsc < 0 then concat(_cdt.digits, repeat('0', -_cdsc)) "
            ~ "else _cdt.digits end)"
        ) }}
    {%- endset -%}
    {{ _cdc_let("nullif(" ~ bytes ~ ", unhex(''))", '_cdb', _cdc_let(digits, '_cdn', _cdc_let(text, '_cdt', _cdc_let(
        'cast(' ~ scale ~ ' as int)', '_cdsc', pointed
    )))) }}
{%- endmacro %}

{% macro _cdc_record_field(record, path, type) -%}
    {#- One field of a JSON object value, cast to `type` -#}
    cast(get_json_object({{ record }}, '$.{{ path }}') as {{ type }})
{%- endmacro %}

{% macro _cdc_record_timestamp(record) -%}
    {#-
        An OMS Avro date-time record (the Alibaba DTS Avro schema): Timestamp {timestamp: epoch
        seconds, millis: microseconds} is an instant (null when illegal: -9223372022400);
        DateTime {year, month, day, hour, minute, second, millis: microseconds} is a
        wall-clock time without zone.
    -#}
    {%- set f = _cdc_record_field -%}
    coalesce(
        timestamp_micros(try_add(
            try_multiply({{ f(record, 'timestamp', 'bigint') }}, 1000000),
            coalesce({{ f(record, 'millis', 'bigint') }}, 0)
        )),
        make_timestamp(
            {{ f(record, 'year', 'int') }}, {{ f(record, 'month', 'int') }}, {{ f(record, 'day', 'int') }},
            coalesce({{ f(record, 'hour', 'int') }}, 0), coalesce({{ f(record, 'minute', 'int') }}, 0),
            try_cast(concat(
                coalesce({{ f(record, 'second', 'int') }}, 0), '.',
                lpad(coalesce({{ f(record, 'millis', 'int') }}, 0), 6, '0')
            ) as decimal(8, 6))
        )
    )
{%- endmacro %}

{% macro _cdc_clock_text(value, unit) -%}
    {#- A signed integer count of 1/unit seconds -> [-]HH:MM:SS[.f...] (hours past 24 kept: a
        MySQL TIME is a duration up to 838:59:59); the fraction only when not zero. -#}
    {{ _cdc_let('try_cast(' ~ value ~ ' as bigint)', '_cdk',
        "case when _cdk is not null then concat(format_string('%s%02d:%02d:%02d', if(_cdk < 0, '-', ''), "
        ~ "abs(_cdk) div " ~ unit * 3600 ~ ", abs(_cdk) div " ~ unit * 60 ~ " % 60, abs(_cdk) div " ~ unit ~ " % 60), "
        ~ "if(abs(_cdk) % " ~ unit ~ " = 0, '', format_string('.%0" ~ ((unit | string | length) - 1) ~ "d', abs(_cdk) % " ~ unit ~ "))) end"
    ) }}
{%- endmacro %}

{% macro _cdc_duration_text(value, unit) -%}
    {#- A signed integer count of 1/unit seconds -> ISO-8601 [-]PnDTnHnMn[.n]S, as Debezium's own
        interval.handling.mode=string writes a duration (without its years and months). -#}
    {{ _cdc_let('try_cast(' ~ value ~ ' as bigint)', '_cdk',
        "case when _cdk is not null then concat(format_string('%sP%dDT%dH%dM%d', if(_cdk < 0, '-', ''), "
        ~ "abs(_cdk) div " ~ unit * 86400 ~ ", abs(_cdk) div " ~ unit * 3600 ~ " % 24, abs(_cdk) div " ~ unit * 60
        ~ " % 60, abs(_cdk) div " ~ unit ~ " % 60), if(abs(_cdk) % " ~ unit ~ " = 0, '', regexp_replace(format_string('.%0"
        ~ ((unit | string | length) - 1) ~ "d', abs(_cdk) % " ~ unit ~ "), '0+$', '')), 'S') end"
    ) }}
{%- endmacro %}

{% macro cdc_typed_value(value, spark_type, source_format, meta) -%}
    {#- SQL turning the exact text `value` (a SQL expression) into `spark_type`. -#}
    {%- set name = (meta.get('name') or '') | string -%}
    {%- set number = (meta.get('dataTypeNumber') or '') | string -%}
    {%- set is_int = value ~ " rlike '^-?[0-9]+$'" -%}
    {#- a JSON object value (an Avro Timestamp / DateTime record, a Debezium struct), numbers unmarked -#}
    {%- set is_record = "left(" ~ value ~ ", 1) = '{'" -%}
    {%- set record = cdc_unmark_json(value, portable=true) -%}
    {%- if spark_type.startswith('array<') and meta.get('items') is mapping -%}
        {#- a JSON array of marked values: each element decoded as its `items` type says #}
        transform(from_json({{ value }}, 'array<string>'), _cde -> {{ cdc_typed_value(
            cdc_unmark_value('_cde'), spark_type[6:-1], source_format, meta.get('items')) }})
    {%- elif spark_type == 'map<string,string>' -%}
        from_json({{ record }}, 'map<string,string>')
    {%- elif spark_type == 'string' and name in _cdc_debezium_clock_units() -%}
        {{ _cdc_clock_text(value, _cdc_debezium_clock_units()[name]) }}
    {%- elif spark_type == 'string' and name in _cdc_debezium_duration_units() -%}
        {{ _cdc_duration_text(value, _cdc_debezium_duration_units()[name]) }}
    {%- elif spark_type == 'binary' and name == 'io.debezium.data.Bits' -%}
        {#- java.util.BitSet's little-endian bytes, cut after the highest set bit (PostgreSQL):
            reversed and padded to the column's length, as the database shows them #}
        {%- set width = ((((meta.get('parameters') or {}).get('length') or 0) | int) + 7) // 8 * 2 -%}
        {{ _cdc_let(
            "array_join(reverse(regexp_extract_all(hex(try_to_binary(" ~ value ~ ", 'base64')), '(..)', 1)), '')",
            '_cdh', "unhex(lpad(_cdh, greatest(length(_cdh), " ~ width ~ "), '0'))"
        ) }}
    {%- elif spark_type == 'binary' and name.startswith('io.debezium.data.geometry.') -%}
        {#- {"wkb": base64, "srid": n}: the WKB #}
        try_to_binary(get_json_object({{ value }}, '$.wkb'), 'base64')
    {%- elif name == 'org.apache.kafka.connect.data.Decimal' -%}
        {#- Kafka Connect Decimal: base64 of the unscaled value, big-endian two's complement #}
        {%- set scale = ((meta.get('parameters') or {}).get('scale') or 0) | int -%}
        {%- set text = _cdc_unscaled_text('try_to_binary(' ~ value ~ ", 'base64')", scale) -%}
        {#- decimal.handling.mode double / string (Paimon's samples): the value is the number
            itself; base64 never holds '.', '-' or an exponent, and all-digit base64 text of a
            Connect Decimal is taken as the number (a known ambiguity) #}
        case
            when {{ value }} rlike '^-?[0-9]+([.][0-9]*)?([eE][-+]?[0-9]+)?$'
                then {{ value if spark_type == 'string' else 'try_cast(' ~ value ~ ' as ' ~ spark_type ~ ')' }}
            else {{ text if spark_type == 'string' else 'try_cast(' ~ text ~ ' as ' ~ spark_type ~ ')' }}
        end
    {%- elif name == 'io.debezium.data.VariableScaleDecimal' -%}
        {#- {"scale": s, "value": <Connect Decimal bytes>} #}
        {%- set text = _cdc_unscaled_text(
            'try_to_binary(' ~ _cdc_record_field(record, 'value', 'string') ~ ", 'base64')",
            _cdc_record_field(record, 'scale', 'int')
        ) -%}
        {{ text if spark_type == 'string' else 'try_cast(' ~ text ~ ' as ' ~ spark_type ~ ')' }}
    {%- elif spark_type == 'date' -%}
        {%- if name in ['io.debezium.time.Date', 'org.apache.kafka.connect.data.Date'] -%}
            date_add(date '1970-01-01', cast({{ value }} as int))
        {%- else -%}
            case
                when {{ is_record }} then make_date(
                    {{ _cdc_record_field(record, 'year', 'int') }},
                    {{ _cdc_record_field(record, 'month', 'int') }},
                    {{ _cdc_record_field(record, 'day', 'int') }}
                )
                when {{ is_int }} then to_date(timestamp_millis(cast({{ value }} as bigint)))
                else try_cast(substr({{ value }}, 1, 10) as date)
            end
        {%- endif -%}
    {%- elif spark_type == 'timestamp' -%}
        {%- if name == 'io.debezium.time.MicroTimestamp' -%}
            timestamp_micros(cast({{ value }} as bigint))
        {%- elif name == 'io.debezium.time.NanoTimestamp' -%}
            timestamp_micros(cast(cast({{ value }} as decimal(38, 0)) div 1000 as bigint))
        {%- elif name in ['io.debezium.time.Timestamp', 'org.apache.kafka.connect.data.Timestamp'] or source_format == 'dataworks' -%}
            {#- epoch milliseconds; past Spark's range (a corrupt value) null, not a failed query #}
            case
                when {{ is_int }} then timestamp_micros(try_multiply(cast({{ value }} as bigint), 1000))
                else try_cast({{ value }} as timestamp)
            end
        {%- else -%}
            case
                when {{ is_record }} then {{ _cdc_record_timestamp(record) }}
                {#- epoch seconds with an optional fraction; 12 or more integer digits: epoch ms #}
                when {{ value }} rlike '^-?[0-9]+([.][0-9]+)?$' then timestamp_micros(cast(
                    cast({{ value }} as decimal(38, 9))
                    * case when abs(cast({{ value }} as decimal(38, 9))) >= 100000000000 then 1000 else 1000000 end
                    as bigint
                ))
                else try_cast({{ value }} as timestamp)
            end
        {%- endif -%}
    {%- elif spark_type == 'binary' -%}
        {%- set encoding = _cdc_binary_encoding(source_format, meta) -%}
        {%- if encoding == 'hex' -%}
            try_to_binary({{ value }}, 'hex')
        {%- elif encoding == 'base64' -%}
            {#- the URL-safe alphabet's - and _ are + and / (never in standard base64) #}
            try_to_binary({{ "translate(" ~ value ~ ", '-_', '+/')" if source_format.startswith('debezium') else value }}, 'base64')
        {%- elif encoding == 'java-bytes' -%}
            case
                when {{ value }} rlike '^\\[\\s*(-?[0-9]{1,3}(\\s*,\\s*-?[0-9]{1,3})*)?\\s*\\]$'
                    then unhex(array_join(transform(
                        filter(split(regexp_replace({{ value }}, '[\\[\\]\\s]', ''), ','), _cdx -> _cdx <> ''),
                        _cdx -> lpad(hex(pmod(cast(_cdx as int), 256)), 2, '0')
                    ), ''))
                else encode({{ value }}, 'iso-8859-1')
            end
        {%- else -%}
            encode({{ value }}, '{{ encoding }}')
        {%- endif -%}
    {%- elif spark_type == 'boolean' -%}
        case lower({{ value }}) when 'true' then true when '1' then true when 'false' then false when '0' then false end
    {%- elif spark_type == 'string' -%}
        {#- a JSON object or array value (a struct, an array): its numbers unmarked #}
        case when left({{ value }}, 1) in ('{', '[') then {{ record }} else {{ value }} end
    {%- elif number == '13' -%}
        {#- Avro YEAR: a DateTime record with the year only #}
        try_cast(
            case when {{ is_record }} then {{ _cdc_record_field(record, 'year', 'string') }} else {{ value }} end
            as {{ spark_type }}
        )
    {%- else -%}
        {#- numbers: the exact text, scientific notation included (1.25E-10), cast once #}
        try_cast({{ value }} as {{ spark_type }})
    {%- endif -%}
{%- endmacro %}

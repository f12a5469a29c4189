{% macro cdc_keyless_delivery(relation='') -%}
    {#-
        SQL: what identifies one change of a table without a key, so that a change delivered
        twice counts once in its multiset. A connector that restarts replays from its stored
        offset: the change lands again at another Kafka offset with the same source position.
        That position names a single change only in the formats of var
        cdc_keyless_replay_formats (Debezium's lsn, or binlog file, pos and row); elsewhere
        identical rows of one transaction share it, so each delivery counts. Snapshot rows
        (op r) share one position too and count by their own order.
    -#}
    {%- set r = relation ~ '.' if relation else '' -%}
    {%- set formats = var('cdc_keyless_replay_formats') -%}
    case
        when {{ r }}op <> 'r' and {{ r }}vendor_sequence is not null
            {%- if formats %}
            and {{ r }}source_format in ('{{ formats | join("', '") }}')
            {%- else %}
            and false
            {%- endif %}
            then {{ r }}vendor_sequence
        else {{ r }}apply_order
    end
{%- endmacro %}

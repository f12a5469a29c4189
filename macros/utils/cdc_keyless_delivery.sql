{% macro cdc_keyless_delivery() -%}
    {#-
        SQL: what identifies one change of a table without a key, so that the same change
        delivered twice counts once in its multiset (SPEC rule 5). A connector that restarts
        replays from its stored offset: the change lands again at another Kafka offset with the
        same source position. Where the vendor's position names a single change (Debezium's lsn,
        or binlog file, pos and row) identical rows stay apart; where it is coarser (AWS DMS's
        timestamp) identical rows of one transaction cannot be told from a replay and count
        once. Snapshot rows (op r) share one position and count by their own order.
        cdc_matches_latest_change names every change by it, keyed or not: gold may hold either
        delivery of a replayed change.
    -#}
    case when op = 'r' or vendor_sequence is null then apply_order else vendor_sequence end
{%- endmacro %}

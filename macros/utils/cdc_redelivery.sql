{% macro cdc_redelivery(key_order) -%}
    {#-
        SQL, true for a change delivered again: over `key_order` (a window of one key's
        changes in apply order, with op, row, vendor_sequence and apply_order), the change just
        before it has the same vendor position, op and row at another apply order. A connector
        restarted after a crash replays from its stored offset, so the change lands again at a
        later Kafka offset; the vendor's position comes before the offset in the apply order, so
        the copy sorts right after its first delivery, which stays the change (SPEC rule 5).
        Snapshot rows (op r) share one position and are never copies. gold.cdc_history_versions
        drops these copies.
    -#}
    coalesce(
        op <> 'r'
        and lag(vendor_sequence) over {{ key_order }} = vendor_sequence
        and lag(op) over {{ key_order }} = op
        and lag(row) over {{ key_order }} <=> row
        and lag(apply_order) over {{ key_order }} <> apply_order,
        false
    )
{%- endmacro %}

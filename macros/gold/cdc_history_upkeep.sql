{#
    The upkeep of gold.cdc_history's files. Every increment's MERGE adds a file to each
    partition it writes, and the MERGE after it reads every file of the open partitions: a
    loader that builds every minute would pile up small files all day, and every MERGE would
    read more of them (a 4M history's MERGE, warm, took 8.0 s with its open versions in 600
    files against 6.3 s in 16). So every `cdc_history_compact_every` MERGEs (the var, 100 by
    default), the build compacts the table after its MERGE: one OPTIMIZE that packs the small
    files and drops the rows the MERGEs marked deleted.

    The MERGEs are counted in the watermark each one records, not read from the table: a run
    adds itself to the count its last write recorded, from 0 again when an OPTIMIZE came after
    that write (cdc_last_commit passes over it, and says so).

    Not Delta's auto compaction (`delta.autoOptimize.autoCompact`): tried on a 4M lakehouse, it
    compacted the open partitions and silver after every write once it had started (30-75 MB
    rewritten each time), and a following loader's increments went from 15-17 s to 24-26 s.

    Silver's compaction, and what the two share, are in macros/cdc_compaction.sql.
#}

{% macro cdc_history_compaction(recorded) -%}
    {#-
        At an increment of the history that MERGEs: {'writes': the MERGEs since the last
        compaction, this one included, recorded with the watermark; 'compact': whether this run
        compacts after its MERGE}. `recorded`: what the last write recorded with its watermark
        (cdc_watermark), with whether an OPTIMIZE came after it ('compacted').
    -#}
    {%- set every = cdc_compact_every('cdc_history_compact_every') -%}
    {%- set writes = cdc_writes_since_compaction(recorded) + 1 -%}
    {{ return({'writes': writes, 'compact': every > 0 and writes >= every}) }}
{%- endmacro %}

{% macro cdc_compact_history() -%}
    {#-
        Post-hook of gold.cdc_history: the compaction cdc_history_compaction decided, after the
        MERGE. One OPTIMIZE of the table, with the session's settings for it (put back after):
        the files under 16 MB, which each MERGE adds, are packed into files of up to 128 MB
        (cdc_optimize_files), and every file with more than 5% of its rows marked deleted
        (Delta's maxDeletedRowsRatio: the open partitions' files, where each MERGE leaves the
        versions it closed) is written again without them. A first build's files (about 30 MB
        each at 4M changes) are otherwise left as they are. A VACUUM follows with
        cdc_vacuum_after_compaction. Run after cdc_forget_watermark: the commits record nothing
        of their own.
    -#}
    {#- none outside execution, and when the model's compile handed nothing over -#}
    {%- set compaction = cdc_handed('history_compaction') -%}
    {%- if not compaction or not compaction.compact -%}
        {{ return('') }}
    {%- endif -%}
    {{ log('gold.cdc_history: compacting its files after ' ~ compaction.writes ~ ' MERGEs (cdc_history_compact_every)', info=true) }}
    {%- do cdc_optimize_files(this) -%}
    {{ return('') }}
{%- endmacro %}

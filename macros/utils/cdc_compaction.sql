{#
    Compaction of the tables a build writes a little to every time. An increment appends a file
    or a few to silver.cdc_parsed (one per partition it writes) and a few to
    gold.cdc_history_versions: a loader that builds every minute leaves a thousand small files a
    day, and every later read plans over them all and every scan opens them all.

    So each table counts its writes since it was last compacted in the watermark each write
    records (no query), and compacts after so many (a var per table, 100 by default; 0: never).
    The history compacts after its MERGE (macros/gold/cdc_history_upkeep.sql); silver before
    its append (cdc_compact_before_write), so that the compacted files hold only changes the
    models below it have read: their next runs skip those files by their ingest times, where a
    file that also held the new append's changes would be read whole for them.
#}

{% macro cdc_compact_every(name, default=100) -%}
    {#- The var `name` as a number of writes: `default` when the project does not set it, 0
        (never) when it is null, false or "0" (a --vars text may give a string) -#}
    {%- set setting = var(name, default) -%}
    {{ return(0 if setting in (none, false, 'false') else setting | int) }}
{%- endmacro %}

{% macro cdc_writes_since_compaction(recorded) -%}
    {#- The writes since the table was last compacted that its last write recorded with its
        watermark (`recorded`, cdc_watermark's): 0 when an OPTIMIZE came after that write
        ('compacted': cdc_last_commit passed over it), or when it recorded none -#}
    {{ return(0 if recorded.get('compacted') else recorded.get('writes_since_compaction', 0) | int) }}
{%- endmacro %}

{% macro cdc_optimize_files(relation) -%}
    {#- One OPTIMIZE of `relation` with the session's settings for it, put back after: files
        under 16 MB are packed into files of up to 128 MB, so a first build's already large
        files are left as they are.

        Then one VACUUM when the var cdc_vacuum_after_compaction is true (false by default).
        The files the compactions replaced stay on disk for time travel; the VACUUM deletes
        those that Delta's retention has let go (the table's delta.deletedFileRetentionDuration,
        7 days by default). Not by default, because it lists every file of the table even with
        nothing to delete (the log-only `VACUUM ... LITE` fails once the log no longer holds
        every commit since the last VACUUM: Delta drops log entries after 30 days). -#}
    {%- set sizes = {'minFileSize': 16 * 1024 * 1024, 'maxFileSize': 128 * 1024 * 1024} -%}
    {%- for name, size in sizes.items() -%}
        {%- do run_query('set spark.databricks.delta.optimize.' ~ name ~ ' = ' ~ size) -%}
    {%- endfor -%}
    {%- do run_query('optimize ' ~ relation) -%}
    {%- for name in sizes -%}
        {%- do run_query('reset spark.databricks.delta.optimize.' ~ name) -%}
    {%- endfor -%}
    {%- if var('cdc_vacuum_after_compaction', false) in (true, 'true', 1, '1') -%}
        {%- do run_query('vacuum ' ~ relation) -%}
    {%- endif -%}
{%- endmacro %}

{% macro cdc_silver_compaction(recorded) -%}
    {#-
        At an increment of silver.cdc_parsed that appends: {'writes': the appends since the
        table was last compacted, this one included, for the write to record with its
        watermark; 'compact': whether this run compacts the table before its append (the
        pre-hook cdc_compact_before_write); 'before': the appends before this one, for the
        log}. `recorded`: what the last write recorded with its
        watermark (cdc_watermark), with whether an OPTIMIZE came after it ('compacted'). The run
        that would make the count exceed `cdc_silver_compact_every` compacts the appends
        before it, and its own append counts 1.
    -#}
    {%- set every = cdc_compact_every('cdc_silver_compact_every') -%}
    {%- set before = cdc_writes_since_compaction(recorded) -%}
    {%- set compact = every > 0 and before >= every -%}
    {{ return({'writes': 1 if compact else before + 1, 'compact': compact, 'before': before}) }}
{%- endmacro %}

{% macro cdc_compact_before_write(name) -%}
    {#-
        Pre-hook of a model whose compile handed over a compaction under `name`
        (cdc_silver_compaction's): the OPTIMIZE (and VACUUM: cdc_optimize_files), before the
        model's write, whose version the row of meta.cdc_build_progress then describes.
    -#}
    {%- set compaction = cdc_handed(name) -%}
    {%- if not compaction or not compaction.compact -%}
        {{ return('') }}
    {%- endif -%}
    {{ log(this ~ ': compacting its files after ' ~ compaction.before ~ ' appends (cdc_silver_compact_every)', info=true) }}
    {%- do cdc_optimize_files(this) -%}
    {{ return('') }}
{%- endmacro %}

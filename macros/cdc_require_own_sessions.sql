{% macro cdc_require_own_sessions() -%}
    {#-
        on-run-start: stops a build or run of more than one thread on dbt-spark's session
        method unless each thread runs in a Spark session of its own, as `lakehouse build` has
        them (ingestion/lakehouse/dbt_session.py, which says so in LAKEHOUSE_SESSION_PER_THREAD).
        A model records its watermark in a setting of its session, around its own write
        (cdc_record_watermark): two threads in one session would commit each other's, and the
        next increment would read from the wrong place. Through the Thrift server each thread
        has a connection, and with it a session, of its own. Data tests record nothing: `dbt
        test` runs in as many threads as it is given.
    -#}
    {%- if execute and flags.WHICH in ('build', 'run') and target.type == 'spark' and target.threads > 1
        and adapter.config.credentials.method == 'session'
        and env_var('LAKEHOUSE_SESSION_PER_THREAD', '') != '1' -%}
        {{ exceptions.raise_compiler_error(
            "dbt's session method runs every thread in one Spark session, and each model records its "
            ~ "watermark in a setting of its session: " ~ target.threads ~ " threads would commit each "
            ~ "other's. Run `lakehouse build` (each thread in a session of its own; LAKEHOUSE_THREADS "
            ~ "sets how many), or this command with --threads 1."
        ) }}
    {%- endif -%}
{%- endmacro %}

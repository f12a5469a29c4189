{% macro cdc_require_bronze() -%}
    {#-
        on-run-start: stops a run that would read bronze.kafka_records when the lakehouse has no
        such table (nothing landed yet, or LAKEHOUSE_DIR names another lakehouse), with one
        message that says so and what to do, before the first node. Without it each node that
        reads the table failed on its own: a `lakehouse build` of an empty lakehouse printed six
        errors of some thirty lines, a plan each, and skipped the 51 nodes after them. A run
        whose selection reads nothing of bronze (`dbt seed`, `--select cdc_op_codes`) goes on.
        Asked of dbt's cache of the schemas it lists at a run's start: no query.
    -#}
    {%- if execute and flags.WHICH in ('build', 'run', 'test') -%}
        {%- set bronze = graph.sources.values() | selectattr('source_name', 'equalto', 'bronze')
            | selectattr('name', 'equalto', 'kafka_records') | first -%}
        {%- set models, tests = [], [] -%}
        {%- for unique_id in selected_resources -%}
            {%- set node = graph.nodes.get(unique_id) -%}
            {#- a source is never among them: `--select source:bronze.kafka_records` selects its
                data tests, which read it -#}
            {%- if node and bronze.unique_id in node.depends_on.nodes -%}
                {%- do (models if node.resource_type == 'model' else tests).append(node.name) -%}
            {%- endif -%}
        {%- endfor -%}
        {%- if (models or tests) and adapter.get_relation(bronze.database, bronze.schema, bronze.identifier) is none -%}
            {%- set readers = (models | sort) + ([tests | length ~ ' data test' ~ ('s' if tests | length > 1 else '')] if tests else []) -%}
            {{ exceptions.raise_compiler_error(
                bronze.schema ~ "." ~ bronze.identifier ~ " is not in this lakehouse (LAKEHOUSE_DIR="
                ~ env_var('LAKEHOUSE_DIR', 'lakehouse') ~ "), which the run would read (" ~ readers | join(', ')
                ~ "): nothing has been landed in it yet. Land records first, with `lakehouse ingest --from-file DUMP` "
                ~ "or `lakehouse ingest --bootstrap-servers HOST:PORT --topics T1,T2`, or point LAKEHOUSE_DIR at "
                ~ "the lakehouse that holds them."
            ) }}
        {%- endif -%}
    {%- endif -%}
{%- endmacro %}

{% macro cdc_code_digest() -%}
    {#-
        A digest of the code that decides what this model writes: its own SQL and every macro of
        this project. Recorded beside what a model wrote, it tells a later run whether that
        write ran the same code (after an upgrade it did not): gold.cdc_typed_columns' key
        (cdc_typed_specs_key), and silver.cdc_parsed's columns in a run with nothing new. None
        when a macro does not show its source (another dbt): then nothing is assumed.
    -#}
    {%- set project = cdc_project_code_digest() -%}
    {{ return(local_md5(project ~ '\n' ~ model.raw_code) if project is not none else none) }}
{%- endmacro %}

{% macro cdc_project_code_digest() -%}
    {#- A digest of the code of every macro of this project (dbt's namespace of the package,
        each macro's source); none when a macro does not show its source. -#}
    {%- set sources = [] -%}
    {%- for name in cdc_lakehouse | sort -%}
        {%- set source = cdc_lakehouse[name].macro.macro_sql if cdc_lakehouse[name].macro is defined else none -%}
        {%- if source is not string -%}
            {{ return(none) }}
        {%- endif -%}
        {%- do sources.append(name ~ '\n' ~ source) -%}
    {%- endfor -%}
    {{ return(local_md5(sources | join('\n'))) }}
{%- endmacro %}

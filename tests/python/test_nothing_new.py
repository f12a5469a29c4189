"""A build that finds nothing new, as a scheduled build on a quiet lakehouse does. Silver's parse,
the history and the table columns each record, with their watermark, the newest commit of the
table they read (macros/cdc_watermark.sql, cdc_last_commit). While that commit is still the
newest, the next run knows there is nothing new without a query, and writes nothing
(cdc_nothing_to_write). Any other commit to the table read takes the full path: for bronze, the
parse reads what the commits since landed from their metadata in bronze's log (a property set
lands nothing, a loader's batch names its topics: cdc_landed_batches), still without a query
over the records; the gold tables find out by their queries."""

from __future__ import annotations

from pathlib import Path

from cdc_messages import DebeziumTable
from conftest import copy_project

WRITTEN = ("silver.cdc_parsed", "gold.cdc_history_versions", "gold.cdc_table_columns", "gold.cdc_current_state")
# what the full path runs and the short one does not: the history's count of silver's new
# changes, and silver's routing query over bronze's new records when bronze's log cannot tell
ROUTING_QUERY = "count(*) as records, max(ingested_at) as up_to"
COUNT_QUERY = "count_if(op = 't') as truncations"
# the typed columns' spec query: the model reads the specs, and its post-hook, which creates the
# typed views, takes them from the model (macros/utils/cdc_hand_over.sql) instead of asking again; a
# build whose table columns, overrides seed and code are those the views were created from does
# not read them at all (macros/gold/cdc_typed_specs_key.sql)
SPEC_QUERY = "from gold.cdc_table_columns as c left join cdc_config.cdc_column_type_overrides as o"
SPECS_SKIPPED = "-- unchanged: its inputs are those of cdc.typed_specs in gold"
# the parse's post-hook's look for placeholders: a first build records silver's commit after it
# too, so the build with nothing new after it does not look
LOOK = "cast(min(ingested_at) as string) as first_ingested"
# with nothing to write, the temporary view dbt creates for the write is of the table's own
# columns, not of the model's query (the parse's: once its last write ran the same code)
SHORT_VIEWS = tuple(f"{table.split('.')[1]}__dbt_tmp as select * from {table} where false" for table in WRITTEN)


def _upgraded(destination: Path, path: str, old: str, new: str) -> Path:
    """A copy of the project whose file ``path`` has its first ``old`` replaced by ``new``: the
    project as an upgrade changed it."""
    project = copy_project(destination)
    file = project / path
    code = file.read_text(encoding="utf-8")
    assert old in code, path
    file.write_text(code.replace(old, new, 1), encoding="utf-8")
    return project


def _newest_versions(lakehouse) -> dict[str, int]:
    return {t: lakehouse.rows(f"describe history {t} limit 1")[0]["version"] for t in WRITTEN}


def test_a_build_with_nothing_new_reads_no_record_and_writes_nothing(lakehouse, tmp_path):
    t = DebeziumTable("dbserver1", "inventory", "quiet", ["id"])
    rows = [{"id": i, "v": "a"} for i in (1, 2, 3)]
    lakehouse.ingest(t.envelopes([t.insert(r) for r in rows], first_offset=0), fmt="debezium-json")
    lakehouse.build(tests=False)
    built = _newest_versions(lakehouse)
    state = lakehouse.current_state("quiet")
    assert len(state) == 3

    # nothing landed: no query over bronze's records or silver's changes, no write, no commit
    log = lakehouse.logged_build(tmp_path / "quiet")
    assert ROUTING_QUERY not in log and COUNT_QUERY not in log
    for table in WRITTEN:
        assert f"select 'nothing new for {table}' as skipped_write" in log, table
    assert "insert into table silver.cdc_parsed" not in log and "merge into gold." not in log
    assert SPEC_QUERY not in log and SPECS_SKIPPED in log and LOOK not in log
    assert all(view in log for view in SHORT_VIEWS)
    assert _newest_versions(lakehouse) == built
    assert lakehouse.current_state("quiet") == state

    # a commit to bronze that lands no record: bronze's log says so (no routing query), and
    # still nothing is written
    lakehouse.spark.sql("alter table bronze.kafka_records set tblproperties ('cdc_lakehouse.test' = 'yes')")
    log = lakehouse.logged_build(tmp_path / "altered")
    # one read of bronze's log: its newest commit with the ones before it, which reach back to
    # the commit the last run recorded
    assert log.count("call cdc_lakehouse.delta.commits('bronze.kafka_records', ") == 1, log
    assert "call cdc_lakehouse.delta.commits('bronze.kafka_records', 8)" in log
    assert ROUTING_QUERY not in log
    assert "select 'nothing new for silver.cdc_parsed' as skipped_write" in log
    assert _newest_versions(lakehouse) == built

    # a record landed after it is read, parsed, and reaches the history and the table columns;
    # the loader's commit named its topic and format, so the parse routes it without a query
    lakehouse.ingest(t.envelopes([t.update(rows[0], {"id": 1, "v": "b", "w": 7})], first_offset=3),
                     fmt="debezium-json")
    log = lakehouse.logged_build(tmp_path / "landed")
    assert ROUTING_QUERY not in log and COUNT_QUERY in log
    assert "insert into table silver.cdc_parsed" in log
    assert log.count(SPEC_QUERY) == 1 and SPECS_SKIPPED not in log
    assert not any(view in log for view in SHORT_VIEWS)
    after = _newest_versions(lakehouse)
    assert all(after[table] > built[table] for table in WRITTEN), (built, after)
    assert lakehouse.current_state("quiet")[("quiet", '{"id":1}')] == {"id": "1", "v": "b", "w": "7"}
    columns = lakehouse.rows("select column_name from gold.cdc_table_columns where source_table = 'quiet'")
    assert sorted(r["column_name"] for r in columns) == ["id", "v", "w"]

    # and the build after that has nothing new again
    log = lakehouse.logged_build(tmp_path / "quiet-again")
    assert ROUTING_QUERY not in log and COUNT_QUERY not in log
    assert SPEC_QUERY not in log and SPECS_SKIPPED in log
    assert all(view in log for view in SHORT_VIEWS)
    assert _newest_versions(lakehouse) == after

    # an upgrade whose parse writes one more column: a build with nothing new still runs the
    # whole parse for the temporary view (the code differs from the last write's), so the column
    # reaches silver before any new record does
    project = _upgraded(tmp_path / "project", "models/silver/cdc_parsed.sql",
                        "select * from final\n", "select *, 1 as added_by_an_upgrade from final\n")
    log = lakehouse.logged_build(tmp_path / "upgraded", project=project)
    assert SHORT_VIEWS[0] not in log and "select 'nothing new for silver.cdc_parsed' as skipped_write" in log
    assert "added_by_an_upgrade" in lakehouse.spark.table("silver.cdc_parsed").columns
    assert _newest_versions(lakehouse)["silver.cdc_parsed"] > after["silver.cdc_parsed"]


def _column_type(lakehouse, view: str, column: str) -> str:
    return {r["col_name"]: r["data_type"] for r in lakehouse.rows(f"describe gold.{view}")}[column]


def test_the_typed_views_are_decided_again_when_the_code_or_an_override_changes(lakehouse, tmp_path):
    t = DebeziumTable("dbserver1", "inventory", "decided", ["id"])
    lakehouse.ingest(t.envelopes([t.insert({"id": i, "n": i * 10}) for i in (1, 2)], first_offset=0),
                     fmt="debezium-json")
    lakehouse.build(tests=False)
    assert SPECS_SKIPPED in lakehouse.logged_build(tmp_path / "quiet")
    shipped_type = _column_type(lakehouse, "inventory__decided", "n")
    assert shipped_type != "int"

    # an upgrade (any macro of the project changed): the specs are read and the views decided
    # again, once; the build after that leaves them
    project = _upgraded(tmp_path / "project", "macros/gold/cdc_create_typed_views.sql",
                        "{%- set specs = [] -%}", "{%- set specs = [] -%}{#- upgraded -#}")
    log = lakehouse.logged_build(tmp_path / "upgraded", project=project)
    assert log.count(SPEC_QUERY) == 1 and SPECS_SKIPPED not in log
    assert SPECS_SKIPPED in lakehouse.logged_build(tmp_path / "upgraded-quiet", project=project)

    # a user's override row for the column: once the seed holds it, the view is typed by it
    overrides = project / "seeds" / "cdc_column_type_overrides.csv"
    overrides.write_text(overrides.read_text(encoding="utf-8").rstrip("\n") + "\ninventory,decided,n,int\n",
                         encoding="utf-8")
    try:
        lakehouse.dbt("seed", "--select", "cdc_column_type_overrides", project=project)
        log = lakehouse.logged_build(tmp_path / "overridden", project=project)
        assert log.count(SPEC_QUERY) == 1 and SPECS_SKIPPED not in log
        assert _column_type(lakehouse, "inventory__decided", "n") == "int"
    finally:
        lakehouse.dbt("seed", "--select", "cdc_column_type_overrides")  # the shipped rows again

    # the shipped project again (its code and its seed): decided again, as shipped
    log = lakehouse.logged_build(tmp_path / "shipped")
    assert log.count(SPEC_QUERY) == 1 and SPECS_SKIPPED not in log
    assert _column_type(lakehouse, "inventory__decided", "n") == shipped_type

"""``call cdc_lakehouse.delta.commits(table, n)``, the project's procedure that reads a Delta
table's newest commits on the driver (jvm/functions DeltaCommits.java), gives the rows of
``describe history <table> limit <n>`` value for value.

The models decide what is new from these rows (macros/cdc_watermark.sql), so every column must
be Delta's: the commits' times (the files' modification times made to increase, or in-commit
timestamps), their user metadata, operations and parameters. Each case compares the two
answers on a real Delta table.
"""

from __future__ import annotations

import pytest


def _statement_rows(spark, table: str, limit: int) -> list:
    return spark.sql(f"describe history {table} limit {limit}").collect()


def _procedure(spark, table: str, limit: int):
    return spark.sql(f"call cdc_lakehouse.delta.commits('{table}', {limit})")


def _commit_kinds(spark, table: str, properties: str = "") -> None:
    """A table with a commit of each kind the models read: create, append with user metadata,
    property set, MERGE, delete, append, OPTIMIZE."""
    spark.sql(f"drop table if exists {table}")
    spark.sql(f"create table {table} (k int, v string) using delta partitioned by (k) {properties}")
    spark.conf.set("spark.databricks.delta.commitInfo.userMetadata", '{"cdc_lakehouse_batch": {"n": 1}}')
    try:
        spark.sql(f"insert into {table} values (1, 'a'), (2, 'b')")
    finally:
        spark.conf.unset("spark.databricks.delta.commitInfo.userMetadata")
    spark.sql(f"alter table {table} set tblproperties ('cdc_lakehouse.x' = '2026-12-06 00:00:00')")
    spark.sql(f"merge into {table} t using (select 2 as k, 'c' as v union all select 3, 'd') s on t.k = s.k "
              "when matched then update set * when not matched then insert *")
    spark.sql(f"delete from {table} where k = 1")
    spark.sql(f"insert into {table} values (3, 'e')")  # a second file in k=3, which OPTIMIZE joins
    spark.sql(f"optimize {table}")


@pytest.fixture(scope="module")
def spark(_shared_lakehouse):
    session = _shared_lakehouse.spark
    session.sql("create database if not exists history_test")
    _commit_kinds(session, "history_test.plain")
    # in-commit timestamps from the first commit on, and from a later one (Delta then takes the
    # times of the commits before it from their files)
    _commit_kinds(session, "history_test.own_times", "tblproperties ('delta.enableInCommitTimestamps' = 'true')")
    _commit_kinds(session, "history_test.own_times_later")
    session.sql(
        "alter table history_test.own_times_later set tblproperties ('delta.enableInCommitTimestamps' = 'true')")
    session.sql("insert into history_test.own_times_later values (4, 'e')")
    yield session
    session.sql("drop database if exists history_test cascade")


@pytest.mark.parametrize("table", ["history_test.plain", "history_test.own_times", "history_test.own_times_later"])
@pytest.mark.parametrize("limit", [1, 3, 100])
def test_the_rows_are_the_statements_own(spark, table, limit):
    answered = _procedure(spark, table, limit)
    expected = _statement_rows(spark, table, limit)
    assert answered.collect() == expected
    assert answered.schema == spark.sql(f"describe history {table} limit 1").schema
    # the kinds the models tell apart, newest first
    if limit == 100 and table == "history_test.plain":
        assert [row["operation"] for row in expected] == [
            "OPTIMIZE", "WRITE", "DELETE", "MERGE", "SET TBLPROPERTIES", "WRITE", "CREATE TABLE"]
        assert expected[5]["userMetadata"] == '{"cdc_lakehouse_batch": {"n": 1}}'


def test_quoted_names_and_long_metadata_are_read_too(spark):
    assert _procedure(spark, "`history_test`.`plain`", 2).collect() == _statement_rows(spark, "history_test.plain", 2)
    table = "history_test.long_metadata"
    spark.sql(f"drop table if exists {table}")
    spark.sql(f"create table {table} (k int) using delta")
    spark.conf.set("spark.databricks.delta.commitInfo.userMetadata", "\U0001f600" * 3000 + " end")
    try:
        spark.sql(f"insert into {table} values (1)")
    finally:
        spark.conf.unset("spark.databricks.delta.commitInfo.userMetadata")
    [newest] = _procedure(spark, table, 1).collect()
    assert newest["userMetadata"] == "\U0001f600" * 3000 + " end"


@pytest.mark.parametrize(("call", "says"), [
    ("call cdc_lakehouse.delta.commits('history_test.a_view', 1)", "not a Delta table"),
    ("call cdc_lakehouse.delta.commits('history_test.no_such_table', 1)", "(?i)not found|cannot be found"),
    ("call cdc_lakehouse.delta.commits('history_test.plain', 0)", "limit must be 1 or more"),
    ("call cdc_lakehouse.delta.commits('history_test.plain')", "(?i)commits|argument|parameter"),
])  # fmt: skip
def test_a_call_it_cannot_answer_says_why(spark, call, says):
    spark.sql("create or replace view history_test.a_view as select 1 as x")
    with pytest.raises(Exception, match=says):
        spark.sql(call).collect()


def test_the_models_read_commits_through_it_and_through_delta_without_the_jvm_functions(lakehouse, tmp_path):
    """A build's compile-time reads of the newest commits are the procedure's calls in the SQL
    dbt sends, and Delta's statement when the project's jar is not to be used."""
    from cdc_messages import DebeziumTable

    t = DebeziumTable("dbserver1", "inventory", "commits", ["id"])
    lakehouse.ingest(t.envelopes([t.insert({"id": 1})], first_offset=0), fmt="debezium-json")
    log = lakehouse.logged_build(tmp_path / "with")
    assert "call cdc_lakehouse.delta.commits('bronze.kafka_records', " in log
    assert "describe history" not in log
    lakehouse.ingest(t.envelopes([t.insert({"id": 2})], first_offset=1), fmt="debezium-json")
    log = lakehouse.logged_build(tmp_path / "without", "--vars", "{cdc_jvm_functions: false}")
    assert "describe history silver.cdc_parsed limit 1" in log and "cdc_lakehouse.delta.commits" not in log
    assert set(lakehouse.current_state("commits")) == {("commits", '{"id":1}'), ("commits", '{"id":2}')}

"""``describe history <table> limit <n>`` read on the driver (lakehouse.delta_history) gives
Delta's own rows, and dbt's statements in ``lakehouse build`` take that path.

The models decide what is new from these rows (macros/cdc_watermark.sql), so every column must
be Delta's, value for value: the commits' times (the files' modification times made to
increase, or in-commit timestamps), their user metadata, operations and parameters. Each case
compares the two answers on a real Delta table.
"""

from __future__ import annotations

import pytest
from lakehouse import delta_history

#: dbt's query comment, which comes before every statement it sends
COMMENT = '/* {"app": "dbt", "dbt_version": "1.11", "connection_name": "model.cdc_lakehouse.x"} */\n'


def _statement_rows(spark, table: str, limit: int | None) -> list:
    return spark.sql(f"describe history {table}" + (f" limit {limit}" if limit else "")).collect()


def _commit_kinds(spark, table: str, properties: str = "") -> None:
    """A table with a commit of each kind the models read: create, append with user metadata,
    property set, MERGE, delete, append, OPTIMIZE."""
    spark.sql(f"drop table if exists {table}")
    spark.sql(f"create table {table} (k int, v string) using delta partitioned by (k) {properties}")
    spark.conf.set("spark.databricks.delta.commitInfo.userMetadata", '{"cdc_lakehouse_watermark": {"n": 1}}')
    try:
        spark.sql(f"insert into {table} values (1, 'a'), (2, 'b')")
    finally:
        spark.conf.unset("spark.databricks.delta.commitInfo.userMetadata")
    spark.sql(f"alter table {table} set tblproperties ('cdc_lakehouse.watermark' = '2026-12-06 00:00:00')")
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
@pytest.mark.parametrize("limit", [1, 2, 3, 8, 100])
def test_the_rows_are_the_statements_own(spark, table, limit):
    answered = delta_history.answer(spark, COMMENT + f"describe history {table} limit {limit}")
    assert answered is not None
    expected = _statement_rows(spark, table, limit)
    assert answered.collect() == expected
    assert answered.schema == spark.sql(f"describe history {table} limit 1").schema
    assert answered.take(1) == expected[:1]
    # the kinds the models tell apart, newest first
    if limit == 100 and table == "history_test.plain":
        assert [row["operation"] for row in expected] == [
            "OPTIMIZE", "WRITE", "DELETE", "MERGE", "SET TBLPROPERTIES", "WRITE", "CREATE TABLE"]
        assert expected[5]["userMetadata"] == '{"cdc_lakehouse_watermark": {"n": 1}}'


def test_quoted_names_and_any_case_are_read_too(spark):
    expected = _statement_rows(spark, "history_test.plain", 2)
    for sql in ("DESCRIBE HISTORY `history_test`.`plain` LIMIT 2", "describe  history\nhistory_test . plain limit 2;"):
        answered = delta_history.answer(spark, sql)
        assert answered is not None, sql
        assert answered.collect() == expected


@pytest.mark.parametrize("sql", [
    "describe history history_test.plain",  # every commit: left to Delta
    "describe history plain limit 1",  # no database named
    "describe history delta.`/tmp/x` limit 1",  # a path
    "describe history history_test.plain limit 0",
    "select * from history_test.plain limit 1",
    "describe history history_test.no_such_table limit 1",  # the statement says why
    "describe history history_test.a_view limit 1",  # not a Delta table
])
def test_any_other_statement_is_left_to_spark(spark, sql):
    spark.sql("create or replace view history_test.a_view as select 1 as x")
    assert delta_history.answer(spark, sql) is None


def test_rows_falls_back_to_the_statement(spark):
    assert delta_history.rows(spark, "history_test.plain", 3) == _statement_rows(spark, "history_test.plain", 3)
    with pytest.raises(Exception, match="(?i)not a delta table|DELTA_ONLY_OPERATION|view"):
        delta_history.rows(spark, "history_test.a_view", 1)


def test_dbt_statements_in_lakehouse_build_take_it(spark):
    """The cursor dbt-spark reads its statements' rows from, as ``lakehouse build`` sets it up."""
    from dbt.adapters.spark.session import Cursor
    from lakehouse.dbt_session import reuse_running_session

    reuse_running_session()
    cursor = Cursor()
    cursor.execute(COMMENT + "describe history history_test.plain limit 3")
    assert isinstance(cursor._df, delta_history.HistoryRows)  # noqa: SLF001 - the path taken
    assert [d[0] for d in cursor.description][:5] == ["version", "timestamp", "userId", "userName", "operation"]
    assert cursor.fetchall() == _statement_rows(spark, "history_test.plain", 3)
    cursor = Cursor()  # as dbt takes one per statement
    cursor.execute("describe history history_test.plain")
    assert not isinstance(cursor._df, delta_history.HistoryRows)  # noqa: SLF001
    assert len(cursor.fetchall()) == 7


def test_text_beyond_one_piece_comes_back_whole(spark):
    """The answer crosses py4j in pieces (DeltaCommits.PIECE characters): a character outside
    the BMP (two Java chars) at a cut must not be split, whichever side of it the cut falls."""
    table = "history_test.long_metadata"
    spark.sql(f"drop table if exists {table}")
    spark.sql(f"create table {table} (k int) using delta")
    for prefix in ("", "a"):  # one commit's emoji pairs start on an even char, the other's on an odd one
        spark.conf.set("spark.databricks.delta.commitInfo.userMetadata", prefix + "\U0001f600" * 3000 + " end")
        try:
            spark.sql(f"insert into {table} values (1)")
        finally:
            spark.conf.unset("spark.databricks.delta.commitInfo.userMetadata")
    for limit in (1, 2):
        answered = delta_history.answer(spark, f"describe history {table} limit {limit}")
        assert answered is not None
        assert answered.collect() == _statement_rows(spark, table, limit)
    assert answered.collect()[1]["userMetadata"] == "\U0001f600" * 3000 + " end"

"""gold.cdc_history across increments: in order (an append of the new versions and of closers,
nothing stored read), with nothing new (no write), the closers settled, and with a late change
(every stored version of its key, MERGEd), checked version by version. And the watermarks the
incremental models leave in their Delta commits for the next run to read."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from cdc_messages import DebeziumTable
from conftest import DBT_TARGET, PROJECT

RUN_SQL = DBT_TARGET / "run" / "cdc_lakehouse" / "models" / "gold" / "cdc_history_versions.sql"
COMPILED = DBT_TARGET / "compiled" / "cdc_lakehouse" / "models" / "gold"


def _versions(lakehouse, table: str) -> dict[str, list[tuple]]:
    """{pk: [(op, has row, is_open, is_current, next version follows), ...]} in apply order."""
    rows = lakehouse.rows(
        "select pk, op, row is not null as has_row, is_open, is_current, next_apply_order is not null as closed "
        f"from gold.cdc_history where source_table = '{table}' order by pk, apply_order"
    )
    out: dict[str, list[tuple]] = {}
    for r in rows:
        out.setdefault(r["pk"], []).append((r["op"], r["has_row"], r["is_open"], r["is_current"], r["closed"]))
    return out


def _compiled_history() -> str:
    """The stored versions' query as the last build compiled it."""
    return (COMPILED / "cdc_history_versions.sql").read_text()


def _merge_statement() -> str:
    text = RUN_SQL.read_text()
    return text[text.index("merge into"):]


def _build_and_test_the_history(lakehouse) -> None:
    """The models, then the data tests of what an increment of the history writes or reads.

    The history's consistency, the current state against the latest change, the key state's
    and the changes' own tests (the strict apply order): 20 of the project's 57 data tests.
    The seeds', bronze's and the other silver tables' tests check nothing an increment of the
    history changes, and running all 57 would make each such build much longer; the final builds of
    the format tests (test_formats_*.py), the generated history and the CLI's end-to-end test
    run all of them.
    """
    lakehouse.build(tests=False)
    lakehouse.dbt("test", "--select", "cdc_history", "cdc_history_versions", "cdc_current_state", "cdc_key_state",
                  "cdc_changes")
    assert _current_state_by_delta_rs(lakehouse) == _current_state_by_spark(lakehouse)


#: The columns of gold.cdc_current_state compared between delta-rs and Spark.
STATE_COLUMNS = ["source_database", "source_schema", "source_table", "pk", "row", "last_op", "apply_order",
                 "copy_number"]


def _current_state_by_delta_rs(lakehouse) -> list[tuple]:
    """gold.cdc_current_state as delta-rs' Arrow reader reads it from storage, sorted: the
    reader without a query engine, which refuses a table with deletion vectors."""
    from deltalake import DeltaTable

    location = lakehouse.rows("describe detail gold.cdc_current_state")[0]["location"].removeprefix("file:")
    read = DeltaTable(location).to_pyarrow_table(columns=STATE_COLUMNS)
    return sorted(zip(*(read.column(c).to_pylist() for c in STATE_COLUMNS), strict=True))


def _current_state_by_spark(lakehouse) -> list[tuple]:
    return sorted(tuple(r[c] for c in STATE_COLUMNS)
                  for r in lakehouse.rows(f"select {', '.join(STATE_COLUMNS)} from gold.cdc_current_state"))


def _closers(lakehouse, table: str) -> list[tuple]:
    """(pk, next_apply_order is set, valid_to is set) of the closers stored for ``table``."""
    return [(r["pk"], r["ordered"], r["timed"]) for r in lakehouse.rows(
        "select pk, next_apply_order is not null as ordered, valid_to is not null as timed "
        f"from gold.cdc_history_versions where is_closer and source_table = '{table}' order by pk")]


def _read_by_delta_rs(lakehouse, table: str, columns: list[str], where: str) -> list[tuple]:
    """Rows of the Delta table ``table`` as delta-rs (``deltalake``, an engine other than Spark)
    reads them from storage, sorted."""
    from deltalake import DeltaTable, QueryBuilder

    location = lakehouse.rows(f"describe detail {table}")[0]["location"].removeprefix("file:")
    read = QueryBuilder().register("t", DeltaTable(location)).execute(
        f"select {', '.join(columns)} from t where {where}").read_all()
    return sorted(zip(*(read.column(c).to_pylist() for c in columns), strict=True))


def test_in_order_increment_appends_its_versions_and_a_closer_per_key(lakehouse):
    t = DebeziumTable("dbserver1", "inventory", "hist", ["id"])
    one, two, three = {"id": 1, "v": "a"}, {"id": 2, "v": "a"}, {"id": 3, "v": "a"}
    first = [t.insert(one), t.insert(two), t.insert(three), t.update(one, {**one, "v": "b"}),
             *t.delete(two, tombstone=False)]
    lakehouse.ingest(t.envelopes(first, first_offset=0), fmt="debezium-json")
    lakehouse.build(tests=False)

    # in order: key 1 updated twice more, deleted key 2 inserted again (its open version is
    # the delete, not current), key 3 changed to key 4
    second = [t.update({**one, "v": "b"}, {**one, "v": "c"}), t.insert({**two, "v": "again"}),
              t.update(three, {"id": 4, "v": "a"}), t.update({**one, "v": "c"}, {**one, "v": "d"})]
    lakehouse.ingest(t.envelopes(second, first_offset=len(first)), fmt="debezium-json")
    _build_and_test_the_history(lakehouse)
    # an append: nothing stored is read or rewritten; the new versions are windowed among
    # themselves, and each key they touch gets a closer, its first new change
    run = RUN_SQL.read_text()
    assert "insert into table gold.cdc_history_versions" in run and "merge into" not in run
    assert "gold.cdc_history_versions" not in _compiled_history()
    assert _closers(lakehouse, "hist") == [(f'{{"id":{i}}}', True, True) for i in range(1, 5)]
    # the versions open before it are stored as they were (open, no end): the view ends them
    stored = lakehouse.rows("select get_json_object(row, '$.v') as v, op, valid_to from gold.cdc_history_versions "
                            "where source_table = 'hist' and is_open and not is_closer and apply_order < "
                            "(select min(next_apply_order) from gold.cdc_history_versions where is_closer "
                            "and source_table = 'hist') order by pk")
    assert [(r["v"], r["op"], r["valid_to"]) for r in stored] == [("b", "u", None), (None, "d", None), ("a", "c", None)]
    # no run has consumed a truncate: silver is not scanned for earlier ones
    assert re.search(r"earlier_truncations as \(.*?where op = 't'\s+and false", _compiled_history(), re.S)
    expected = {
        '{"id":1}': [("c", True, False, False, True), ("u", True, False, False, True),
                     ("u", True, False, False, True), ("u", True, True, True, False)],
        '{"id":2}': [("c", True, False, False, True), ("d", False, False, False, True),
                     ("c", True, True, True, False)],
        '{"id":3}': [("c", True, False, False, True), ("d", False, True, False, False)],
        '{"id":4}': [("u", True, True, True, False)],
    }
    assert _versions(lakehouse, "hist") == expected
    # each version ends where its key's next one begins: the stored open version at the key's
    # first new change, the new ones among themselves
    chain = lakehouse.rows("select get_json_object(row, '$.v') as v, valid_from, valid_to from gold.cdc_history "
                           "where source_table = 'hist' and pk = '{\"id\":1}' order by apply_order")
    assert [r["v"] for r in chain] == ["a", "b", "c", "d"]
    assert [r["valid_to"] for r in chain] == [r["valid_from"] for r in chain[1:]] + [None]

    # the key state is each key's open version: deleted and moved keys keep a tombstone
    states = lakehouse.rows("select pk, last_op, is_deleted, row is null as no_row from gold.cdc_key_state "
                            "where source_table = 'hist' order by pk")
    assert [(r["pk"], r["last_op"], r["is_deleted"], r["no_row"]) for r in states] == [
        ('{"id":1}', "u", False, False), ('{"id":2}', "c", False, False),
        ('{"id":3}', "d", True, True), ('{"id":4}', "u", False, False),
    ]

    # nothing new: the history's source is empty, nothing is written, and nothing moves
    lakehouse.build(tests=False)
    compiled = _compiled_history()
    assert "/* cdc_nothing_to_write */" in compiled and "new_changes" not in compiled
    assert "merge into" not in RUN_SQL.read_text() and "insert into" not in RUN_SQL.read_text()
    assert _versions(lakehouse, "hist") == expected
    assert len(lakehouse.rows("select * from gold.cdc_key_state where source_table = 'hist'")) == 4


SETTLE_EVERY_TWO = json.dumps({"cdc_history_settle_every": 2})
HASH_JOIN_KEYS = ("spark.sql.join.preferSortMergeJoin", "spark.sql.adaptive.maxShuffledHashJoinLocalMapThreshold")


def test_closers_are_settled_every_so_many_appends_by_hash_join_and_the_history_reads_the_same(lakehouse, tmp_path):
    """Every cdc_history_settle_every appends (2 here) a build settles the closers before its
    own append: one MERGE writes each closer's end into the version it ends, and deletes the
    closers. gold.cdc_history reads the same before and after. Delta's MERGE joins its source
    with every row of the open partition: the session hashes that join, not sorts it
    (macros/utils/cdc_merge_joins.sql), for that build only, and holds what it held before after
    it; a build that only appends, or has nothing new, sends neither."""
    before = {key: lakehouse.spark.conf.get(key) for key in HASH_JOIN_KEYS}
    t = DebeziumTable("dbserver1", "inventory", "hist_settle", ["id"])
    rows = {i: {"id": i, "v": "a"} for i in range(1, 4)}
    sent = [t.insert(r) for r in rows.values()]
    lakehouse.ingest(t.envelopes(sent, first_offset=0), fmt="debezium-json")
    lakehouse.build(tests=False)

    def land(ids: list[int], value: str) -> None:
        batch = [t.update(rows[i], {**rows[i], "v": value}) for i in ids]
        rows.update({i: {**rows[i], "v": value} for i in ids})
        lakehouse.ingest(t.envelopes(batch, first_offset=len(sent)), fmt="debezium-json")
        sent.extend(batch)

    def history(pks: tuple[int, ...] = (1, 2, 3)) -> list[dict]:
        keys = ", ".join(f"'{{\"id\":{i}}}'" for i in pks)
        return lakehouse.rows(
            "select version_id, pk, get_json_object(row, '$.v') as v, valid_from, valid_to, apply_order, "
            f"next_apply_order, is_open, is_current from gold.cdc_history where source_table = 'hist_settle' "
            f"and pk in ({keys}) order by pk, apply_order")

    def unsettled() -> int:
        return lakehouse.progress("gold.cdc_history_versions")["unsettled_appends"]

    land([1, 2], "b")
    appended = lakehouse.logged_build(tmp_path / "append", "--vars", SETTLE_EVERY_TWO)
    # the plan, one line per model in the build's output
    assert re.search(r"gold\.cdc_history_versions: 2 new changes ingested after \S+ \S+ up to \S+ \S+: append, "
                     r"each change newer than its key's open version", appended), appended
    assert "silver.cdc_parsed: parsing the bronze records ingested after" in appended
    assert "insert into table gold.cdc_history_versions" in appended
    assert "merge into gold.cdc_history_versions" not in appended
    assert not any(f"set {key} =" in appended or f"reset {key}" in appended for key in HASH_JOIN_KEYS)
    land([1], "c")
    lakehouse.build("--vars", SETTLE_EVERY_TWO, tests=False)
    assert unsettled() == 2
    assert _closers(lakehouse, "hist_settle") == [('{"id":1}', True, True)] * 2 + [('{"id":2}', True, True)]
    unsettled_history = history()
    # each version ends where its key's next one begins, though none stored says so
    chain = [r for r in unsettled_history if r["pk"] == '{"id":1}']
    assert [r["v"] for r in chain] == ["a", "b", "c"]
    assert [r["valid_to"] for r in chain] == [r["valid_from"] for r in chain[1:]] + [None]
    assert [r["next_apply_order"] for r in chain] == [r["apply_order"] for r in chain[1:]] + [None]
    assert [(r["is_open"], r["is_current"]) for r in unsettled_history] == [
        (False, False), (False, False), (True, True), (False, False), (True, True), (True, True)]
    # the current rows, as JSON (a table made from the stored versions, not the view) and typed
    # (a view of that table): a stored open version a closer has ended is not among them
    latest = {1: "c", 2: "b", 3: "a"}
    assert {pk: row["v"] for (_, pk), row in lakehouse.current_state("hist_settle").items()} == {
        f'{{"id":{i}}}': v for i, v in latest.items()}
    assert {str(r["id"]): r["v"] for r in lakehouse.rows("select id, v from gold.inventory__hist_settle")} == {
        str(i): v for i, v in latest.items()}
    assert "gold.cdc_current_state" in lakehouse.described("gold.inventory__hist_settle")["View Text"]

    land([3], "b")
    log = lakehouse.logged_build(tmp_path / "settle", "--vars", SETTLE_EVERY_TWO)
    assert "open version; the closers of earlier appends are settled first" in log
    settle = log.index("merge into gold.cdc_history_versions as stored")
    assert settle < log.index("insert into table gold.cdc_history_versions")
    sets = [log.rindex(f"set {key} = {value}", 0, settle)
            for key, value in zip(HASH_JOIN_KEYS, ("false", "64m"), strict=True)]
    resets = [log.index(f"reset {key}", settle) for key in HASH_JOIN_KEYS]
    assert max(sets) < settle < min(resets)
    assert {key: lakehouse.spark.conf.get(key) for key in HASH_JOIN_KEYS} == before
    # the closers before it are gone, their ends stored; this build's append left its own
    assert unsettled() == 1
    assert _closers(lakehouse, "hist_settle") == [('{"id":3}', True, True)]
    # stored open: each key's latest version, and key 3's "a", which this build's closer ends
    assert {r["pk"]: r["n"] for r in lakehouse.rows(
        "select pk, count(*) as n from gold.cdc_history_versions where source_table = 'hist_settle' "
        "and is_open and not is_closer group by pk")} == {'{"id":1}': 1, '{"id":2}': 1, '{"id":3}': 2}
    assert history((1, 2)) == [r for r in unsettled_history if r["pk"] != '{"id":3}']
    # an engine other than Spark reads the stored versions as Spark does: the settling MERGE
    # marked the closers and the versions it ended deleted in deletion vectors, which delta-rs applies
    location = lakehouse.rows("describe detail gold.cdc_history_versions")[0]["location"].removeprefix("file:")
    assert any('"deletionVector":{' in entry.read_text() for entry in Path(location, "_delta_log").glob("*.json"))
    columns = ["version_id", "pk", "op", "row", "apply_order", "next_apply_order", "is_open", "is_current", "is_closer"]
    where = "source_table = 'hist_settle'"
    assert _read_by_delta_rs(lakehouse, "gold.cdc_history_versions", columns, where) == sorted(
        tuple(r.values()) for r in lakehouse.rows(
            f"select {', '.join(columns)} from gold.cdc_history_versions where {where}"))
    _build_and_test_the_history(lakehouse)
    assert lakehouse.current_state("hist_settle") == {
        ("hist_settle", f'{{"id":{i}}}'): {"id": str(i), "v": r["v"]} for i, r in rows.items()}

    idle = lakehouse.logged_build(tmp_path / "nothing-new")
    assert "gold.cdc_history_versions: no new change in silver: nothing written" in idle
    assert "silver.cdc_parsed: nothing landed in bronze since" in idle
    assert "merge into gold.cdc_history_versions" not in idle
    assert "insert into table gold.cdc_history_versions" not in idle
    assert not any(f"set {key} =" in idle or f"reset {key}" in idle for key in HASH_JOIN_KEYS)


def test_the_current_state_is_a_delta_table_each_build_merges_by_the_keys_it_touched(lakehouse):
    """gold.cdc_current_state is a Delta table without deletion vectors, which delta-rs' Arrow
    reader opens. An increment MERGEs the current rows of the keys its changes touched, deleting
    those that have none any more (a delete, a key-changing update's old key); a truncate
    touches every key of its table; a build with nothing new writes nothing to it."""
    from deltalake import DeltaTable

    t = DebeziumTable("dbserver1", "inventory", "state_keys", ["id"])
    rows = [{"id": i, "v": "a"} for i in range(1, 7)]
    first = [t.insert(r) for r in rows]
    lakehouse.ingest(t.envelopes(first, first_offset=0), fmt="debezium-json")
    _build_and_test_the_history(lakehouse)
    location = lakehouse.rows("describe detail gold.cdc_current_state")[0]["location"].removeprefix("file:")
    assert "deletionVectors" not in (DeltaTable(location).protocol().reader_features or [])
    assert lakehouse.described("gold.cdc_current_state")["Type"] == "MANAGED"

    # key 1 updated, key 2 deleted, key 3 changed to key 30: four keys touched, two rows gone
    second = [t.update(rows[0], {**rows[0], "v": "b"}), *t.delete(rows[1], tombstone=False),
              t.update(rows[2], {"id": 30, "v": "a"})]
    offset = len(first)
    lakehouse.ingest(t.envelopes(second, first_offset=offset), fmt="debezium-json")
    _build_and_test_the_history(lakehouse)
    merge = lakehouse.rows("describe history gold.cdc_current_state limit 1")[0]
    assert merge["operation"] == "MERGE"
    metrics = merge["operationMetrics"]
    assert (metrics["numSourceRows"], metrics["numTargetRowsUpdated"], metrics["numTargetRowsInserted"],
            metrics["numTargetRowsDeleted"]) == ("4", "1", "1", "2"), metrics
    assert {r["pk"]: r["row"] for r in lakehouse.rows(
        "select pk, row from gold.cdc_current_state where source_table = 'state_keys'")} == {
        '{"id":1}': '{"id":1,"v":"b"}', '{"id":4}': '{"id":4,"v":"a"}', '{"id":5}': '{"id":5,"v":"a"}',
        '{"id":6}': '{"id":6,"v":"a"}', '{"id":30}': '{"id":30,"v":"a"}'}

    versions = len(lakehouse.rows("describe history gold.cdc_current_state"))
    lakehouse.build(tests=False)  # nothing new
    assert len(lakehouse.rows("describe history gold.cdc_current_state")) == versions

    # a truncate, then key 7: every stored key of the table is touched, only key 7 is left
    offset += len(second)
    third = [(None, t._value("t", None, None)), t.insert({"id": 7, "v": "a"})]
    lakehouse.ingest(t.envelopes(third, first_offset=offset), fmt="debezium-json")
    _build_and_test_the_history(lakehouse)
    assert [r["pk"] for r in lakehouse.rows(
        "select pk from gold.cdc_current_state where source_table = 'state_keys'")] == ['{"id":7}']


def test_late_change_recomputes_the_closed_versions_of_its_key(lakehouse):
    t = DebeziumTable("dbserver1", "inventory", "hist_late", ["id"])
    row = {"id": 1, "v": "a"}
    ins = t.insert(row)
    upd_b = t.update(row, {**row, "v": "b"})
    upd_c = t.update({**row, "v": "b"}, {**row, "v": "c"})
    upd_d = t.update({**row, "v": "c"}, {**row, "v": "d"})
    lakehouse.ingest(t.envelopes([ins, upd_b], first_offset=0), fmt="debezium-json")
    lakehouse.build(tests=False)
    # in order: appended, with a closer that ends "b"
    lakehouse.ingest(t.envelopes([upd_d], first_offset=2), fmt="debezium-json")
    lakehouse.build(tests=False)
    assert _closers(lakehouse, "hist_late") == [('{"id":1}', True, True)]

    # the update to "c" is older than the stored open version ("d") and slots in before it:
    # the closers are settled first, then the closed version "b" gets a new end in a MERGE
    lakehouse.ingest(t.envelopes([upd_c], first_offset=3), fmt="debezium-json")
    _build_and_test_the_history(lakehouse)
    assert "merge into gold.cdc_history_versions as DBT_INTERNAL_DEST" in _merge_statement()
    assert _closers(lakehouse, "hist_late") == []
    values = lakehouse.rows(
        "select get_json_object(row, '$.v') as v, is_open, is_current from gold.cdc_history "
        "where source_table = 'hist_late' order by apply_order"
    )
    assert [(r["v"], r["is_open"], r["is_current"]) for r in values] == [
        ("a", False, False), ("b", False, False), ("c", False, False), ("d", True, True),
    ]


def test_history_of_an_earlier_layout_asks_for_a_full_refresh(lakehouse):
    from dbt.cli.main import dbtRunner

    t = DebeziumTable("dbserver1", "inventory", "hist_old", ["id"])
    row = {"id": 1, "v": "a"}
    first = [t.insert(row)]
    lakehouse.ingest(t.envelopes(first, first_offset=0), fmt="debezium-json")
    lakehouse.build(tests=False)
    # the layout before closers: partitioned by is_open and is_current alone
    lakehouse.spark.sql(
        "create or replace table gold.cdc_history_versions using delta partitioned by (is_open, is_current) "
        "as select * except (is_closer) from gold.cdc_history_versions"
    )
    lakehouse.ingest(t.envelopes([t.update(row, {**row, "v": "b"})], first_offset=1), fmt="debezium-json")
    result = dbtRunner().invoke([
        "run", "--select", "+cdc_history_versions", "--profiles-dir", str(PROJECT / "profiles"),
        "--project-dir", str(PROJECT), "--quiet",
    ])
    messages = " ".join(str(r.message) for r in (result.result or []))
    assert not result.success
    assert "lacks is_closer" in messages and "--select cdc_history_versions --full-refresh" in messages

    lakehouse.build("--select", "cdc_history_versions", "--full-refresh", tests=False)
    assert [r["v"] for r in lakehouse.rows(
        "select get_json_object(row, '$.v') as v from gold.cdc_history "
        "where source_table = 'hist_old' and is_open order by apply_order"
    )] == ["b"]


WATERMARKED = ("silver.cdc_parsed", "gold.cdc_history_versions", "gold.cdc_table_columns")
# the table whose newest commit each one's write recorded with its watermark (what it read)
UPSTREAM = {"silver.cdc_parsed": "bronze.kafka_records", "gold.cdc_history_versions": "silver.cdc_parsed",
            "gold.cdc_table_columns": "silver.cdc_parsed"}
USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"
# a MERGE that writes one parsed record again as it is (an append of nothing does not commit)
PARSED_AGAIN = ("merge into silver.cdc_parsed as t using (select * from silver.cdc_parsed limit 1) as s "
                "on t.record_id = s.record_id when matched then update set *")


# the history records too how many truncates the runs up to its watermark consumed
NO_TRUNCATE = {"gold.cdc_history_versions": {"truncations": 0}}


def _recorded(lakehouse, table: str, first_build: bool = False) -> dict | None:
    """The watermark recorded for the table's newest version (its row of meta.cdc_build_progress),
    or None; the history's record of its
    newest apply order per source table is checked against the table itself and left out. A
    first build records none (it would sort every change to count them by table): the first
    increment reads them from the open versions. The newest commit of the table it read
    (its upstream), recorded with it, is checked against that table's newest one now (nothing
    wrote to it since) and left out, and so is the digest of the code the parse ran."""
    mark = lakehouse.progress(table)
    if mark:
        newest = lakehouse.rows(f"describe history {UPSTREAM[table]} limit 1")[0]
        assert mark.pop("upstream") == {
            "table": UPSTREAM[table], "version": newest["version"], "committed_at": str(newest["timestamp"])}, table
    if mark and table == "gold.cdc_history_versions" and first_build:
        assert "orders" not in mark, mark
    elif mark and table == "gold.cdc_history_versions":
        newest = lakehouse.rows(
            "select concat_ws('/', coalesce(source_database, ''), coalesce(source_schema, ''), source_table) as t, "
            "max(apply_order) as newest from gold.cdc_history group by 1")
        assert mark.pop("orders") == {r["t"]: r["newest"] for r in newest}
    if mark and table == "gold.cdc_history_versions" and not first_build:
        # the writes since the last compaction, and the appends not settled yet (checked by
        # their own tests)
        assert mark.pop("writes_since_compaction") >= 1, mark
        assert mark.pop("unsettled_appends") >= 0, mark
    if mark and table == "gold.cdc_table_columns":
        # which commit last wrote the rows, when this one had nothing else to change (checked
        # by the test)
        mark.pop("rows_commit", None)
    if mark and table == "silver.cdc_parsed":
        # the parse records the digest of the code it ran (macros/utils/cdc_code_digest.sql)
        assert re.fullmatch("[0-9a-f]{32}", mark.pop("code")), mark
    if mark and table == "silver.cdc_parsed" and not first_build:
        # the appends since the last compaction (checked by its own test)
        assert mark.pop("writes_since_compaction") >= 1, mark
    return mark


def _commit_with_progress(lakehouse, table: str, mark: dict, statement: str | None = None) -> None:
    """A commit to ``table`` and a row of meta.cdc_build_progress recording ``mark`` for it: the
    commit of ``statement``, else of a MERGE that writes every row again as it is (a write that
    changes nothing does not commit)."""
    key = "version_id" if table == "gold.cdc_history_versions" else "state_key"
    lakehouse.spark.sql(statement or f"merge into {table} as t using {table} as s on t.{key} = s.{key} "
                                     "when matched then update set *")
    newest = lakehouse.rows(f"describe history {table} limit 1")[0]
    lakehouse.spark.sql(
        "insert into meta.cdc_build_progress values ("
        f"'{table}', {newest['version']}, '{newest['timestamp']}', '{mark.get('ingested_at')}', null, null, "
        f"'{json.dumps(mark)}', 'test', current_timestamp())")


def _compiled_newer_than(model: str) -> str:
    """The filter by which the last compiled ``model`` ("silver/cdc_parsed") read what is new."""
    text = (COMPILED.parent / f"{model}.sql").read_text()
    return re.search(r"ingested_at > timestamp '[^']*'(?:\s+and ingested_at >= timestamp '[^']*')?", text)[0]


def _scanned_rows(lakehouse, table: str, predicate: str) -> int:
    """Rows the table's scans read for ``predicate``, before the filter: the rows of the files
    that Delta could not skip."""
    df = lakehouse.spark.sql(f"select * from {table} where {predicate}")
    df.collect()
    rows, plans = 0, [df._jdf.queryExecution().executedPlan()]
    while plans:
        plan = plans.pop()
        if plan.nodeName().startswith("Scan"):
            rows += plan.metrics().get("numOutputRows").get().value()
        plans.extend(plan.children().apply(i) for i in range(plan.children().size()))
    return rows


def _compiled_watermark(model: str, layer: str = "gold") -> str:
    """The watermark the last compiled ``model`` of ``layer`` read what is new after."""
    text = (COMPILED.parent / layer / f"{model}.sql").read_text()
    return re.search(r"ingested_at > timestamp '([^']*)'", text)[1]


def test_increments_read_the_watermark_their_last_write_recorded(lakehouse):
    t = DebeziumTable("dbserver1", "inventory", "hist_mark", ["id"])
    row = {"id": 1, "v": "a"}
    messages = [t.insert(row), t.update(row, {**row, "v": "b"}), t.update({**row, "v": "b"}, {**row, "v": "c"}),
                t.update({**row, "v": "c"}, {**row, "v": "d"})]
    lakehouse.ingest(t.envelopes(messages[:1], first_offset=0), fmt="debezium-json")
    lakehouse.build(tests=False)
    # a first build's create records what it consumed too: the first increment reads the
    # watermark from the log, not max(ingested_at) over the whole table
    first = lakehouse.rows("select cast(max(ingested_at) as string) as t from bronze.kafka_records")[0]["t"]
    for table in WATERMARKED:
        operation = lakehouse.rows(f"describe history {table} limit 1")[0]["operation"]
        assert operation in ("CREATE TABLE AS SELECT", "CREATE OR REPLACE TABLE AS SELECT"), (table, operation)
        assert _recorded(lakehouse, table, first_build=True) == {
            "table": table, "ingested_at": first, "apply_order_layout": 2, **NO_TRUNCATE.get(table, {})}, table
    assert lakehouse.spark.conf.get(USER_METADATA, None) is None
    lakehouse.ingest(t.envelopes(messages[1:2], first_offset=1), fmt="debezium-json")
    lakehouse.build(tests=False)

    # each incremental write recorded the newest ingest time it consumed, for the version it
    # made; the table columns, with no new column or type to write, made none, and recorded
    # theirs for the version of their rows
    columns = lakehouse.rows("describe history gold.cdc_table_columns limit 2")
    assert len(columns) == 1, columns
    assert columns[0]["operation"] in ("CREATE TABLE AS SELECT", "CREATE OR REPLACE TABLE AS SELECT"), columns
    newest = lakehouse.rows("select cast(max(ingested_at) as string) as t from bronze.kafka_records")[0]["t"]
    for table in WATERMARKED:
        assert _recorded(lakehouse, table) == {"table": table, "ingested_at": newest, "apply_order_layout": 2,
                                               **NO_TRUNCATE.get(table, {})}, table
    assert lakehouse.spark.conf.get(USER_METADATA, None) is None

    # the loader stamps even milliseconds, so the second build read on from two milliseconds
    # after the first batch's stamp, and Delta skipped the first batch's files by their
    # statistics: the scans under the compiled filters read only the second batch's rows
    stamps = [r["t"] for r in lakehouse.rows("select distinct cast(ingested_at as string) as t "
                                             "from bronze.kafka_records order by t")]
    assert len(stamps) == 2 and lakehouse.rows(
        "select count_if(unix_micros(ingested_at) % 2000 <> 0) as n from bronze.kafka_records"
    )[0]["n"] == 0
    for model, table in (("silver/cdc_parsed", "bronze.kafka_records"),
                         ("gold/cdc_history_versions", "silver.cdc_changes")):
        predicate = _compiled_newer_than(model)
        assert f"ingested_at > timestamp '{stamps[0]}'" in predicate, (model, predicate)
        assert "ingested_at >= timestamp '" in predicate, (model, predicate)
        second = lakehouse.rows(f"select count(*) as n from {table} where ingested_at = timestamp '{stamps[1]}'")
        assert _scanned_rows(lakehouse, table, predicate) == second[0]["n"] > 0, model

    # the next run reads it: an earlier recorded watermark (one the model wrote itself) is
    # what the next build's filter uses, and reading a change again changes nothing
    earlier = "2001-01-01 00:00:00"
    _commit_with_progress(lakehouse, "gold.cdc_history_versions", {
        "table": "gold.cdc_history_versions", "ingested_at": earlier, "apply_order_layout": 2})
    # a row whose record names another table is not trusted: this one would hide every later
    # record from silver
    future = {"table": "gold.cdc_history_versions", "ingested_at": "2999-01-01 00:00:00", "apply_order_layout": 2}
    _commit_with_progress(lakehouse, "silver.cdc_parsed", future, PARSED_AGAIN)
    lakehouse.ingest(t.envelopes(messages[2:3], first_offset=2), fmt="debezium-json")
    lakehouse.build(tests=False)
    assert _compiled_watermark("cdc_history_versions") == earlier
    assert _compiled_watermark("cdc_parsed", "silver") == newest
    # that row did not say how many truncates were consumed: the build counted them, and
    # recorded the count
    assert _recorded(lakehouse, "gold.cdc_history_versions")["truncations"] == 0
    assert lakehouse.current_state("hist_mark") == {("hist_mark", '{"id":1}'): {"id": "1", "v": "c"}}
    history = lakehouse.rows("select get_json_object(row, '$.v') as v, is_open from gold.cdc_history "
                             "where source_table = 'hist_mark' order by apply_order")
    assert [(r["v"], r["is_open"]) for r in history] == [("a", False), ("b", False), ("c", True)]

    # a newest version that no row describes (here a property set by hand after the model's
    # last write, as a build stopped between its write and its row leaves one) falls back to
    # reading the table
    lakehouse.spark.sql("alter table gold.cdc_history_versions set tblproperties ('cdc_lakehouse.test' = 'yes')")
    assert lakehouse.progress("gold.cdc_history_versions") is None
    newest = lakehouse.rows("select cast(max(ingested_at) as string) as t from gold.cdc_history_versions")[0]["t"]
    lakehouse.ingest(t.envelopes(messages[3:], first_offset=3), fmt="debezium-json")
    _build_and_test_the_history(lakehouse)
    assert _compiled_watermark("cdc_history_versions") == newest
    assert lakehouse.current_state("hist_mark") == {("hist_mark", '{"id":1}'): {"id": "1", "v": "d"}}


PADDED = r"^[01](\.[0-9]{38}){3}\.[0-9]{10}\.[0-9]{20}\.[0-9]{10}$"


def _failed_build(*args: str) -> str:
    """The messages of a ``dbt run`` expected to fail."""
    from dbt.cli.main import dbtRunner

    result = dbtRunner().invoke(["run", *args, "--profiles-dir", str(PROJECT / "profiles"),
                                 "--project-dir", str(PROJECT), "--quiet"])
    assert not result.success
    return " ".join(str(r.message) for r in (result.result or []))


def test_apply_orders_of_the_padded_layout_ask_for_a_full_refresh(lakehouse):
    t = DebeziumTable("dbserver1", "inventory", "hist_layout", ["id"])
    row = {"id": 1, "v": "a"}
    messages = [t.insert(row), t.update(row, {**row, "v": "b"}), t.update({**row, "v": "b"}, {**row, "v": "c"})]
    lakehouse.ingest(t.envelopes(messages[:1], first_offset=0), fmt="debezium-json")
    lakehouse.build(tests=False)
    # digit counts and digits, in order, far shorter than the padded layout's 161 characters
    orders = [r["apply_order"] for r in lakehouse.rows("select apply_order from silver.cdc_changes")]
    assert orders and all(not re.match(PADDED, o) and len(o) < 60 for o in orders), orders

    # an earlier version recorded its watermarks without a layout: its record is not trusted
    _commit_with_progress(lakehouse, "silver.cdc_parsed", {
        "table": "silver.cdc_parsed", "ingested_at": "2001-01-01 00:00:00"}, PARSED_AGAIN)
    # and a table whose last commit recorded nothing is read: a padded order gives it away
    padded = "1." + ".".join(["0" * 38] * 3) + "." + "0" * 10 + "." + "0" * 19 + "1." + "0" * 10
    assert re.match(PADDED, padded)
    lakehouse.spark.sql(f"update gold.cdc_history_versions set apply_order = '{padded}'")
    lakehouse.ingest(t.envelopes(messages[1:2], first_offset=1), fmt="debezium-json")
    for table in ("silver.cdc_parsed", "gold.cdc_history_versions"):
        message = _failed_build("--select", table.split(".")[1])
        assert f"{table} holds apply orders in the layout of an earlier version" in message, message
        assert "lakehouse build --full-refresh" in message, message

    # the full refresh the message asks for rebuilds every model in the one layout
    lakehouse.build("--full-refresh", tests=False)
    lakehouse.ingest(t.envelopes(messages[2:], first_offset=2), fmt="debezium-json")
    _build_and_test_the_history(lakehouse)
    assert lakehouse.current_state("hist_layout") == {("hist_layout", '{"id":1}'): {"id": "1", "v": "c"}}
    for table in ("silver.cdc_changes", "gold.cdc_history"):
        longest = lakehouse.rows(f"select max(length(apply_order)) as n from {table}")[0]["n"]
        assert 20 < longest < 60, (table, longest)


def test_a_late_change_older_than_a_stored_truncate_is_truncated_too(lakehouse):
    t = DebeziumTable("dbserver1", "inventory", "hist_trunc", ["id"])
    one, two, three = {"id": 1, "v": "a"}, {"id": 2, "v": "a"}, {"id": 3, "v": "a"}
    ins_one = t.insert(one)
    ins_two = t.insert(two)  # committed before the truncate, delivered after it
    truncate = (None, t._value("t", None, None))
    ins_three = t.insert(three)  # after the truncate: key 3 is live
    lakehouse.ingest(t.envelopes([ins_one, truncate, ins_three], first_offset=0), fmt="debezium-json")
    lakehouse.build(tests=False)
    # the first build recorded the truncate it consumed: the next increment reads silver's
    # earlier truncates (and would skip them at 0)
    assert _recorded(lakehouse, "gold.cdc_history_versions", first_build=True)["truncations"] == 1
    assert _versions(lakehouse, "hist_trunc")['{"id":1}'] == [
        ("c", True, False, False, True), ("t", False, True, False, False)]

    late = [ins_two, t.update(three, {**three, "v": "b"})]
    lakehouse.ingest(t.envelopes(late, first_offset=3), fmt="debezium-json")
    _build_and_test_the_history(lakehouse)
    assert re.search(r"earlier_truncations as \(.*?where op = 't'\s+and ingested_at <=", _compiled_history(), re.S)
    assert _recorded(lakehouse, "gold.cdc_history_versions")["truncations"] == 1
    # key 2's insert came before the truncate: the truncate ends it, as it ended key 1
    assert _versions(lakehouse, "hist_trunc") == {
        '{"id":1}': [("c", True, False, False, True), ("t", False, True, False, False)],
        '{"id":2}': [("c", True, False, False, True), ("t", False, True, False, False)],
        '{"id":3}': [("c", True, False, False, True), ("u", True, True, True, False)],
    }
    assert {r["pk"] for r in lakehouse.rows(
        "select pk from gold.cdc_current_state where source_table = 'hist_trunc'")} == {'{"id":3}'}
    current_in_history = lakehouse.rows(
        "select pk from gold.cdc_history where source_table = 'hist_trunc' and is_current")
    assert [r["pk"] for r in current_in_history] == ['{"id":3}']


def test_a_change_delivered_twice_is_one_version_whichever_run_reads_each_copy(lakehouse):
    """The same change read from two topics (a connector's topic and its mirror: one binlog
    position, one Kafka offset, so one apply order): both copies in one run, and a copy of a
    stored version in a later run. Each is one version, and the versions before them end at
    them (the history's single window pass drops the copies and takes the ends). The data
    test cdc_apply_order_is_strict reports such a pair to the user (two changes of a key with
    one apply order): the builds here run the models only."""
    source = DebeziumTable("dbserver1", "inventory", "hist_dup", ["id"])
    mirror = DebeziumTable("mirror", "inventory", "hist_dup", ["id"])
    row = {"id": 1, "v": "a"}
    changes = {}
    for table in (source, mirror):
        changes[table.server] = [table.insert(row), table.update(row, {**row, "v": "b"}),
                                 table.update({**row, "v": "b"}, {**row, "v": "c"})]
    first = source.envelopes(changes["dbserver1"][:2]) + mirror.envelopes(changes["mirror"][:1])
    lakehouse.ingest(first, fmt="debezium-json")
    lakehouse.build(tests=False)
    second = (source.envelopes(changes["dbserver1"][2:], first_offset=2)
              + mirror.envelopes(changes["mirror"][1:2], first_offset=1))
    lakehouse.ingest(second, fmt="debezium-json")
    lakehouse.build(tests=False)
    # the copy of the stored open version is no newer than it: the run reads the stored
    # versions and windows them with the new ones, and MERGEs (appended, the copy would be a
    # second version with the stored one's id)
    assert "merge into gold.cdc_history_versions" in _merge_statement()

    versions = lakehouse.rows(
        "select get_json_object(row, '$.v') as v, valid_from, valid_to, is_open, is_current "
        "from gold.cdc_history where source_table = 'hist_dup' order by apply_order"
    )
    assert [(r["v"], r["is_open"], r["is_current"]) for r in versions] == [
        ("a", False, False), ("b", False, False), ("c", True, True),
    ]
    assert [r["valid_to"] for r in versions] == [versions[1]["valid_from"], versions[2]["valid_from"], None]
    assert versions[0]["valid_from"] < versions[1]["valid_from"] < versions[2]["valid_from"]


def test_version_ids_are_md5s_and_a_history_with_the_earlier_sha256_ids_goes_on(lakehouse):
    """A version's id is the md5 of its key and apply order (32 hex characters, as dbt-utils'
    surrogate keys). A history written when the ids were sha256s of the same string keeps
    them: the MERGE matches a stored version by the id it was stored with, so an increment
    ends it rather than writing it a second time beside an open copy."""
    t = DebeziumTable("dbserver1", "inventory", "hist_ids", ["id"])
    one, two = {"id": 1, "v": "a"}, {"id": 2, "v": "a"}
    first = [t.insert(one), t.insert(two)]
    lakehouse.ingest(t.envelopes(first, first_offset=0), fmt="debezium-json")
    lakehouse.build(tests=False)

    def versions() -> list[dict]:
        return lakehouse.rows(
            "select source_database, source_schema, source_table, pk, apply_order, version_id, op, is_open "
            "from gold.cdc_history where source_table = 'hist_ids' order by pk, apply_order")

    def identity(r: dict) -> str:
        return "|".join([r["source_database"] or "", r["source_schema"] or "", r["source_table"], r["pk"],
                         r["apply_order"]])

    stored = versions()
    assert [r["version_id"] for r in stored] == [hashlib.md5(identity(r).encode()).hexdigest() for r in stored]

    # the ids as the earlier form wrote them
    lakehouse.spark.sql(
        "update gold.cdc_history_versions set version_id = sha2(concat_ws('|', coalesce(source_database, ''), "
        "coalesce(source_schema, ''), source_table, pk, apply_order), 256) where source_table = 'hist_ids'")
    earlier = {identity(r): hashlib.sha256(identity(r).encode()).hexdigest() for r in stored}

    lakehouse.ingest(t.envelopes([t.update(one, {**one, "v": "b"}), t.insert({"id": 3, "v": "a"})],
                                 first_offset=len(first)), fmt="debezium-json")
    _build_and_test_the_history(lakehouse)
    after = versions()
    assert [(r["pk"], r["op"], r["is_open"]) for r in after] == [
        ('{"id":1}', "c", False), ('{"id":1}', "u", True), ('{"id":2}', "c", True), ('{"id":3}', "c", True),
    ]
    for r in after:
        assert r["version_id"] == earlier.get(identity(r), hashlib.md5(identity(r).encode()).hexdigest()), r
    assert sum(len(r["version_id"]) == 64 for r in after) == 2


# and the closers settled before every append but the first
HISTORY = "gold.cdc_history_versions"
COMPACT_EVERY_TWO = json.dumps({"cdc_history_compact_every": 2, "cdc_history_settle_every": 1})
# and a VACUUM after each compaction
SILVER_EVERY_TWO = json.dumps({"cdc_silver_compact_every": 2, "cdc_vacuum_after_compaction": True})


def _writes_since_compaction(lakehouse, table: str, commit: dict) -> int:
    return lakehouse.progress(table, commit["version"])["writes_since_compaction"]


def test_the_history_compacts_every_so_many_writes_and_the_next_run_passes_over_it(lakehouse, tmp_path):
    """Each write adds small files, which every later MERGE and read goes through: every
    cdc_history_compact_every writes (2 here) the build compacts the stored versions after its
    write, an OPTIMIZE that packs them and drops the rows the settling MERGEs marked deleted.
    The writes are counted in the watermarks they record. The OPTIMIZE changes no row: the next
    run reads the watermark of the write before it, not a scan of the table, and counts from 1
    again; a user's OPTIMIZE of silver is passed over alike."""
    t = DebeziumTable("dbserver1", "inventory", "hist_compact", ["id"])
    rows = {i: {"id": i, "v": "a"} for i in range(1, 4)}
    sent = [t.insert(r) for r in rows.values()]
    lakehouse.ingest(t.envelopes(sent, first_offset=0), fmt="debezium-json")
    lakehouse.build(tests=False)

    def land(ids: list[int], value: str) -> None:
        batch = [t.update(rows[i], {**rows[i], "v": value}) for i in ids]
        rows.update({i: {**rows[i], "v": value} for i in ids})
        lakehouse.ingest(t.envelopes(batch, first_offset=len(sent)), fmt="debezium-json")
        sent.extend(batch)

    def commits() -> list[dict]:
        return lakehouse.rows("describe history gold.cdc_history_versions limit 2")

    land([1], "b")
    lakehouse.build("--vars", COMPACT_EVERY_TWO, tests=False)
    assert commits()[0]["operation"] == "WRITE"
    assert _writes_since_compaction(lakehouse, HISTORY, commits()[0]) == 1
    land([2], "b")
    lakehouse.build("--vars", COMPACT_EVERY_TWO, tests=False)
    optimize, append = commits()
    assert (optimize["operation"], append["operation"]) == ("OPTIMIZE", "WRITE")
    assert _writes_since_compaction(lakehouse, HISTORY, append) == 2
    assert lakehouse.progress(HISTORY, optimize["version"]) is None
    # the writes' files packed, and the open versions and closers the settling closed or
    # deleted dropped from theirs
    metrics = optimize["operationMetrics"]
    assert int(metrics["numRemovedFiles"]) > int(metrics["numAddedFiles"]) > 0, metrics
    assert int(metrics["numDeletionVectorsRemoved"]) > 0, metrics
    everything = "select * from gold.cdc_history_versions{} order by version_id"
    assert lakehouse.rows(everything.format("")) == lakehouse.rows(
        everything.format(f" version as of {append['version']}"))

    lakehouse.spark.sql("optimize silver.cdc_parsed")
    assert lakehouse.rows("describe history silver.cdc_parsed limit 1")[0]["operation"] == "OPTIMIZE"
    land([2, 3], "c")
    log = lakehouse.logged_build(tmp_path / "logs", "--vars", COMPACT_EVERY_TWO)
    # each model read the watermark its last write recorded, from the log: no scan of its table
    assert "select cast(max(ingested_at) as string) as newest" not in log
    assert "select coalesce(max(ingested_at)" not in log
    newest = lakehouse.rows("select cast(max(ingested_at) as string) as t from bronze.kafka_records")[0]["t"]
    for table in WATERMARKED:
        assert _recorded(lakehouse, table)["ingested_at"] == newest, table
    assert commits()[0]["operation"] == "WRITE"
    assert _writes_since_compaction(lakehouse, HISTORY, commits()[0]) == 1
    assert lakehouse.current_state("hist_compact") == {
        ("hist_compact", f'{{"id":{i}}}'): {"id": str(i), "v": r["v"]} for i, r in rows.items()}


def test_silver_compacts_before_every_so_many_appends_and_keeps_new_changes_apart(lakehouse):
    """Each build appends small files to silver, which every later read plans over: every
    cdc_silver_compact_every appends (2 here) the next build compacts silver before its own
    append. So the compacted files hold only changes the models below have read, and the new
    append's changes sit in files of their own (which the history and the table columns read
    by ingest time). The OPTIMIZE records nothing; the write after it counts from 1 again."""
    t = DebeziumTable("dbserver1", "inventory", "silver_compact", ["id"])
    rows = {i: {"id": i, "v": "a"} for i in range(1, 4)}
    sent = [t.insert(r) for r in rows.values()]
    lakehouse.ingest(t.envelopes(sent, first_offset=0), fmt="debezium-json")
    lakehouse.build(tests=False)
    # the files a compaction replaces are deleted at once by the VACUUM after it (kept 7 days
    # by default)
    lakehouse.spark.sql("alter table silver.cdc_parsed set tblproperties "
                        "('delta.deletedFileRetentionDuration' = 'interval 0 hours')")

    def land_and_build(i: int, value: str) -> list[dict]:
        batch = [t.update(rows[i], {**rows[i], "v": value})]
        rows[i] = {**rows[i], "v": value}
        lakehouse.ingest(t.envelopes(batch, first_offset=len(sent)), fmt="debezium-json")
        sent.extend(batch)
        lakehouse.build("--vars", SILVER_EVERY_TWO, tests=False)
        return [c for c in lakehouse.rows("describe history silver.cdc_parsed limit 4")
                if not c["operation"].startswith("VACUUM")][:2]

    def counted(commits: list[dict]) -> list[tuple[str, int]]:
        return [(c["operation"], _writes_since_compaction(lakehouse, "silver.cdc_parsed", c)) for c in commits[:1]]

    assert counted(land_and_build(1, "b")) == [("WRITE", 1)]
    assert counted(land_and_build(2, "b")) == [("WRITE", 2)]
    append, optimize = land_and_build(3, "b")
    assert (append["operation"], optimize["operation"]) == ("WRITE", "OPTIMIZE")
    assert _writes_since_compaction(lakehouse, "silver.cdc_parsed", append) == 1
    assert lakehouse.progress("silver.cdc_parsed", optimize["version"]) is None
    metrics = optimize["operationMetrics"]
    assert int(metrics["numRemovedFiles"]) > int(metrics["numAddedFiles"]) > 0, metrics
    # the VACUUM after it deleted the files it replaced (and nothing the table holds)
    vacuum_end, vacuum_start = [c for c in lakehouse.rows("describe history silver.cdc_parsed limit 4")
                                if c["operation"].startswith("VACUUM")]
    assert (vacuum_end["operation"], vacuum_start["operation"]) == ("VACUUM END", "VACUUM START")
    assert int(vacuum_end["operationMetrics"]["numDeletedFiles"]) >= int(metrics["numRemovedFiles"]), vacuum_end
    location = lakehouse.rows("describe detail silver.cdc_parsed")[0]["location"].removeprefix("file:")
    on_disk = {str(p) for p in Path(location).rglob("*.parquet") if "_delta_log" not in p.parts}
    live = {r["f"] for r in lakehouse.rows("select distinct _metadata.file_path as f from silver.cdc_parsed")}
    assert on_disk == {f.removeprefix("file:") for f in live}, (on_disk, live)
    # the newest append's changes are in files that hold nothing older
    newest = lakehouse.rows("select cast(max(ingested_at) as string) as t from bronze.kafka_records")[0]["t"]
    files: dict[str, set[str]] = {}
    for r in lakehouse.rows("select distinct _metadata.file_path as file, cast(ingested_at as string) as t "
                            "from silver.cdc_parsed"):
        files.setdefault(r["file"], set()).add(r["t"])
    assert [times for times in files.values() if newest in times] == [{newest}], files
    assert lakehouse.rows("select count(*) as n from silver.cdc_parsed where record_kind = 'change'") == [{"n": 6}]
    for table in WATERMARKED:
        assert _recorded(lakehouse, table)["ingested_at"] == newest, table
    assert lakehouse.current_state("silver_compact") == {
        ("silver_compact", f'{{"id":{i}}}'): {"id": str(i), "v": r["v"]} for i, r in rows.items()}


def test_a_change_replayed_at_another_offset_is_one_version(lakehouse):
    """A connector restarted after a kill replays from its stored offset: the same changes (one
    binlog position each) land again at later Kafka offsets, in the same increment or in a later
    one (the open version replayed: the append path must not take it for a new change; an older
    one: the late path). Each is one version; a change that repeats another's row at its own
    position is a version."""
    table = DebeziumTable("dbserver1", "inventory", "hist_replay", ["id"])
    row = {"id": 1, "v": "a"}
    sent = [table.insert(row), table.update(row, {**row, "v": "b"})]
    again = table.update({**row, "v": "b"}, {**row, "v": "b"})  # same row, its own position
    batches = [[*sent, *sent, again], [again], [sent[1], again]]

    def versions() -> list[tuple[str, bool]]:
        rows = lakehouse.rows(
            "select get_json_object(row, '$.v') as v, is_current from gold.cdc_history "
            "where source_table = 'hist_replay' order by apply_order"
        )
        return [(r["v"], r["is_current"]) for r in rows]

    offset = 0
    for i, batch in enumerate(batches):
        lakehouse.ingest(table.envelopes(batch, first_offset=offset), fmt="debezium-json")
        offset += len(batch)
        # the last build runs the data tests: gold's current rows are the first deliveries'
        lakehouse.build(tests=i == len(batches) - 1)
        assert versions() == [("a", False), ("b", False), ("b", True)], f"after offset {offset}"

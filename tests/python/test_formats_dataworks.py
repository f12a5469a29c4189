"""The dataworks group of formats through bronze, silver and gold, in-process.

Formats: dataworks, dataworks-v2, maxwell-json, ogg-json, aws-dms-json. One lakehouse serves the
whole module (builds are the expensive part): batch 1 lands the vendor-document fixtures of
tests/fixtures/<format>/, the first half of a hard-delivered random history per format, the
scripted DataWorks split-update cases and Apache Paimon's real samples (when ../shared is
there); batch 2 lands the rest. Each test then checks one thing against that lakehouse.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest
from cdc_messages import Raw
from conftest import SHARED, needs_shared
from dataworks_messages import (
    DataWorksV2Writer,
    DataWorksWriter,
    DmsWriter,
    MaxwellWriter,
    Message,
    OggWriter,
    Topic,
    decoded,
    fixture_messages,
    hard_delivery,
    history,
    paimon_messages,
    text_value,
)

FORMATS = ["dataworks", "dataworks-v2", "maxwell-json", "ogg-json", "aws-dms-json"]
#: Paimon sample folder -> format id (aliyun is SPEC's dataworks)
PAIMON = {"aliyun": "dataworks", "maxwell": "maxwell-json", "ogg": "ogg-json", "aws-dms": "aws-dms-json"}


def exact(text: str | None) -> Any:
    return None if text is None else json.loads(text, parse_float=str, parse_int=str)


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


@dataclass
class World:
    """The lakehouse after both batches, and what each scenario should have produced."""

    lakehouse: Any
    truths: dict[tuple[str, str], Any] = field(default_factory=dict)
    """(format, table) -> {pk json: row} (keyed tables) or sorted row list (multisets)."""
    keyless: set[str] = field(default_factory=set)
    garbage: dict[str, list[str]] = field(default_factory=dict)
    """format -> the quarantine reasons its garbage must produce."""
    interim: dict[str, Any] = field(default_factory=dict)
    """table -> gold rows after batch 1 only."""
    paimon_topics: dict[str, list[str]] = field(default_factory=dict)

    def gold(self, fmt: str, table: str) -> dict[str, dict[str, Any]]:
        rows = self.lakehouse.rows(
            f"select pk, row from gold.cdc_current_state where source_format = '{fmt}' "
            f"and source_table = '{table}'"
        )
        return {canonical(exact(r["pk"])): exact(r["row"]) for r in rows}

    def parsed(self, where: str) -> list[dict[str, Any]]:
        return self.lakehouse.rows(
            "select *, replace(cast(event_time as string), ' ', 'T') as event_time_text "
            f"from silver.cdc_parsed where {where} order by kafka_topic, kafka_offset, row_index"
        )


# --- the streams ----------------------------------------------------------------------------


def _keyed_truth(state: dict[str, dict], key: str = "id") -> dict[str, dict]:
    return {canonical({key: text_value(r[key])}): decoded(r) for r in state.values()}


def _dataworks_streams(world: World) -> tuple[list[Message], list[Message]]:
    """DataWorks: a keyed table, a table keyed by the hidden row id, a multiset, all with split
    and single-record updates and full-load rows; the scripted cross-batch split updates."""
    messages: list[Message] = []
    keyed = DataWorksWriter("shop", "dw_accounts", seed=1)
    changes, state = history(seed=11)
    for i, change in enumerate(changes):
        messages += keyed.render(change)
        if i % 9 == 4:
            messages.append(keyed.heartbeat())
    world.truths[("dataworks", "dw_accounts")] = {
        canonical({"id": k}): decoded(keyed.image(r)) for k, r in state.items()}

    rowid = DataWorksWriter("shop", "dw_rowid", key="#alibaba_rds_row_id#", primary_key=False, seed=2)
    changes, state = history(seed=12, key="#alibaba_rds_row_id#", key_changes=False)
    for change in changes:
        messages += rowid.render(change)
    world.truths[("dataworks", "dw_rowid")] = {
        canonical({"#alibaba_rds_row_id#": k}): decoded(rowid.image(r)) for k, r in state.items()}

    bag = DataWorksWriter("shop", "dw_bag", key=None, seed=3)
    changes, state = history(seed=13, key_changes=False, steps=16)
    for change in changes:
        messages += bag.render(change)
    world.truths[("dataworks", "dw_bag")] = sorted(
        (decoded(bag.image(r)) for r in state.values()), key=canonical)
    world.keyless.add("dw_bag")

    messages.append((None, keyed.message("TRANSACTION_BEGIN", None, None)))
    messages.append((None, keyed.message("ALTER", None, None, ddl="ALTER TABLE dw_accounts ADD COLUMN c1 INT")))
    messages.append((None, keyed.message("TRANSACTION_END", None, None)))
    batch1, batch2 = hard_delivery(messages, seed=5)

    # split updates whose halves straddle the batches, both ways, with and without a key change
    cross = DataWorksWriter("shop", "dw_cross", seed=4)
    rows = {k: {"id": Raw(k), "v": "v0"} for k in ("1", "2", "3", "4")}
    inserts = [(None, cross.message("INSERT", None, r)) for r in rows.values()]
    b1, a1 = cross.split_update(rows["1"], {"id": Raw("11"), "v": "v1"})
    b2, a2 = cross.split_update(rows["2"], {"id": Raw("22"), "v": "v1"})
    b3, a3 = cross.split_update(rows["3"], {"id": Raw("3"), "v": "v1"})
    b4, a4 = cross.split_update(rows["4"], {"id": Raw("4"), "v": "v1"})
    stale = (None, cross.message("INSERT", None, {"id": Raw("3"), "v": "stale full-load row"}, "-1"))
    batch1 += [*inserts, b1, a2, a3, b4]
    batch2 += [a1, b2, b3, a4, stale]
    world.truths[("dataworks", "dw_cross")] = {
        canonical({"id": k}): decoded(cross.image({"id": Raw(k), "v": "v1"})) for k in ("11", "22", "3", "4")}

    bag2 = DataWorksWriter("shop", "dw_cross_bag", key=None, seed=5)
    one, two = {"id": Raw("1"), "v": "v0"}, {"id": Raw("2"), "v": "v0"}
    inserts = [(None, bag2.message("INSERT", None, one)), (None, bag2.message("INSERT", None, two))]
    bb1, ba1 = bag2.split_update(one, {**one, "v": "v1"})
    bb2, ba2 = bag2.split_update(two, {**two, "v": "v1"})
    batch1 += [*inserts, ba1, bb2]
    batch2 += [bb1, ba2]
    world.truths[("dataworks", "dw_cross_bag")] = sorted(
        (decoded(bag2.image({**r, "v": "v1"})) for r in (one, two)), key=canonical)
    world.keyless.add("dw_cross_bag")

    batch1.append((None, None))  # a null-value record: a tombstone control event
    batch2 += [(None, "{not json"), (None, keyed.message("INSERT", None, {"id": Raw("900")})[:60]),
               (None, DataWorksV2Writer("shop", "dw_accounts").message("INSERT", None, {"id": 901})),
               (None, '{"database": "shop", "table": "dw_accounts", "type": "insert", "data": {"id": 902}}')]
    world.garbage["dataworks"] = [
        "invalid JSON", "invalid JSON",
        "shape does not match dataworks: INSERT without payload.after.dataColumn",
        "shape does not match dataworks: no payload",
    ]
    return batch1, batch2


def _v2_streams(world: World) -> tuple[list[Message], list[Message]]:
    w = DataWorksV2Writer("oms", "v2_orders")
    changes, state = history(seed=21, steps=34, truncate_at=14)
    messages: list[Message] = []
    for i, change in enumerate(changes):
        messages += w.render(change)
        if i % 10 == 3:
            messages.append(w.heartbeat())
    messages.append((None, w.message("ALTER", None, None, ddl="ALTER TABLE v2_orders ADD COLUMN c1 INT")))
    world.truths[("dataworks-v2", "v2_orders")] = _keyed_truth(state)
    # one batch: the gold MERGE across batches is format-agnostic; late older changes still
    # arrive at higher offsets inside the batch
    (batch1,) = hard_delivery(messages, seed=22, batches=1)
    batch2: list[Message] = []
    batch1 += [(None, "[1, 2]"),
               (None, DataWorksWriter("oms", "v2_orders").message("INSERT", None, {"id": Raw("1")}))]
    world.garbage["dataworks-v2"] = [
        "invalid JSON", "shape does not match dataworks-v2: INSERT without payload.after.data"]
    return batch1, batch2


def _maxwell_streams(world: World) -> tuple[list[Message], list[Message]]:
    w = MaxwellWriter("shop", "mx_items")
    changes, state = history(seed=31, steps=40)
    messages: list[Message] = [(None, json.dumps({"database": "shop", "table": "mx_items",
                                                  "type": "bootstrap-start", "ts": 1596684800, "data": {}}))]
    for change in changes:
        messages += w.render(change)
    messages.append((None, json.dumps({"type": "table-create", "database": "shop", "table": "mx_new",
                                       "def": {"columns": []}, "ts": 1596690000,
                                       "sql": "create table mx_new (id int primary key)"})))
    world.truths[("maxwell-json", "mx_items")] = _keyed_truth(state)
    batch1, batch2 = hard_delivery(messages, seed=32)
    batch2 += [(None, '{"database": "shop", "table": "mx_items", "type": "insert", "data": {"id": 1'),
               (None, '{"table": "SRC.T", "op_type": "I", "pos": "1", "after": {"id": 1}}'),
               (None, '{"database": "shop", "table": "mx_items", "type": "insert", "data": [1]}')]
    world.garbage["maxwell-json"] = [
        "invalid JSON", "shape does not match maxwell-json: no type",
        "shape does not match maxwell-json: insert without a data object"]
    return batch1, batch2


def _ogg_streams(world: World) -> tuple[list[Message], list[Message]]:
    w = OggWriter("SRC.OGG_ITEMS")
    changes, state = history(seed=41, key="ID", steps=40)
    messages: list[Message] = []
    for change in changes:
        messages += w.render(change)
    world.truths[("ogg-json", "OGG_ITEMS")] = _keyed_truth(state, "ID")
    # one batch: the gold MERGE across batches is format-agnostic; late older changes still
    # arrive at higher offsets inside the batch
    (batch1,) = hard_delivery(messages, seed=42, batches=1)
    batch2: list[Message] = []
    batch1 += [(None, '{"data": {"id": 1}, "metadata": {"operation": "insert"}}'),
               (None, '{"table": "SRC.OGG_ITEMS", "op_type": "D", "pos": "5"}')]
    world.garbage["ogg-json"] = [
        "shape does not match ogg-json: no op_type", "shape does not match ogg-json: op_type D without before"]
    return batch1, batch2


def _dms_streams(world: World) -> tuple[list[Message], list[Message]]:
    w = DmsWriter("dms", "dms_items")
    changes, state = history(seed=51, steps=30, key_changes=False)
    messages: list[Message] = []
    for change in changes:
        messages += w.render(change)
    messages.append((None, json.dumps({"metadata": {
        "timestamp": "2024-10-27T12:40:00.000000Z", "record-type": "control", "operation": "add-column",
        "partition-key-type": "task-id", "schema-name": "dms", "table-name": "dms_items"}})))
    world.truths[("aws-dms-json", "dms_items")] = sorted((decoded(r) for r in state.values()), key=canonical)
    world.keyless.add("dms_items")
    # one batch: the gold MERGE across batches is format-agnostic; late older changes still
    # arrive at higher offsets inside the batch
    (batch1,) = hard_delivery(messages, seed=52, batches=1)
    batch2: list[Message] = []
    batch1 += [(None, '{"database": "dms", "table": "dms_items", "type": "insert", "data": {"id": 1}}'),
               (None, '{"data": {"id": 1}, "metadata": {"record-type": "data"}}')]
    world.garbage["aws-dms-json"] = [
        "shape does not match aws-dms-json: no metadata",
        "shape does not match aws-dms-json: no metadata.operation"]
    return batch1, batch2


#: only the models these tests read, and the data tests whose every parent is among them
BUILD = ("--select", "+cdc_current_state", "+cdc_control_events", "+cdc_quarantine",
         "--indirect-selection", "cautious")


@pytest.fixture(scope="module")
def world(_shared_lakehouse) -> World:
    lakehouse = _shared_lakehouse
    lakehouse.reset()
    w = World(lakehouse)
    streams = {"dataworks": _dataworks_streams(w), "dataworks-v2": _v2_streams(w),
               "maxwell-json": _maxwell_streams(w), "ogg-json": _ogg_streams(w),
               "aws-dms-json": _dms_streams(w)}
    topics = {fmt: Topic(f"scenario.{fmt}") for fmt in FORMATS}
    first_lines = {}
    for fmt in FORMATS:
        fixtures = Topic(f"fixtures.{fmt}").envelopes([m for _, m in fixture_messages(fmt)[0]])
        first_lines[fmt] = topics[fmt].envelopes(streams[fmt][0])
        lakehouse.ingest(fixtures + first_lines[fmt], fmt=fmt)
    if SHARED.joinpath("conformance", "paimon").exists():
        for folder, fmt in PAIMON.items():
            files = sorted(SHARED.joinpath("conformance", "paimon", folder).rglob("*.txt"))
            w.paimon_topics[folder] = [m for f in files for m in paimon_messages(f)]
            lakehouse.ingest(w.paimon_topics[folder], fmt=fmt, topic=f"paimon.{folder}")
    lakehouse.build(*BUILD, tests=False)
    w.interim = {t: w.gold("dataworks", t) for t in ("dw_cross", "dw_cross_bag")}
    for fmt in FORMATS:
        if streams[fmt][1]:
            # the second batch, plus lines of the first delivered again (same offsets)
            lakehouse.ingest(first_lines[fmt][:3] + topics[fmt].envelopes(streams[fmt][1]), fmt=fmt)
    lakehouse.build(*BUILD)
    return w


# --- vendor-document fixtures ----------------------------------------------------------------


def _outcomes(world: World, fmt: str) -> dict[int, list[dict[str, Any]]]:
    rows = world.parsed(f"kafka_topic = 'fixtures.{fmt}'")
    by_offset: dict[int, list[dict[str, Any]]] = {}
    for r in rows:
        by_offset.setdefault(r["kafka_offset"], []).append(r)
    return by_offset


def _change_view(row: dict[str, Any], expected: dict[str, Any]) -> dict[str, Any]:
    """The silver row in the terms of a fixture's expected change (only the fields it names)."""
    view = {
        "op": row["op"], "vendor_op": row["vendor_op"], "source_database": row["source_database"],
        "source_schema": row["source_schema"], "source_table": row["source_table"],
        "key_columns": row["key_columns"], "pk": exact(row["pk"]), "before_pk": exact(row["before_pk"]),
        "before": exact(row["before_image"]), "after": exact(row["after_image"]),
        "column_types": exact(row["column_types"]), "vendor_sequence": row["vendor_sequence"],
        "transaction_id": row["transaction_id"], "statement": row["statement"],
        "event_time": row["event_time_text"],
        "control_kind": row["control_kind"],
    }
    return {k: view[k] for k in expected}


@pytest.mark.parametrize("fmt", FORMATS)
def test_vendor_document_examples_give_their_expected_changes(world, fmt):
    messages, expected = fixture_messages(fmt)
    outcomes = _outcomes(world, fmt)
    assert sorted(outcomes) == list(range(len(messages)))
    for offset, (name, _) in enumerate(messages):
        want, got = expected["messages"][name], outcomes[offset]
        kinds = {r["record_kind"] for r in got}
        assert kinds == {want["outcome"]}, (name, got)
        if want["outcome"] == "quarantine":
            assert [r["quarantine_reason"] for r in got] == [want["reason"]], name
        elif want["outcome"] == "control":
            fields = {k: v for k, v in want.items() if k != "outcome"}
            assert len(got) == 1 and _change_view(got[0], fields) == fields, name
        else:
            assert len(got) == len(want["changes"]), name
            views = [_change_view(r, c) for r, c in zip(got, want["changes"], strict=True)]
            assert views == want["changes"], name
    live = {}
    for table in expected["tables"]:
        live.update({(table, pk): row for pk, row in world.gold(fmt, table).items()})
    assert live == {(s["table"], canonical(s["pk"])): s["row"] for s in expected["current_state"]}


# --- hard delivery against the true final state ---------------------------------------------


SCENARIOS = [("dataworks", "dw_accounts"), ("dataworks", "dw_rowid"), ("dataworks", "dw_bag"),
             ("dataworks", "dw_cross"), ("dataworks", "dw_cross_bag"), ("dataworks-v2", "v2_orders"),
             ("maxwell-json", "mx_items"), ("ogg-json", "OGG_ITEMS"), ("aws-dms-json", "dms_items")]


@pytest.mark.parametrize(("fmt", "table"), SCENARIOS)
def test_hard_delivery_gives_the_true_final_state(world, fmt, table):
    gold = world.gold(fmt, table)
    truth = world.truths[(fmt, table)]
    if table in world.keyless:
        # a table without key is a multiset: its rows are their own identity
        assert sorted(gold.values(), key=canonical) == truth
        assert all(exact(pk) == row for pk, row in gold.items())
    else:
        assert gold == truth


def test_split_updates_become_one_update_whatever_the_batches(world):
    rows = world.parsed("source_table = 'dw_cross'")
    by_op = Counter((r["vendor_op"], r["record_kind"]) for r in rows)
    # 4 inserts, 4 UPDATE_AFTER changes, 1 stale full-load row; of the 4 UPDATE_BEFOR halves the
    # two that came before their UPDATE_AFTER are control events, the two that came after an
    # UPDATE_AFTER applied without them are deletes of their own key
    assert by_op == Counter({("INSERT", "change"): 5, ("UPDATE_AFTER", "change"): 4,
                             ("UPDATE_BEFOR", "control"): 2, ("<late UPDATE_BEFOR>", "change"): 2})
    after_halves = {exact(r["pk"])["id"]: r for r in rows if r["vendor_op"] == "UPDATE_AFTER"}
    # the after half of batch 2 found its before half of batch 1: one update that moves the key
    assert exact(after_halves["11"]["before_pk"]) == {"id": "1"}
    assert exact(after_halves["4"]["before_image"]) == {"id": "4", "v": "v0", "blob": ""}
    assert after_halves["22"]["before_image"] is None
    control = world.parsed("source_table = 'dw_cross' and record_kind = 'control'")
    assert {r["control_kind"] for r in control} == {"update_before"}
    # after batch 1 alone: a before half deleted nothing, an after half alone upserted its row
    assert set(world.interim["dw_cross"]) == {canonical({"id": k}) for k in ("1", "22", "3", "4", "2")}
    assert world.interim["dw_cross"][canonical({"id": "3"})]["v"] == "v1"
    assert world.interim["dw_cross"][canonical({"id": "4"})]["v"] == "v0"


def test_every_dataworks_update_before_half_is_accounted_for(world):
    rows = world.parsed("source_format = 'dataworks' and kafka_topic = 'scenario.dataworks'")
    befor = [r for r in rows if r["vendor_op"] in ("UPDATE_BEFOR", "<late UPDATE_BEFOR>")]
    assert befor and all(
        (r["record_kind"], r["control_kind"]) == ("control", "update_before")
        or (r["record_kind"], r["op"]) == ("change", "d") for r in befor)
    # an UPDATE_AFTER of a split update carries the before image of its half when both were seen
    # in one batch, so its key change (if any) is known
    paired = [r for r in rows if r["vendor_op"] == "UPDATE_AFTER" and r["before_image"]]
    assert len(paired) > 5


def test_full_load_rows_sort_before_incremental_changes(world):
    full = world.parsed("(vendor_op = 'bootstrap-insert' or vendor_op = 'load' "
                        "or (source_format = 'dataworks' and vendor_sequence = '-1'))")
    assert {r["source_format"] for r in full} >= {"dataworks", "maxwell-json", "aws-dms-json"}
    assert all(r["apply_order"].startswith("0.") for r in full)
    assert {r["op"] for r in full if r["source_format"] != "dataworks"} == {"r"}


def test_dataworks_values_and_types_are_kept_as_sent(world):
    changes = world.lakehouse.rows(
        "select after_image, column_types from silver.cdc_changes "
        "where source_table = 'dw_accounts' and op in ('c', 'u')")
    born = set()
    for c in changes:
        image = json.loads(c["after_image"])  # DECIMAL stays a JSON string, DATE a JSON number
        assert isinstance(image["amount"], str) and isinstance(image["born"], int)
        born.add(image["born"])
        assert json.loads(c["column_types"]) == {
            "id": {"type": "LONG"}, "amount": {"type": "DOUBLE"}, "note": {"type": "STRING"},
            "born": {"type": "DATE"}, "big": {"type": "LONG"}, "version": {"type": "LONG"},
            "blob": {"type": "BYTES"}}
    assert -2208988800000 in born  # 1900-01-01, before 1970: negative epoch milliseconds


def test_control_events_of_every_format(world):
    control = world.lakehouse.rows(
        "select source_format, control_kind, vendor_op, statement from silver.cdc_control_events "
        "where kafka_topic like 'scenario.%'")
    kinds = Counter((r["source_format"], r["control_kind"]) for r in control)
    assert kinds[("dataworks", "heartbeat")] >= 4
    assert kinds[("dataworks", "transaction")] >= 2
    assert kinds[("dataworks", "tombstone")] == 1
    assert kinds[("dataworks-v2", "heartbeat")] >= 3
    assert kinds[("maxwell-json", "snapshot")] >= 1
    statements = {(r["source_format"], r["statement"]) for r in control if r["control_kind"] == "ddl"}
    assert statements >= {("dataworks", "ALTER TABLE dw_accounts ADD COLUMN c1 INT"),
                          ("dataworks-v2", "ALTER TABLE v2_orders ADD COLUMN c1 INT"),
                          ("maxwell-json", "create table mx_new (id int primary key)"),
                          ("aws-dms-json", None)}


@pytest.mark.parametrize("fmt", FORMATS)
def test_garbage_and_wrong_formats_are_quarantined_with_reasons(world, fmt):
    reasons = [r["reason"] for r in world.lakehouse.rows(
        f"select reason from silver.cdc_quarantine where kafka_topic = 'scenario.{fmt}' "
        "order by kafka_offset")]
    assert sorted(reasons) == sorted(world.garbage[fmt])


def test_every_bronze_record_ends_in_exactly_one_outcome(world):
    bronze = world.lakehouse.rows("select count(*) as n from bronze.kafka_records")[0]["n"]
    outcomes = world.lakehouse.rows(
        "select kafka_topic, kafka_partition, kafka_offset, count(distinct record_kind) as kinds, "
        "count(*) as n, max(record_kind) as kind from silver.cdc_parsed "
        "group by kafka_topic, kafka_partition, kafka_offset")
    assert len(outcomes) == bronze
    assert all(o["kinds"] == 1 and (o["kind"] == "change" or o["n"] == 1) for o in outcomes)


# --- Apache Paimon's real samples --------------------------------------------------------------


def _paimon_truth(folder: str, messages: list[str]) -> tuple[dict[tuple, dict], set[tuple]]:
    """The current state the samples describe, read message by message by each vendor's rules:
    (namespace, table, pk) -> row, applied in the vendor's order (then the Kafka offset); and
    every (namespace, table) the messages name."""
    parsed = [(i, json.loads(m, parse_float=str, parse_int=str)) for i, m in enumerate(messages)]
    state: dict[tuple, dict] = {}
    tables: set[tuple] = set()

    def key(ns, table, cols, image):
        def find(c):
            if c in image:
                return image[c]
            return next(v for k, v in image.items() if k.lower() == c.lower())
        ident = {c: find(c) for c in cols} if cols else image
        tables.add((ns, table))
        return (ns, table, canonical(ident))

    if folder == "aliyun":
        def order(item):
            p = item[1]["payload"]
            seq = p["sequenceId"]
            return ("0" if seq == "-1" else "1", int(seq) if seq.isdigit() else 0, item[0])
        for _, m in sorted(parsed, key=order):
            src, p = m["schema"]["source"], m["payload"]
            image = (p["after"] or p["before"])["dataColumn"]
            k = key(src["dbName"], src["tableName"], m["schema"]["primaryKey"], image)
            if p["op"] == "DELETE":
                state.pop(k, None)
            else:
                state[k] = image
    elif folder == "maxwell":
        for _, m in parsed:  # no binlog position in the samples: Kafka order
            k = key(m["database"], m["table"], m.get("primary_key_columns"), m["data"])
            if m["type"] == "delete":
                state.pop(k, None)
            else:
                state[k] = m["data"]
    elif folder == "ogg":
        for _, m in sorted(parsed, key=lambda item: (int(item[1]["pos"]), item[0])):
            schema, table = m["table"].split(".")
            if m["op_type"] == "D":
                state.pop(key(schema, table, m.get("primary_keys"), m["before"]), None)
            else:
                after = {**(m.get("before") or {}), **m["after"]}
                state[key(schema, table, m.get("primary_keys"), after)] = after
    elif folder == "aws-dms":
        # no key in the messages: each table is a multiset, and a message whose change (op, row,
        # timestamp) was seen before is that change delivered again (SPEC rules 1 and 5)
        copies: dict[tuple, int] = {}
        seen: set[tuple] = set()
        for _, m in sorted(parsed, key=lambda item: (item[1]["metadata"]["timestamp"], item[0])):
            meta, data = m["metadata"], m["data"]
            row = {c: v for c, v in data.items() if not (c.startswith("BI_") and c[3:] in data)}
            before = {c[3:]: v for c, v in data.items() if c.startswith("BI_") and c[3:] in data}
            ns, table = meta["schema-name"], meta["table-name"]
            k = key(ns, table, None, row)
            if (meta["operation"], k, meta["timestamp"]) in seen:
                continue
            seen.add((meta["operation"], k, meta["timestamp"]))
            if meta["operation"] == "delete":
                copies[k] = copies.get(k, 0) - 1
                continue
            if before:
                old = key(ns, table, None, before)
                copies[old] = copies.get(old, 0) - 1
            copies[k] = copies.get(k, 0) + 1
            state[k] = row
        state = {k: row for k, row in state.items() if copies.get(k, 0) > 0}
    return state, tables


@pytest.mark.parametrize("folder", sorted(PAIMON))
def test_paimon_samples_give_the_state_their_messages_describe(world, folder):
    needs_shared("conformance", "paimon", folder)
    fmt = PAIMON[folder]
    truth, tables = _paimon_truth(folder, world.paimon_topics[folder])
    rows = world.lakehouse.rows(
        "select coalesce(source_database, source_schema) as ns, source_table, pk, row "
        f"from gold.cdc_current_state where source_format = '{fmt}'")
    gold = {(r["ns"], r["source_table"], canonical(exact(r["pk"]))): exact(r["row"])
            for r in rows if (r["ns"], r["source_table"]) in tables}
    assert gold == truth
    assert truth  # the samples describe live rows
    if folder == "aliyun":
        # full-load row (sequenceId -1) updated in place; a delete of a row never seen
        assert list(truth.values()) == [{"id": "2", "val": "2.200000", "name": "a", "create_time": "1731661114000"}]
        assert world.lakehouse.rows(
            "select count(*) as n from silver.cdc_parsed where kafka_topic = 'paimon.aliyun' "
            "and record_kind <> 'change'") == [{"n": 0}]

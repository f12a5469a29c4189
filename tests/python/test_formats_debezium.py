"""debezium-json and debezium-flat: the vendor documents' examples and Apache Paimon's real messages.

* The examples of the documents (dtle, CloudCanal, OceanBase OMS Debezium / DebeziumFlatten),
  written as kcat -J envelopes in tests/fixtures/debezium-json/ and debezium-flat/, against
  the canonical rows and final states in tests/fixtures/debezium-json/expected.json.
* Paimon's samples (../shared/conformance/paimon/debezium), when ../shared is there: folders,
  one per situation Paimon tests (schema evolution, nested types, null values, all MySQL
  types, ...), each a short history of `test.product`-like tables written as several files
  (batches). The messages carry no Kafka key and no binlog position (`file` "", `pos` 0):
  tables are multisets ordered by Kafka offset, so an update replaces its before row and a
  delete removes its row. Folders reuse table names with other histories, so every folder's
  database is renamed `<db>__<folder>` on the way in (the only change made to a message). The
  truth is computed here from the messages by Debezium's rules; gold must equal it.

One lakehouse for the module: the first batch (the examples, the first file of every Paimon
folder), a build, the second batch (the rest), a build.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from cdc_messages import envelope
from conftest import SHARED, needs_shared
from dataworks_messages import paimon_messages

ROOT = SHARED / "conformance" / "paimon" / "debezium"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _loads(text: str) -> Any:
    return json.loads(text, parse_float=str, parse_int=str)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _folders() -> dict[str, list[Path]]:
    """Sample folder (e.g. ``table/nullvalue``) -> its files in batch order."""
    folders: dict[str, list[Path]] = {}
    for path in sorted(ROOT.rglob("*.txt")):
        folders.setdefault(str(path.parent.relative_to(ROOT)), []).append(path)
    return folders


def _rename_database(message: str, suffix: str) -> str:
    """The message with its source database renamed (exact text of everything else kept)."""
    return re.sub(r'("db"\s*:\s*")([^"]*)(")', lambda m: f"{m[1]}{m[2]}__{suffix}{m[3]}", message, count=1)


def _payload(message: str) -> dict[str, Any]:
    msg = _loads(message)
    return msg["payload"] if isinstance(msg.get("payload"), dict) else msg


def _truth(messages: list[str]) -> dict[tuple[str, str], list[str]]:
    """(database, table) -> the sorted canonical rows the messages leave, applied in order."""
    state: dict[tuple[str, str], Counter[str]] = {}
    for message in messages:
        p = _payload(message)
        rows = state.setdefault((p["source"]["db"], p["source"]["table"]), Counter())
        if p.get("before") is not None and p["op"] in ("u", "d"):
            rows[_canonical(p["before"])] -= 1
        if p.get("after") is not None and p["op"] in ("c", "r", "u"):
            rows[_canonical(p["after"])] += 1
    return {t: sorted(row for row, n in rows.items() for _ in range(n)) for t, rows in state.items()}


def _expected() -> list[dict[str, Any]]:
    return _loads((FIXTURES / "debezium-json" / "expected.json").read_text(encoding="utf-8"))["files"]


@pytest.fixture(scope="module")
def paimon_lake(_shared_lakehouse):
    lake = _shared_lakehouse
    lake.reset()
    first: dict[str, list[str]] = {}  # format -> envelope lines of batch 1
    for case in _expected():
        lines = (FIXTURES / case["file"]).read_text(encoding="utf-8").splitlines()
        first.setdefault(case["format"], []).extend(line for line in lines if line.strip())
    topics: dict[str, list[str]] = {}
    later: list[str] = []
    if ROOT.exists():
        for folder, files in sorted(_folders().items()):
            topic = "paimon.debezium." + re.sub(r"[^a-z0-9]+", "_", folder.lower())
            suffix = topic.removeprefix("paimon.debezium.")
            batches = [[_rename_database(m, suffix) for m in paimon_messages(path)] for path in files]
            topics[topic] = [m for batch in batches for m in batch]
            lines = [envelope(topic, 0, offset, None, m) for offset, m in enumerate(topics[topic])]
            first["debezium-json"].extend(lines[:len(batches[0])])
            later.extend(lines[len(batches[0]):])
    for fmt, lines in first.items():
        lake.ingest(lines, fmt=fmt)
    lake.build(tests=False)
    if later:
        lake.ingest(later, fmt="debezium-json")
    lake.build()
    return lake, topics


def _matches(actual: Any, expected: Any, json_text: bool) -> bool:
    if json_text:
        return (None if actual is None else _loads(actual)) == expected
    return actual == expected


@pytest.mark.parametrize("case", _expected(), ids=lambda c: c["file"])
def test_document_examples_give_their_canonical_rows(paimon_lake, case):
    lake, _ = paimon_lake
    got = {r["kafka_offset"]: r for r in lake.rows(
        f"select * from silver.cdc_parsed where kafka_topic = '{case['topic']}'")}
    assert sorted(got) == list(range(len(case["rows"])))
    columns = {"kind": "record_kind", "before": "before_image", "after": "after_image"}
    problems = [
        f"{want['case']}: {name} = {got[offset][columns.get(name, name)]!r}, expected {value!r}"
        for offset, want in enumerate(case["rows"]) for name, value in want.items()
        if name != "case" and not _matches(got[offset][columns.get(name, name)], value,
                                           name in ("pk", "before", "after"))
    ]
    assert problems == []
    if "final_state" in case:
        state = case["final_state"]
        rows = lake.rows("select row from gold.cdc_current_state where source_table = "
                         f"'{state['table']}' and source_format = '{state.get('format', case['format'])}'")
        assert sorted(_canonical(_loads(r["row"])) for r in rows) == sorted(map(_canonical, state["rows"]))


def test_every_sample_folder_gives_the_state_its_messages_describe(paimon_lake):
    needs_shared("conformance", "paimon", "debezium")
    lake, topics = paimon_lake
    truth: dict[tuple[str, str], list[str]] = {}
    for messages in topics.values():
        truth.update(_truth(messages))
    gold: dict[tuple[str, str], list[str]] = {t: [] for t in truth}
    for r in lake.rows("select source_database, source_table, row from gold.cdc_current_state "
                       "where source_format = 'debezium-json'"):
        if (r["source_database"], r["source_table"]) in gold:  # not the document examples
            gold[(r["source_database"], r["source_table"])].append(_canonical(_loads(r["row"])))
    assert {t: sorted(rows) for t, rows in gold.items()} == truth
    assert sum(len(rows) for rows in truth.values()) > 20  # the samples describe live rows


def test_every_sample_record_is_a_change(paimon_lake):
    needs_shared("conformance", "paimon", "debezium")
    lake, topics = paimon_lake
    outcomes = Counter(
        r["record_kind"] for r in lake.rows(
            "select record_kind from silver.cdc_parsed where kafka_topic like 'paimon.debezium.%'"))
    assert outcomes == Counter({"change": sum(len(m) for m in topics.values())})


def test_all_types_sample_keeps_every_value_as_sent(paimon_lake):
    """MySQL's every type through Debezium (bytes decimals, bits, dates as days, ...): the row
    in gold is the message's after image, token for token."""
    needs_shared("conformance", "paimon", "debezium")
    lake, topics = paimon_lake
    [message] = topics["paimon.debezium.table_schema_alltype"]
    after = _payload(message)["after"]
    [row] = lake.rows("select row from gold.cdc_current_state where source_table = 'all_types_table'")
    assert _loads(row["row"]) == after
    assert len(after) > 50

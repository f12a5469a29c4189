"""What every fast parser test does: land messages, build silver twice, require the same rows.

A fast parser (jvm/functions, FastParsers) reads the common message of its format in one pass
in the JVM and returns the parser contract's columns; any other message it leaves to the SQL
parser of its format (macros/cdc_change_columns.sql, cdc_fast_parsers). The SQL parsers stay
the definition of each format, so silver.cdc_parsed is built twice over the same bronze
records, once with the fast parsers off (``cdc_fast_parsers: false``) and once on, and every
row must be the same; and the messages a test calls common must be the ones the JVM reads.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from cdc_messages import envelope
from conftest import PROJECT

sys.path.insert(0, str(PROJECT / "bench"))

import generate  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

#: An edge case: (name, Kafka key, Kafka value). Names that start with "sql:" are messages the
#: fast parser must leave to the SQL parser; all others it must read itself.
Edge = tuple[str, str | None, str | None]


def lines_of(path: Path) -> list[str]:
    """The non-empty lines of a fixture or sample file."""
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def bench_lines(fmt: str, changes: int = 4000) -> list[str]:
    """kcat -J lines of the benchmark generator's topics of ``fmt``."""
    offsets: dict[str, int] = {}
    lines = []
    for record_fmt, topic, key, value, ts in generate.Source(tables=8, seed=7).changes(changes):
        if record_fmt != fmt:
            continue
        offset = offsets[topic] = offsets.get(topic, -1) + 1
        lines.append(envelope(topic, 0, offset, key, value, ts))
    return lines


def land_edges(lakehouse, fmt: str, topic: str, edges: list[Edge]) -> None:
    """Land the edge cases as offsets 0.. of ``topic``."""
    lakehouse.ingest([envelope(topic, 0, i, key, value) for i, (_, key, value) in enumerate(edges)], fmt=fmt)


def land_values(lakehouse, fmt: str, topics: dict[str, list[str]]) -> None:
    """Land the bare message values of several topics (offsets 0.. in each) in one ingest.

    What ``lakehouse ingest --from-file --topic`` lands for each, as one dump of kcat -J lines:
    an ingest costs a second or two however small, and the conformance folders hold dozens of
    files, a topic each.
    """
    lines = [envelope(topic, 0, offset, None, value)
             for topic, values in topics.items() for offset, value in enumerate(values)]
    if lines:  # none when ../shared is not beside the checkout
        lakehouse.ingest(lines, fmt=fmt)


def taken_by_jvm(lakehouse, function: str, topic: str, edges: list[Edge]) -> dict[str, bool]:
    """Edge name -> whether ``cdc_lakehouse.json.<function>`` read it (true) or left it (false)."""
    rows = lakehouse.spark.sql(f"""
        select `offset`,
            cdc_lakehouse.json.{function}(cast(value as string), cast(key as string), topic, `partition`, `offset`)
                is not null as fast
        from bronze.kafka_records where topic = '{topic}'""").collect()
    fast = {r.offset: r.fast for r in rows}
    return {name: fast[i] for i, (name, _, _) in enumerate(edges)}


def expected_taken(edges: list[Edge]) -> dict[str, bool]:
    return {name: not name.startswith("sql:") for name, _, _ in edges}


def jvm_share(lakehouse, function: str, topic_like: str) -> float:
    """Share of the records of topics LIKE ``topic_like`` that the JVM function reads."""
    row = lakehouse.spark.sql(f"""
        select avg(case when cdc_lakehouse.json.{function}(cast(value as string), cast(key as string),
            topic, `partition`, `offset`) is not null then 1.0 else 0.0 end) as share
        from bronze.kafka_records where topic like '{topic_like}' and value is not null""").collect()[0]
    return float(row.share)


def parsed_rows(lakehouse, fast: bool, extra_vars: dict | None = None) -> list[tuple]:
    """silver.cdc_parsed built from scratch over the bronze records, as sorted tuples of reprs."""
    lakehouse.build("--select", "+cdc_parsed", "--full-refresh",
                    "--vars", json.dumps({"cdc_fast_parsers": fast, **(extra_vars or {})}), tests=False)
    columns = [c for c in lakehouse.spark.table("silver.cdc_parsed").columns if c != "parsed_at"]
    rows = lakehouse.spark.sql(
        f"select {', '.join(f'`{c}`' for c in columns)} from silver.cdc_parsed").collect()
    return sorted(tuple(map(repr, r)) for r in rows)


def assert_same_rows(lakehouse, minimum: int, extra_vars: dict | None = None) -> None:
    """silver.cdc_parsed with the fast parsers equals silver.cdc_parsed without, row for row."""
    with_sql = parsed_rows(lakehouse, fast=False, extra_vars=extra_vars)
    with_fast = parsed_rows(lakehouse, fast=True, extra_vars=extra_vars)
    assert len(with_sql) >= minimum
    sql_rows = set(with_sql)
    fast_rows = set(with_fast)
    assert [r for r in with_fast if r not in sql_rows][:5] == [], "rows only the fast parser gives"
    assert [r for r in with_sql if r not in fast_rows][:5] == [], "rows only the SQL parser gives"
    assert with_fast == with_sql

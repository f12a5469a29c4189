"""A real PostgreSQL 15 through Debezium 3.5 (pgoutput) into Kafka and the lakehouse, equal to its own rows.

One database, one lakehouse, three builds: the snapshot of rows written before Debezium started
(taken while transactions go on in one table), then a stream (with the connector killed in the
middle and replaying from its stored offset), then more. After each build
``gold.cdc_current_state`` and every typed view are compared with the database's own rows,
column by column (see real_databases.py for the canonical text), and at the end the SCD2 history
of ``accounts`` with the states the workload went through. A second connector with
ExtractNewRecordState (``debezium-smt``) captures the same database.
"""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from kafka_fixtures import Broker, ingest_kafka, run_lakehouse
from kafka_fixtures import kafka_broker_fixture as kafka_broker_fixture  # noqa: F401
from lakehouse.local import debezium, pg_source
from lakehouse.ports import free_port
from real_databases import (
    Dump,
    build_failure,
    busy_transactions,
    current_state_rows,
    differences,
    history_versions,
    pg_rows,
    read_gold,
    remove_dir,
    scratch_dir,
    topic_schemas,
    typed_view,
    typed_view_rows,
    workload_versions,
    write_during_snapshot,
)

PREFIX = "realpg"
SMT_PREFIX = "realpgsmt"
DATABASE = "shop"
TABLES = ("all_types", "accounts", "docs", "bag", "evolving", "emptied", "plain", "busy")
#: Tables without a primary key: compared as multisets, not by key.
KEYLESS = {"bag"}
KEYS = {"all_types": ["id"], "accounts": ["id"], "docs": ["id"], "evolving": ["id"], "emptied": ["id"],
        "plain": ["id"], "busy": ["id"]}  # fmt: skip
#: Rows of the table written to while the connector takes its snapshot.
BUSY_ROWS = 3000  # as SNAPSHOT_SQL inserts them
SMT_TABLES = ("accounts", "all_types")
SMT_PROPERTIES = {
    "table.include.list": ",".join(f"public.{t}" for t in SMT_TABLES),
    "transforms": "unwrap,route",
    "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
    # Debezium 3 spells delete.handling.mode=rewrite with drop.tombstones=false this way: a
    # delete is a row with __deleted "true", then a tombstone (test_real_mariadb.py keeps the
    # default, where a delete is the tombstone alone).
    "transforms.unwrap.delete.tombstone.handling.mode": "rewrite-with-tombstone",
    # The table comes from the topic: a database name of its own keeps it apart from the envelope's.
    "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
    "transforms.route.regex": r"([^.]+)\.([^.]+)\.([^.]+)",
    "transforms.route.replacement": "$1.$2_smt.$3",
}

SNAPSHOT_SQL = """
create type mood as enum ('sad', 'ok', 'happy');
create table all_types (
    id int primary key, c_small smallint, c_int int, c_big bigint, c_num numeric(65,30), c_num_free numeric,
    c_real real, c_double double precision, c_money money, c_bool boolean, c_text text, c_varchar varchar(20),
    c_char char(5), c_bytea bytea, c_date date, c_time time, c_time3 time(3), c_timetz timetz, c_ts timestamp,
    c_tstz timestamptz, c_interval interval, c_json json, c_jsonb jsonb, c_uuid uuid, c_int_arr int[],
    c_text_arr text[], c_inet inet, c_mood mood, c_xml xml, c_bit bit(1), c_bits bit(12)
);
insert into all_types values
  (1, -32768, -2147483648, -9223372036854775808, 12345678901234567890123456789012345.123456789012345678901234567890,
   -0.000000000000000000000000000001, 3.14159, 2.718281828459045, 1234.56, true, 'héllo "world" \\ 😀', 'vc',
   'ab', '\\x00ff10', '1950-06-15', '23:59:59.999999', '10:11:12.345', '10:11:12+02', '1969-12-31 23:59:59.5',
   '1900-01-01 00:00:00+05:30', '3 days 04:05:06.789', '{"b": 1, "a": [1.10, null]}', '{"b": 1, "a": [1.10]}',
   'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{1,NULL,3}', '{"x","y z",""}', '192.168.0.1/24', 'happy',
   '<a>x</a>', B'1', B'101100111000'),
  (2, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, null,
   null, null, null, null, null, null, null, null, null, null, null, null);
create table accounts (id int primary key, owner text not null, balance numeric(12,2));
insert into accounts values (1, 'ann', 10.00), (2, 'bob', 20.50), (3, 'cy', 0);
create table docs (id int primary key, title text, body text);
insert into docs select i, 'doc ' || i, (select string_agg(md5(random()::text || i || g), '')
                                         from generate_series(1, 640) g) from generate_series(1, 3) i;
create table bag (a int, b text);
alter table bag replica identity full;
insert into bag values (1, 'same'), (1, 'same'), (1, 'same'), (2, 'other');
create table evolving (id int primary key, v int, name varchar(10));
insert into evolving values (1, 1, 'one'), (2, 2, 'two');
create table emptied (id int primary key, v text);
insert into emptied values (1, 'a'), (2, 'b'), (3, 'c');
create table plain (id int primary key, v text);
insert into plain values (1, '');
create table busy (id int primary key, v int, pad text);
insert into busy select i, 0, repeat('p', 200) from generate_series(1, 3000) i;
"""

#: Streaming, first half (the connector is killed after it); each string is one transaction.
STREAM_A = [
    # a multi-row transaction across tables, with pre-1970 values and 65-digit numerics
    """begin;
    insert into all_types (id, c_num, c_num_free, c_ts, c_tstz, c_date, c_text, c_varchar, c_time, c_interval)
      values (3, -99999999999999999999999999999999999.999999999999999999999999999999, 123456789012345678901234567890.5,
              '1901-12-13 20:45:52.123456', '1969-07-20 20:17:40-04', '0001-01-01', '', '', '00:00:00', '-1 day');
    update all_types set c_text = '', c_varchar = null, c_jsonb = '{"k": "v"}' where id = 1;
    delete from all_types where id = 2;
    insert into plain values (2, null), (3, 'x');
    commit;""",
    "update docs set title = 'retitled ' || id where id in (1, 2)",
    "update docs set body = 'short now' where id = 3",
    "update bag set b = 'changed' where ctid = (select ctid from bag where a = 1 limit 1)",
    "delete from bag where ctid = (select ctid from bag where a = 1 and b = 'same' limit 1)",
]
STREAM_B = [
    "truncate emptied",
    "insert into emptied values (10, 'after truncate')",
    "alter table evolving add column extra text",
    "update evolving set extra = 'e1' where id = 1",
    "alter table evolving alter column v type bigint",
    "alter table evolving alter column name type varchar(50)",
    "insert into evolving values (3, 9223372036854775807, 'a much longer name than before', null)",
    "alter table evolving rename column name to title",
    "update evolving set title = title || '!'",
]
STREAM_C = [
    "update docs set title = 'again' where id = 1",
    "alter table evolving drop column extra",
    "update evolving set v = v - 1 where id = 3",
    "delete from bag where a = 2",
    "insert into plain values (4, 'z')",
]
#: The history table: one statement at a time, so that each is one version of the rows it touches.
ACCOUNTS_B = [
    "update accounts set balance = 11.25 where id = 1",
    "update accounts set id = 20 where id = 2",
    "delete from accounts where id = 3",
    "insert into accounts values (4, 'dee', 1e9)",
    "update accounts set owner = 'ann marie' where id = 1",
]
ACCOUNTS_C = [
    "update accounts set balance = -0.01 where id = 20",
    "insert into accounts values (3, 'cy again', 3)",
]


@dataclass
class Checked:
    """One comparison point: the differences per relation, and the dump they came from."""

    diffs: dict[str, list[str]]
    dumped: Dump


@dataclass
class Run:
    directory: Path
    info: object
    broker: Broker
    root: Path
    checks: list[Checked] = field(default_factory=list)
    accounts_states: list[list[dict]] = field(default_factory=list)
    build_failures: list[str] = field(default_factory=list)
    smt: dict[str, list[str]] = field(default_factory=dict)

    def sql(self, text: str) -> str:
        return pg_source.sql(self.info, text, DATABASE)

    def engine(self, name: str, prefix: str, extra: dict[str, str] | None = None) -> tuple[dict, Path]:
        state = self.directory / "debezium" / name
        props = debezium.engine_properties(
            "postgres", pg_source.connector_properties(self.info, DATABASE), state, name, prefix, extra)
        return props, state

    def capture(self, name: str = "lakehouse-pg", prefix: str = PREFIX, extra: dict[str, str] | None = None) -> None:
        """Run Debezium until the snapshot is done and the stream is idle: what the database did."""
        props, state = self.engine(name, prefix, extra)
        debezium.run(props, self.broker.bootstrap, state, until_idle=3, timeout=300)

    def capture_smt(self) -> None:
        self.capture("lakehouse-pg-smt", SMT_PREFIX, SMT_PROPERTIES)

    def record_accounts(self) -> None:
        self.accounts_states.append(pg_rows(self.sql, "accounts")[1])

    def ingest_and_build(self, fmt_prefixes: tuple[tuple[str, str], ...] = ((PREFIX, "debezium-json"),)) -> None:
        for prefix, fmt in fmt_prefixes:
            ingest_kafka(self.root, self.broker.bootstrap, "--topic-pattern", rf"{prefix}\..*", "--format", fmt)
        built = run_lakehouse(self.root, "build", timeout=900, check=False)
        if built.returncode != 0:
            # A failing dbt data test is a finding like a wrong row: recorded, and the comparison goes on.
            self.build_failures.append(build_failure(built))

    def compare(self) -> Checked:
        """Every table of the database against gold.cdc_current_state and its typed view."""
        dumped = read_gold(self.root)
        topics = [f"{PREFIX}.public.{t}" for t in TABLES]
        schemas = topic_schemas(self.broker.bootstrap, topics)
        diffs: dict[str, list[str]] = {}
        for table in TABLES:
            cols, db = pg_rows(self.sql, table)
            key = None if table in KEYLESS else KEYS[table]
            state = current_state_rows(dumped, DATABASE, table, cols, schemas[f"{PREFIX}.public.{table}"])
            diffs[f"cdc_current_state {table}"] = differences(f"current_state {table}", cols, db, state, key)
            view = typed_view(dumped, [f"{DATABASE}__{table}", f"public__{table}", f"{DATABASE}__public__{table}"])
            if view is None:
                views = sorted(v for v in dumped.types if v.endswith(f"__{table}"))
                diffs[f"view {table}"] = [f"no typed view of {table} in gold (views ending __{table}: {views})"]
                continue
            diffs[view] = differences(view, cols, db, typed_view_rows(dumped, view, cols), key)
        quarantined = [r for r in dumped.rows.get("silver.cdc_quarantine", [])
                       if r["kafka_topic"].startswith((f"{PREFIX}.", f"{SMT_PREFIX}."))]
        diffs["silver.cdc_quarantine"] = [f"quarantined: {r}" for r in quarantined]
        diffs["lakehouse build"], self.build_failures = self.build_failures, []
        checked = Checked(diffs, dumped)
        self.checks.append(checked)
        return checked


def _kill_mid_stream(run: Run) -> None:
    """Debezium streaming in the background, killed (no offset flush) after part of the stream:
    the next run replays from the last stored offset, so Kafka holds duplicates."""
    props, state = run.engine("lakehouse-pg", PREFIX)
    cmd = debezium.command(props, run.broker.bootstrap, state, until_idle=None)
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        for line in proc.stderr:
            if "streaming" in line or time.monotonic() > deadline:
                break
        for statement in STREAM_A:
            run.sql(statement)
        for statement in ACCOUNTS_B[:2]:
            run.sql(statement)
            run.record_accounts()
        time.sleep(6)  # the stream so far reaches Kafka before the kill
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stderr.close()
    # The next run takes the slot over only once the server has seen the killed connection go.
    deadline = time.monotonic() + 60
    while run.sql("select count(*) from pg_replication_slots where active").strip() != "0":
        assert time.monotonic() < deadline, "the killed connector's replication slot stayed active"
        time.sleep(0.5)


@pytest.fixture(scope="module")
def run(kafka_broker: Broker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """The whole workload, compared after each of its three builds (see the module docstring)."""
    directory = scratch_dir("pg")
    try:
        info = pg_source.start(free_port(), directory, DATABASE)
        r = Run(directory, info, kafka_broker, tmp_path_factory.mktemp("real-pg-lakehouse"))
        r.sql(SNAPSHOT_SQL)
        # transactions on busy from the moment the connector has made its replication slot,
        # which its snapshot starts from
        writes, written = busy_transactions(80, BUSY_ROWS), []
        slot_made = lambda: r.sql(  # noqa: E731
            "select count(*) from pg_replication_slots where slot_name = 'lakehouse_pg'"
        ).strip() != "0"
        writer = threading.Thread(target=write_during_snapshot, args=(r.sql, slot_made, writes, written))
        writer.start()
        r.capture()
        writer.join()
        r.capture()  # what the writer did after the first run went idle, if anything
        assert written == writes, "the writes during the snapshot did not all run"
        r.capture_smt()  # its slot is made now, so it streams what follows
        r.record_accounts()
        r.ingest_and_build()
        r.compare()

        _kill_mid_stream(r)
        for statement in STREAM_B:
            r.sql(statement)
        for statement in ACCOUNTS_B[2:]:
            r.sql(statement)
            r.record_accounts()
        r.capture()
        r.ingest_and_build()
        r.compare()

        for statement in STREAM_C:
            r.sql(statement)
        for statement in ACCOUNTS_C:
            r.sql(statement)
            r.record_accounts()
        r.capture()
        r.capture_smt()
        r.ingest_and_build(((PREFIX, "debezium-json"), (SMT_PREFIX, "debezium-smt")))
        r.compare()
        yield r
    finally:
        pg_source.stop(directory)
        remove_dir(directory)


def _report(diffs: dict[str, list[str]]) -> str:
    return "\n".join(line for lines in diffs.values() for line in lines)


def test_snapshot_equals_the_database(run: Run) -> None:
    first = run.checks[0]
    assert sum(len(v) for v in first.diffs.values()) == 0, _report(first.diffs)


def test_stream_with_a_killed_connector_equals_the_database(run: Run) -> None:
    second = run.checks[1]
    assert sum(len(v) for v in second.diffs.values()) == 0, _report(second.diffs)


def test_final_state_equals_the_database(run: Run) -> None:
    last = run.checks[-1]
    assert sum(len(v) for v in last.diffs.values()) == 0, _report(last.diffs)


def test_the_comparison_sees_a_difference(run: Run) -> None:
    """The net has no hole: a row changed after the last capture is reported, column by column."""
    cols, db = pg_rows(run.sql, "plain")
    changed = [{**row, "v": f"{row['v']}?"} for row in db]
    assert differences("plain", cols, db, changed, ["id"])
    assert differences("bag", cols, db, db[1:], None)


def test_history_follows_every_state_of_accounts(run: Run) -> None:
    """gold.shop__accounts__history: per key, the versions the workload made, in order; the
    current one open, the one of a deleted key closed."""
    dumped = run.checks[-1].dumped
    cols = pg_rows(run.sql, "accounts")[0]
    view = typed_view(dumped, [f"{DATABASE}__accounts__history", "public__accounts__history",
                               f"{DATABASE}__public__accounts__history"])  # fmt: skip
    assert view, f"no history view of accounts in gold: {sorted(dumped.types)}"
    got, closed = history_versions(dumped, view, cols)
    expected = workload_versions(run.accounts_states)
    assert got == expected, json.dumps({"lakehouse": got, "workload": expected}, indent=1, default=str)
    final_keys = {row["id"] for row in run.accounts_states[-1]}
    assert {k for k, c in closed.items() if not c} == final_keys, closed


def test_smt_unwrapped_events_equal_the_database(run: Run) -> None:
    """ExtractNewRecordState (deletes rewritten to __deleted rows, tombstones kept) on the same database: same rows."""
    dumped = run.checks[-1].dumped
    problems = []
    for table in SMT_TABLES:
        cols, db = pg_rows(run.sql, table)
        rows = [r for r in dumped.rows.get("gold.cdc_current_state", [])
                if r["source_format"] == "debezium-smt" and r["source_table"] == table]
        databases = {r["source_database"] for r in rows}
        assert len(databases) <= 1, databases
        database = databases.pop() if databases else "public_smt"
        schemas = topic_schemas(run.broker.bootstrap, [f"{SMT_PREFIX}.public_smt.{table}"])
        fields = schemas[f"{SMT_PREFIX}.public_smt.{table}"]
        state = current_state_rows(dumped, database, table, cols, fields, fmt="debezium-smt")
        problems += differences(f"smt current_state {table}", cols, db, state, KEYS[table])
        view = f"gold.{database}__{table}"
        problems += differences(f"smt {view}", cols, db, typed_view_rows(dumped, view, cols), KEYS[table])
    assert problems == [], "\n".join(problems)

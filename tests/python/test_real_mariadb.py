"""A real MariaDB 10.11 through Debezium 3.5's MariaDB connector into Kafka and the lakehouse, equal to its rows.

As test_real_postgres.py: one database, one lakehouse, three builds (the snapshot, taken while
transactions go on in one table; a stream during which the connector is killed and replays;
more), each followed by a comparison of ``gold.cdc_current_state`` and every typed view with the
database's rows, the SCD2 history of ``accounts`` against the workload's states, and
ExtractNewRecordState (``debezium-smt``, the transform's defaults) on the same data. The
binlog's DDL lands from the schema-change topic.
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
from lakehouse.local import debezium, mariadb
from lakehouse.ports import free_port
from real_databases import (
    Dump,
    build_failure,
    busy_transactions,
    current_state_rows,
    differences,
    history_versions,
    mariadb_rows,
    read_gold,
    remove_dir,
    scratch_dir,
    topic_schemas,
    typed_view_rows,
    workload_versions,
    write_during_snapshot,
)

PREFIX = "realmaria"
SMT_PREFIX = "realmariasmt"
DATABASE = "shop"
TABLES = ("all_types", "accounts", "docs", "bag", "evolving", "emptied", "plain", "busy")
#: Rows of the table written to while the connector takes its snapshot.
BUSY_ROWS = 3000  # as SNAPSHOT_SQL inserts them
KEYLESS = {"bag"}
SMT_TABLES = ("accounts", "all_types")
SMT_PROPERTIES = {
    "table.include.list": ",".join(f"{DATABASE}.{t}" for t in SMT_TABLES),
    "transforms": "unwrap,route",
    "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
    "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
    "transforms.route.regex": r"([^.]+)\.([^.]+)\.([^.]+)",
    "transforms.route.replacement": "$1.$2_smt.$3",
}

SNAPSHOT_SQL = """
CREATE TABLE all_types (
  id INT PRIMARY KEY, c_tiny TINYINT, c_utiny TINYINT UNSIGNED, c_small SMALLINT, c_medium MEDIUMINT, c_int INT,
  c_uint INT UNSIGNED, c_big BIGINT, c_ubig BIGINT UNSIGNED, c_dec DECIMAL(65,30), c_dec2 DECIMAL(10,2),
  c_float FLOAT, c_double DOUBLE, c_bit1 BIT(1), c_bits BIT(12), c_char CHAR(5), c_varchar VARCHAR(50),
  c_text TEXT, c_binary BINARY(4), c_varbinary VARBINARY(10), c_blob BLOB, c_date DATE, c_time TIME,
  c_time6 TIME(6), c_datetime DATETIME(6), c_ts TIMESTAMP(6) NULL, c_year YEAR, c_enum ENUM('a','b','c'),
  c_set SET('x','y','z'), c_json JSON, c_geom GEOMETRY, c_bool BOOLEAN
);
INSERT INTO all_types VALUES
 (1, -128, 255, -32768, -8388608, -2147483648, 4294967295, -9223372036854775808, 18446744073709551615,
  12345678901234567890123456789012345.123456789012345678901234567890, 12.34, 3.14159, 2.718281828459045,
  b'1', b'101100111000', 'ab', 'vc', 'héllo "world" \\\\ 😀', x'00ff1000', x'0a0b', x'deadbeef', '1950-06-15',
  '-838:59:59', '123:45:56.789012', '1901-12-13 20:45:52.123456', '1970-01-01 00:00:01.5', 1999, 'b', 'x,z',
  '{"b": 1, "a": [1.10, null]}', ST_GeomFromText('POINT(1 2)'), TRUE),
 (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
 (3, 127, 0, 0, 8388607, 2147483647, 0, 9223372036854775807, 9223372036854775808,
  -0.000000000000000000000000000001, -99999999.99, -1.5e-10, 1e308, b'0', b'000000000001', '', '', '', x'',
  x'', x'', '1000-01-01', '00:00:00', '-00:00:00.000001', '9999-12-31 23:59:59.999999', '2038-01-19 03:14:07.999999',
  1901, 'a', '', '[]', ST_GeomFromText('LINESTRING(0 0, 1 1.5)'), FALSE);
CREATE TABLE accounts (id INT PRIMARY KEY, owner VARCHAR(40) NOT NULL, balance DECIMAL(12,2));
INSERT INTO accounts VALUES (1, 'ann', 10.00), (2, 'bob', 20.50), (3, 'cy', 0);
CREATE TABLE docs (id INT PRIMARY KEY, title VARCHAR(40), body MEDIUMTEXT);
INSERT INTO docs SELECT seq, CONCAT('doc ', seq), REPEAT(SHA2(RAND(), 256), 320) FROM seq_1_to_3;
CREATE TABLE bag (a INT, b VARCHAR(20));
INSERT INTO bag VALUES (1, 'same'), (1, 'same'), (1, 'same'), (2, 'other');
CREATE TABLE evolving (id INT PRIMARY KEY, v INT, name VARCHAR(10));
INSERT INTO evolving VALUES (1, 1, 'one'), (2, 2, 'two');
CREATE TABLE emptied (id INT PRIMARY KEY, v VARCHAR(20));
INSERT INTO emptied VALUES (1, 'a'), (2, 'b'), (3, 'c');
CREATE TABLE plain (id INT PRIMARY KEY, v VARCHAR(20));
INSERT INTO plain VALUES (1, '');
CREATE TABLE busy (id INT PRIMARY KEY, v INT, pad TEXT);
INSERT INTO busy SELECT seq, 0, REPEAT('p', 200) FROM seq_1_to_3000;
"""

STREAM_A = [
    """START TRANSACTION;
    INSERT INTO all_types (id, c_dec, c_datetime, c_ts, c_date, c_text, c_varchar, c_time, c_ubig, c_bits)
      VALUES (4, -99999999999999999999999999999999999.999999999999999999999999999999, '1969-07-20 20:17:40',
              '1970-01-01 00:00:01', '0100-03-01', '', '', '838:59:59', 9223372036854775809, b'111111111111');
    UPDATE all_types SET c_text = '', c_varchar = NULL, c_json = '{"k": "v"}' WHERE id = 1;
    DELETE FROM all_types WHERE id = 2;
    INSERT INTO plain VALUES (2, NULL), (3, 'x');
    COMMIT;""",
    "UPDATE docs SET title = CONCAT('retitled ', id) WHERE id IN (1, 2)",
    "UPDATE docs SET body = 'short now' WHERE id = 3",
    "UPDATE bag SET b = 'changed' WHERE a = 1 LIMIT 1",
    "DELETE FROM bag WHERE a = 1 AND b = 'same' LIMIT 1",
]
STREAM_B = [
    "TRUNCATE TABLE emptied",
    "INSERT INTO emptied VALUES (10, 'after truncate')",
    "ALTER TABLE evolving ADD COLUMN extra VARCHAR(20)",
    "UPDATE evolving SET extra = 'e1' WHERE id = 1",
    "ALTER TABLE evolving MODIFY COLUMN v BIGINT",
    "ALTER TABLE evolving MODIFY COLUMN name VARCHAR(50)",
    "INSERT INTO evolving VALUES (3, 9223372036854775807, 'a much longer name than before', NULL)",
    "ALTER TABLE evolving RENAME COLUMN name TO title",
    "UPDATE evolving SET title = CONCAT(title, '!')",
]
STREAM_C = [
    "UPDATE docs SET title = 'again' WHERE id = 1",
    "ALTER TABLE evolving DROP COLUMN extra",
    "UPDATE evolving SET v = v - 1 WHERE id = 3",
    "DELETE FROM bag WHERE a = 2",
    "INSERT INTO plain VALUES (4, 'z')",
]
ACCOUNTS_B = [
    "UPDATE accounts SET balance = 11.25 WHERE id = 1",
    "UPDATE accounts SET id = 20 WHERE id = 2",
    "DELETE FROM accounts WHERE id = 3",
    "INSERT INTO accounts VALUES (4, 'dee', 1e9)",
    "UPDATE accounts SET owner = 'ann marie' WHERE id = 1",
]
ACCOUNTS_C = [
    "UPDATE accounts SET balance = -0.01 WHERE id = 20",
    "INSERT INTO accounts VALUES (3, 'cy again', 3)",
]


@dataclass
class Run:
    directory: Path
    info: mariadb.MariaDbInfo
    broker: Broker
    root: Path
    checks: list[tuple[dict[str, list[str]], Dump]] = field(default_factory=list)
    accounts_states: list[list[dict]] = field(default_factory=list)
    build_failures: list[str] = field(default_factory=list)

    def sql(self, text: str) -> str:
        return mariadb.sql(self.info, text, DATABASE)

    def rows(self, table: str) -> tuple[list, list[dict]]:
        return mariadb_rows(self.sql, DATABASE, table)

    def engine(self, name: str, prefix: str, extra: dict[str, str] | None = None) -> tuple[dict, Path]:
        state = self.directory / "debezium" / name
        connection = mariadb.connector_properties(self.info, DATABASE)
        return debezium.engine_properties("mariadb", connection, state, name, prefix, extra), state

    def capture(self, name: str = "lakehouse-maria", prefix: str = PREFIX, extra: dict[str, str] | None = None) -> None:
        props, state = self.engine(name, prefix, extra)
        debezium.run(props, self.broker.bootstrap, state, until_idle=3, timeout=300)

    def capture_smt(self) -> None:
        self.capture("lakehouse-maria-smt", SMT_PREFIX, SMT_PROPERTIES)

    def record_accounts(self) -> None:
        self.accounts_states.append(self.rows("accounts")[1])

    def ingest_and_build(self, smt: bool = False) -> None:
        ingest_kafka(self.root, self.broker.bootstrap, "--topic-pattern", rf"^{PREFIX}(\..*)?$", "--format",
                     "debezium-json")  # fmt: skip
        if smt:
            ingest_kafka(self.root, self.broker.bootstrap, "--topic-pattern", rf"{SMT_PREFIX}\..*", "--format",
                         "debezium-smt")  # fmt: skip
        built = run_lakehouse(self.root, "build", timeout=900, check=False)
        if built.returncode != 0:
            # A failing dbt data test is a finding like a wrong row: recorded, and the comparison goes on.
            self.build_failures.append(build_failure(built))

    def compare(self) -> None:
        dumped = read_gold(self.root)
        schemas = topic_schemas(self.broker.bootstrap, [f"{PREFIX}.{DATABASE}.{t}" for t in TABLES])
        diffs: dict[str, list[str]] = {}
        for table in TABLES:
            cols, db = self.rows(table)
            key = None if table in KEYLESS else ["id"]
            state = current_state_rows(dumped, DATABASE, table, cols, schemas[f"{PREFIX}.{DATABASE}.{table}"])
            diffs[f"cdc_current_state {table}"] = differences(f"current_state {table}", cols, db, state, key)
            view = f"gold.{DATABASE}__{table}"
            diffs[view] = differences(view, cols, db, typed_view_rows(dumped, view, cols), key)
        quarantined = [r for r in dumped.rows.get("silver.cdc_quarantine", [])
                       if r["kafka_topic"] == PREFIX or r["kafka_topic"].startswith((f"{PREFIX}.", f"{SMT_PREFIX}."))]
        diffs["silver.cdc_quarantine"] = [f"quarantined: {r}" for r in quarantined]
        diffs["lakehouse build"], self.build_failures = self.build_failures, []
        self.checks.append((diffs, dumped))


def _kill_mid_stream(run: Run) -> None:
    """Debezium streaming in the background, SIGKILLed after part of the stream (no offset flush)."""
    props, state = run.engine("lakehouse-maria", PREFIX)
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


@pytest.fixture(scope="module")
def run(kafka_broker: Broker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    directory = scratch_dir("mariadb")
    try:
        info = mariadb.start(free_port(), directory, DATABASE)
        r = Run(directory, info, kafka_broker, tmp_path_factory.mktemp("real-mariadb-lakehouse"))
        r.sql(SNAPSHOT_SQL)
        # transactions on busy from the moment the connector has connected to take its snapshot
        writes, written = busy_transactions(80, BUSY_ROWS, begin="start transaction"), []
        connected = lambda: r.sql(  # noqa: E731
            f"select count(*) from information_schema.processlist where user = '{mariadb.DEBEZIUM_USER}'"
        ).strip() != "0"
        writer = threading.Thread(target=write_during_snapshot, args=(r.sql, connected, writes, written))
        writer.start()
        r.capture()
        writer.join()
        r.capture()  # what the writer did after the first run went idle, if anything
        assert written == writes, "the writes during the snapshot did not all run"
        r.capture_smt()
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
        r.ingest_and_build(smt=True)
        r.compare()
        yield r
    finally:
        mariadb.stop(directory)
        remove_dir(directory)


def _report(diffs: dict[str, list[str]]) -> str:
    return "\n".join(line for lines in diffs.values() for line in lines)


@pytest.mark.parametrize("build", [0, 1, 2], ids=["snapshot", "stream-with-killed-connector", "final"])
def test_gold_equals_the_database(run: Run, build: int) -> None:
    diffs = run.checks[build][0]
    assert sum(len(v) for v in diffs.values()) == 0, _report(diffs)


def test_history_follows_every_state_of_accounts(run: Run) -> None:
    dumped = run.checks[-1][1]
    cols = run.rows("accounts")[0]
    got, closed = history_versions(dumped, f"gold.{DATABASE}__accounts__history", cols)
    expected = workload_versions(run.accounts_states)
    assert got == expected, json.dumps({"lakehouse": got, "workload": expected}, indent=1, default=str)
    final_keys = {row["id"] for row in run.accounts_states[-1]}
    assert {k for k, c in closed.items() if not c} == final_keys, closed


def test_smt_unwrapped_events_equal_the_database(run: Run) -> None:
    """ExtractNewRecordState with its defaults (deletes become tombstones) on the same database."""
    dumped = run.checks[-1][1]
    problems = []
    for table in SMT_TABLES:
        cols, db = run.rows(table)
        topic = f"{SMT_PREFIX}.{DATABASE}_smt.{table}"
        fields = topic_schemas(run.broker.bootstrap, [topic])[topic]
        state = current_state_rows(dumped, f"{DATABASE}_smt", table, cols, fields, fmt="debezium-smt")
        problems += differences(f"smt current_state {table}", cols, db, state, ["id"])
        view = f"gold.{DATABASE}_smt__{table}"
        problems += differences(f"smt {view}", cols, db, typed_view_rows(dumped, view, cols), ["id"])
    assert problems == [], "\n".join(problems)

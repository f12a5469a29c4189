"""The fast parsers of several formats share one read of the new bronze records.

Every branch of silver's parse query scans the new bronze records: with a branch per format,
every format's values would be read once per format. Here the formats of the benchmark, all read by
fast parsers, land together, and the query silver.cdc_parsed was built with must scan
bronze.kafka_records once and give every record its row.
"""

from __future__ import annotations

import json

from fast_parser_check import bench_lines

FORMATS = ("debezium-json", "canal-json", "maxwell-json", "oms-json")


def test_fast_parsers_of_four_formats_read_bronze_once(lakehouse) -> None:
    lakehouse.reset()
    for fmt in FORMATS:
        lakehouse.ingest(bench_lines(fmt, changes=400), fmt=fmt)
    lakehouse.build("--select", "+cdc_parsed", "--full-refresh", tests=False)

    plan = lakehouse.built_plan("silver", "cdc_parsed")
    bronze_scans = [line for line in plan.splitlines() if "FileScan" in line and "kafka_records" in line]
    assert len(bronze_scans) == 1, "\n".join(bronze_scans)
    # the parsers themselves ran in that one branch: every format's records are parsed, none
    # left to the SQL parsers or quarantined
    kinds = lakehouse.rows(
        "select source_format, record_kind, count(*) as n from silver.cdc_parsed group by 1, 2")
    assert {r["source_format"] for r in kinds} == set(FORMATS), json.dumps(kinds)
    assert {r["record_kind"] for r in kinds} <= {"change", "control"}, json.dumps(kinds)
    landed = lakehouse.rows("select count(*) as n from bronze.kafka_records")[0]["n"]
    records = lakehouse.rows(
        "select count(distinct kafka_topic, kafka_partition, kafka_offset) as n from silver.cdc_parsed")[0]["n"]
    assert records == landed

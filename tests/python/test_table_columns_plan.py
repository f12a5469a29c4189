"""gold.cdc_table_columns parses each distinct image shape once, not the shape of every change.

Millions of changes share a handful of shapes per table, so the model groups the changes by
shape first and parses only the distinct shapes. A plain `posexplode` of the parsed shape's
columns made Spark infer a filter (the array is not null and not empty) and push it below the
grouping into the scan of silver, where it parsed the shape of every change twice. The plan
the model was built with must keep `from_json` out of the filter on the scan, and the model
must still give every table its columns.
"""

from __future__ import annotations

import json

from fast_parser_check import bench_lines


def test_table_columns_parses_shapes_after_grouping_them(lakehouse) -> None:
    lakehouse.reset()
    lakehouse.ingest(bench_lines("debezium-json", changes=400), fmt="debezium-json")
    lakehouse.build("--select", "+cdc_table_columns", "--full-refresh", tests=False)

    lines = lakehouse.built_plan("gold", "cdc_table_columns").splitlines()
    scans = [i for i, line in enumerate(lines) if "FileScan" in line and "cdc_parsed" in line]
    assert scans, "\n".join(lines)
    scan_filters = [lines[i - 1] for i in scans if "Filter" in lines[i - 1]]
    assert not [f for f in scan_filters if "from_json" in f], "\n".join(scan_filters)

    # and the answer: every column of every table's after images, in image order
    images = lakehouse.rows(
        "select source_table, after_image from silver.cdc_changes where after_image is not null")
    expected: dict[str, list[str]] = {}
    for row in images:
        columns = expected.setdefault(row["source_table"], [])
        columns.extend(c for c in json.loads(row["after_image"]) if c not in columns)
    found: dict[str, list[str]] = {}
    for row in lakehouse.rows(
            "select source_table, column_name from gold.cdc_table_columns order by source_table, column_position"):
        found.setdefault(row["source_table"], []).append(row["column_name"])
    assert found == expected

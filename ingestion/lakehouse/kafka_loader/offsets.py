"""Kafka offsets as the loader reads them: in Spark's progress reports and in its checkpoint.

A progress report becomes one line of rate, offset ranges and lag (:func:`describe_progress`);
the checkpoint says which micro-batch a killed run left uncommitted (:func:`committed_batches`)
and which offsets a batch was planned to read (:func:`planned_ranges`), so that a batch lands
without reading Kafka twice.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lakehouse import bronze


def _flatten_offsets(raw: Any) -> dict[tuple[str, int], int]:
    """Spark's ``{"topic": {"0": 12}}`` offset JSON (dict or string) -> {(topic, 0): 12}."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return {}
    flat: dict[tuple[str, int], int] = {}
    for topic, partitions in (raw or {}).items():
        if isinstance(partitions, dict):
            for partition, offset in partitions.items():
                flat[(topic, int(partition))] = int(offset)
    return flat


def _tp(key: tuple[str, int]) -> str:
    return f"{key[0]}[{key[1]}]"


def describe_progress(progress: dict[str, Any], limit: int = 6) -> str:
    """One progress line: rate, offset ranges and lag per partition (largest lags first)."""
    seconds = (progress.get("durationMs") or {}).get("triggerExecution", 0) / 1000
    parts = [
        f"{progress.get('numInputRows', 0)} records in {seconds:.1f}s "
        f"({float(progress.get('processedRowsPerSecond') or 0):.0f} rec/s)"
    ]
    for source in progress.get("sources", []):
        start = _flatten_offsets(source.get("startOffset"))
        end = _flatten_offsets(source.get("endOffset"))
        latest = _flatten_offsets(source.get("latestOffset"))
        moved = [k for k in sorted(end) if end[k] != start.get(k, 0)]
        ranges = [f"{_tp(k)} {start.get(k, 'start')}->{end[k]}" for k in moved[:limit]]
        if len(moved) > limit:
            ranges.append(f"+{len(moved) - limit} more")
        if ranges:
            parts.append("offsets " + ", ".join(ranges))
        if latest:
            lag = {k: max(0, latest[k] - end.get(k, 0)) for k in latest}
            worst = sorted(lag, key=lambda k: (-lag[k], k))[:limit]
            detail = ", ".join(f"{_tp(k)} {lag[k]}" for k in worst if lag[k])
            parts.append(f"lag {sum(lag.values())}" + (f" ({detail})" if detail else ""))
    return "; ".join(parts)


def committed_batches(checkpoint: Path) -> tuple[int | None, int | None]:
    """(last planned batch, last committed batch) of a checkpoint, None when there is none."""

    def last(sub: str) -> int | None:
        names = [p.name for p in (checkpoint / sub).glob("*") if p.name.isdigit()]
        return max(map(int, names)) if names else None

    return last("offsets"), last("commits")



def planned_ranges(checkpoint: Path, epoch: int) -> list[bronze.OffsetRange] | None:
    """The offsets micro-batch ``epoch`` was planned to read, from its checkpoint; None if unknown.

    Spark writes ``offsets/<epoch>`` (where the batch ends, exclusive) before it runs the batch;
    the batch starts where ``offsets/<epoch - 1>`` ended. A partition without a previous end
    (the first batch, a topic new to a pattern) starts at 0: a range only has to cover the
    batch, not to be tight. Record counts are the offset spans, upper bounds.
    """

    def ends(number: int) -> dict[tuple[str, int], int] | None:
        try:
            lines = (checkpoint / "offsets" / str(number)).read_text(encoding="utf-8").splitlines()
        except OSError:
            return None
        if len(lines) < 3 or not lines[0].startswith("v"):
            return None
        flat: dict[tuple[str, int], int] = {}
        for line in lines[2:]:
            if line.strip() and line.strip() != "-":
                flat.update(_flatten_offsets(line))
        return flat

    end = ends(epoch)
    if not end:
        return None
    start = (ends(epoch - 1) if epoch > 0 else None) or {}
    ranges = []
    for (topic, partition), last in sorted(end.items()):
        first = start.get((topic, partition), 0)
        if last > first:
            ranges.append(bronze.OffsetRange(topic, partition, first, last - 1, last - first))
    return ranges


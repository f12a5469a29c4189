"""The Kafka loader: land Kafka topics in bronze with Spark Structured Streaming, exactly once.

``lakehouse ingest --bootstrap-servers HOST:PORT --topics T1,T2`` (or ``--topic-pattern``) reads
with Spark's Kafka source and hands every micro-batch to :func:`lakehouse.bronze.land`.

Why exactly once holds even under SIGKILL at any moment:

* Spark writes the offset range of micro-batch N to ``<checkpoint>/offsets/N`` *before* running
  it and ``<checkpoint>/commits/N`` *after* the sink returned; both by atomic rename. A restart
  finds an uncommitted batch N and runs it again with the very same offset range (Kafka offsets
  are deterministic), then continues after it.
* The sink is a Delta MERGE on (topic, partition, offset) that only inserts missing keys, and a
  Delta commit is atomic. A batch whose MERGE had committed before the kill lands nothing the
  second time; one that had not lands everything. Nothing is written outside that commit. (A
  batch whose offsets bronze holds none of, the usual next batch of up to 32 topics, is
  appended instead, by a transaction that commits only if no other commit came after its look
  at bronze: a replay finds its rows there and MERGEs.)

So a record is in bronze at most once (the MERGE key) and at least once (the replay). The
checkpoint is per subscription, under ``$LAKEHOUSE_DIR/checkpoints/``
(:func:`.options.checkpoint_name`).

The stream's I/O is in :mod:`.options` (client options, secrets, the Spark Kafka source's
options), :mod:`.offsets` (offsets in checkpoints and progress reports), :mod:`.sink` (what
each micro-batch lands) and :mod:`.stream` (the streaming query, from start to summary);
:mod:`.builds` schedules the dbt builds of ``ingest --follow --build`` beside it. What they
share is here.
"""

from __future__ import annotations

import sys


class LoaderError(Exception):
    """A usage or connection problem reported to the user without a traceback."""


def progress(message: str) -> None:
    """One progress line on stderr (stdout is kept for the summary a script would capture)."""
    print(f"[lakehouse] {message}", file=sys.stderr, flush=True)


def first_lines(text: str, count: int = 12) -> str:
    """The useful head of a JVM error (the message, not the stack trace or the query plan)."""
    text = text.split("=== Streaming Query ===")[0]
    lines = [line for line in text.splitlines() if line.strip()]
    head = [line for line in lines if not line.lstrip().startswith("at ")][:count]
    return "\n".join(head)

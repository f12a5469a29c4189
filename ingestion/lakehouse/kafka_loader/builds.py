"""Build scheduling of ``lakehouse ingest --follow --build``: when dbt builds and tests run.

The loader's stream lands in the background; between its progress reports :mod:`.stream` asks
:class:`Builds` whether a build (or the data tests of ``--test-every``) is due and runs it in
the same process and Spark session, and while the stream is idle reads bronze ahead of the
next build. The builds themselves are ``lakehouse build`` (:func:`lakehouse.cli.build.run_dbt`),
handed in as callables.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from lakehouse.kafka_loader import first_lines, progress

if TYPE_CHECKING:
    from collections.abc import Callable

    from lakehouse.kafka_loader.sink import Totals


class Builds:
    """The builds of ``lakehouse ingest --follow --build``: in the loader's own process and Spark
    session, between its progress reports, while the stream lands in the background.

    Why in this process: a trickle built by a `lakehouse build` of its own pays a JVM, Spark
    and dbt start and a cold JIT every time, and with Derby, the embedded metastore, it cannot
    even start while the loader holds the metastore. The first
    build runs one interval after the start, whatever landed (records landed before the start
    may be waiting); later ones only when records landed since the last build.

    With ``tests`` (``--test-every``) the builds leave the data tests out and ``tests`` runs
    them after a build that passed, at most every ``test_every`` seconds: the data tests check
    whole tables and cost several times an increment's build, so a loader that ran them in
    every build of a trickle would spend its minutes re-checking what no build changed. The
    first tests run right after the first build that passes; later ones once a build has passed
    since, even when no record has landed for a while.
    """

    def __init__(self, build: Callable[[], int], every: float, totals: Totals,
                 tests: Callable[[], int] | None = None, test_every: float | None = None,
                 read_ahead: Callable[[], None] | None = None) -> None:  # fmt: skip
        self.build, self.every, self.totals = build, every, totals
        self.tests, self.test_every = tests, test_every
        self.read_ahead = read_ahead
        #: Records landed when bronze's snapshot was last read, by a build or ahead of one.
        self.read_up_to = 0
        #: Records landed when bronze's snapshot was last read ahead of a build.
        self.read_ahead_at: int | None = None
        self.last = time.monotonic()
        self.landed_at_last: int | None = None
        self.count = self.failed = 0
        self.last_status = 0
        self.tests_started: float | None = None
        self.test_count = self.tests_failed = 0
        self.last_test_status = 0
        self.built_since_tests = False

    def due(self) -> bool:
        """Whether a build should run now."""
        if time.monotonic() - self.last < self.every:
            return False
        return self.landed_at_last is None or self.totals.landed > self.landed_at_last

    def tests_due(self) -> bool:
        """Whether the data tests should run now: a build passed since they last ran, and
        ``test_every`` seconds have gone by since they last started (or they never ran)."""
        if self.tests is None or not self.built_since_tests:
            return False
        return self.tests_started is None or time.monotonic() - self.tests_started >= (self.test_every or 0)

    def run(self) -> None:
        """Build once; a failed build is reported and the loader goes on (the next may pass)."""
        landed = self.totals.landed
        ahead = ", bronze's snapshot read ahead" if landed and self.read_ahead_at == landed else ""
        progress(f"build {self.count + 1}: {landed} records landed by this loader so far{ahead}")
        started = time.monotonic()
        self.read_up_to = landed
        self.last_status = self._call(self.build, f"build {self.count + 1}")
        self.count += 1
        self.last, self.landed_at_last = time.monotonic(), landed
        if self.last_status != 0:
            self.failed += 1
            progress(f"build {self.count} failed (dbt exit {self.last_status}, see logs/dbt.log); "
                      f"the loader goes on, next build in {self.every:g} s")  # fmt: skip
            return
        progress(f"build {self.count}: done in {self.last - started:.1f}s")
        self.built_since_tests = True

    def idle(self, stream_busy: bool) -> None:
        """Read bronze's newest snapshot ahead of the next build (``read_ahead``) when records
        landed since it was last read, so that build need not (:func:`bronze.read_ahead`).

        Only while the stream is idle (``stream_busy``: a batch runs, or Kafka holds records it
        has not read): a loader catching up lands batch after batch, and reading each one's
        snapshot would only slow it down. A failure costs nothing but the head start."""
        landed = self.totals.landed
        if self.read_ahead is None or stream_busy or landed <= self.read_up_to:
            return
        self.read_up_to = landed
        try:
            self.read_ahead()
            self.read_ahead_at = landed
        except Exception as exc:  # noqa: BLE001 - the next build reads bronze all the same
            progress(f"reading bronze ahead of the next build failed, the build will: "
                      f"{type(exc).__name__}: {first_lines(str(exc), 2)}")  # fmt: skip

    def run_tests(self) -> None:
        """Run the data tests once; failed tests are reported and the loader goes on."""
        assert self.tests is not None
        number = self.test_count + 1
        progress(f"tests {number}: the data tests, after build {self.count}")
        self.tests_started = time.monotonic()
        self.built_since_tests = False
        self.last_test_status = self._call(self.tests, f"tests {number}")
        self.test_count = number
        if self.last_test_status != 0:
            self.tests_failed += 1
            progress(f"tests {number} failed (dbt exit {self.last_test_status}, see logs/dbt.log); "
                      f"the loader goes on, next tests in {self.test_every:g} s at the earliest")  # fmt: skip
        else:
            progress(f"tests {number}: passed in {time.monotonic() - self.tests_started:.1f}s")

    @staticmethod
    def _call(step: Callable[[], int], name: str) -> int:
        """``step()``'s exit status; one that raises is reported and counts as 2."""
        try:
            return step()
        except Exception as exc:  # noqa: BLE001 - the stream must outlive one bad build
            # dbt's runner returns its own errors as a status; this is anything around it
            progress(f"{name} raised {type(exc).__name__}: {first_lines(str(exc), 3)}")
            return 2

    @property
    def status(self) -> int:
        """The loader's exit status: the last build's, else the last data tests' when they failed."""
        return self.last_status or self.last_test_status

    def summary(self) -> str:
        text = f"builds: {self.count}" + (f", {self.failed} failed" if self.failed else "")
        if self.tests is not None:
            text += f"; tests: {self.test_count}" + (f", {self.tests_failed} failed" if self.tests_failed else "")
        return text

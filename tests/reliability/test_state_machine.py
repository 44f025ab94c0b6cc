"""Random interleavings of operations and faults, compared with a simple model of the table.

The system under test runs on the in-memory log with fault hooks (and real Parquet files on the
local disk); the model is a multiset of rows. After every step the table must hold exactly the
model's rows, and its history must stay linear.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
from collections import Counter

import pyarrow as pa
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import sleeper_spark as ss
from sleeper_spark.commit import utc_now
from sleeper_spark.log import AppendOutcomeUnknownError, InMemoryLogBackend, LogThrottledError
from sleeper_spark.models import ReplaceFiles
from sleeper_spark.storage import LocalObjectStore, NativeConditionalWrites
from tests.fixtures.catalogs import EVENTS_SCHEMA, events, memory_catalog

FAULTS = {
    "lost response": lambda log: log.fail_next_append(AppendOutcomeUnknownError("reset"), after_storing=True),
    "lost request": lambda log: log.fail_next_append(AppendOutcomeUnknownError("timeout")),
    "throttled": lambda log: log.fail_next_append(LogThrottledError("slow down")),
}


class TableMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.directory = tempfile.mkdtemp(prefix="sleeper-machine-")
        store = LocalObjectStore(self.directory)
        self.backend = InMemoryLogBackend(store, NativeConditionalWrites(store))
        self.table = memory_catalog(self.backend).create_table("events", EVENTS_SCHEMA, partition_by=["day"])
        self.log = self.backend.logs[self.table.table_id]
        self.rows: Counter[tuple[int, int]] = Counter()
        self.seq = 0

    def teardown(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)

    def _next(self, writer: int, rows: int) -> pa.Table:
        self.seq += 1
        return events(writer, self.seq, rows=rows, day=f"d{self.seq % 3}")

    @rule(writer=st.integers(0, 3), rows=st.integers(1, 4))
    def append(self, writer: int, rows: int) -> None:
        self.table.write(self._next(writer, rows))
        self.rows[(writer, self.seq)] += rows

    @rule(rows=st.integers(0, 3))
    def overwrite(self, rows: int) -> None:
        data = self._next(9, rows) if rows else events(9, 0, rows=0)
        self.table.write(data, mode="overwrite")
        self.rows = Counter({(9, self.seq): rows}) if rows else Counter()

    @rule(writer=st.integers(0, 3), rows=st.integers(1, 3))
    def rival_appends_first(self, writer: int, rows: int) -> None:
        rival = memory_catalog(self.backend).table("events")
        data = self._next(writer, rows)
        self.log.at_start_of_next_append(lambda: rival.write(data))
        self.rows[(writer, self.seq)] += rows
        self.append(0, 1)

    @rule(fault=st.sampled_from(sorted(FAULTS)))
    def fault_then_append(self, fault: str) -> None:
        FAULTS[fault](self.log)
        self.append(1, 2)

    @precondition(lambda self: len(self.table.files()) >= 2)
    @rule()
    def compact_races_an_overwrite(self) -> None:
        # A compaction that lost its files to an overwrite must fail and change nothing.
        files = self.table.files()[:2]
        self.overwrite(1)
        stale = ReplaceFiles(snapshot_id="c", committed_at=utc_now(), operation="compact", write_id="c",
                             removed=tuple(f.path for f in files), added=())
        try:
            self.table.head.commit(lambda state: stale)
        except ss.CommitConflictError:
            return
        raise AssertionError("a compaction of removed files committed")

    @rule()
    def state_snapshot(self) -> None:
        self.table.create_state_snapshot()

    @rule()
    def reopen(self) -> None:
        self.table = memory_catalog(self.backend).table("events")

    @invariant()
    def rows_match_the_model(self) -> None:
        scanned = self.table.scan(columns=["writer", "seq"])
        actual = Counter(zip(scanned.column("writer").to_pylist(), scanned.column("seq").to_pylist(), strict=True))
        assert actual == self.rows

    @invariant()
    def history_is_linear(self) -> None:
        history = self.table.history()
        assert [s.version for s in history] == list(range(2, 2 + len(history)))
        assert all(b.parent_id == a.snapshot_id for a, b in itertools.pairwise(history))


TestTableMachine = TableMachine.TestCase
TestTableMachine.settings = settings(max_examples=25, stateful_step_count=15, deadline=None)

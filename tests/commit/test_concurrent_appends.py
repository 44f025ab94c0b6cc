"""Real processes appending to one local table at once: nothing lost, duplicated or reordered."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import sleeper_spark as ss
from tests.fixtures.catalogs import EVENTS_SCHEMA, events
from tests.fixtures.processes import released_together
from tests.invariants import WriteOutcome, check_table_invariants

WRITERS = 6
APPENDS = 8
ROWS = 3


def append_many(warehouse: str, writer: int, start: multiprocessing.synchronize.Event) -> list[WriteOutcome]:  # type: ignore[name-defined]
    table = ss.Catalog.local(warehouse, state_snapshot_interval=10).table("events")
    start.wait()
    outcomes = []
    for seq in range(APPENDS):
        try:
            table.write(events(writer, seq, rows=ROWS), metadata={"writer": str(writer), "seq": str(seq)})
            outcomes.append(WriteOutcome(writer, seq, ROWS, committed=True))
        except ss.SleeperSparkError:
            outcomes.append(WriteOutcome(writer, seq, ROWS, committed=False))
    return outcomes


def test_six_processes_appending_eight_times_each_lose_nothing(tmp_path: Path) -> None:
    # Given a table with a small state-snapshot interval, so snapshots are written mid-race too
    warehouse = str(tmp_path / "warehouse")
    catalog = ss.Catalog.local(warehouse, state_snapshot_interval=10)
    catalog.create_table("events", EVENTS_SCHEMA, partition_by=["day"])
    # When six processes append eight times each, released at the same moment
    outcomes = released_together(append_many, warehouse, WRITERS, timeout_s=300)
    # Then every append succeeded and the table keeps every invariant
    assert all(o.committed for o in outcomes), [o for o in outcomes if not o.committed]
    table = ss.Catalog.local(warehouse).table("events")
    assert [s.version for s in table.history()] == list(range(2, 2 + WRITERS * APPENDS))
    check_table_invariants(table, outcomes)
    assert table.head.state_snapshots.numbers(), "the race should have written state snapshots"

"""Compaction while three other processes append: every append lands and survives."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import sleeper_spark as ss
from sleeper_spark import maintenance
from tests.fixtures.processes import racing_context
from tests.invariants import WriteOutcome, check_table_invariants
from tests.maintenance.tables import SCHEMA, append_tagged_rows, rows

APPENDERS = 3
APPENDS = 20
INITIAL = 60


def append_many(warehouse: str, writer: int, ready: Any) -> list[WriteOutcome]:
    return append_tagged_rows(warehouse, writer, ready, APPENDS, ("d0", "d1"))


def wait_for_version_above(table: ss.Table, version: int, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while table.head.catch_up().version <= version:
        assert time.monotonic() < deadline, "the appenders never committed"
        time.sleep(0.01)


def test_compaction_racing_three_appending_processes_loses_no_append(tmp_path: Path) -> None:
    # Given a table of 60 one-row appends (60 small files)
    warehouse = str(tmp_path / "warehouse")
    table = ss.Catalog.local(warehouse).create_table("events", SCHEMA, partition_by=["day"])
    initial = []
    for seq in range(INITIAL):
        table.write(rows(seq, 1, f"d{seq % 2}"), metadata={"writer": "99", "seq": str(seq)})
        initial.append(WriteOutcome(99, seq, 1, committed=True))
    files_before = len(table.files())
    context = racing_context()
    with context.Manager() as manager:
        ready = manager.Barrier(APPENDERS + 1)
        with context.Pool(APPENDERS) as pool:
            pending = [pool.apply_async(append_many, (warehouse, w, ready)) for w in range(APPENDERS)]
            # When a compaction is planned and written as the three processes start appending,
            # and commits only after some of their appends have landed
            ready.wait()
            plan = maintenance.plan_compaction(table)
            written = maintenance.rewrite_plan(table, plan)
            wait_for_version_above(table, plan.version)
            compacted = maintenance.commit_compaction(table, plan, written)
            outcomes = [o for p in pending for o in p.get(timeout=300)]
    # Then every append succeeded, including those that landed while the compaction ran
    assert all(o.committed for o in outcomes), [o for o in outcomes if not o.committed]
    assert compacted.version > plan.version + 1
    fresh = ss.Catalog.local(warehouse).table("events")
    assert len(fresh.history()) == INITIAL + APPENDERS * APPENDS + 1
    # And the rows are exactly those written, in fewer files, all intact
    expected = sorted([seq for seq in range(INITIAL)]
                      + [1000 * (w + 1) + s for w in range(APPENDERS) for s in range(APPENDS)])
    assert sorted(fresh.scan().column("n").to_pylist()) == expected
    assert len(fresh.files()) < files_before + APPENDERS * APPENDS
    # The plan may also take appends that landed before it was made: at least the initial files go.
    assert compacted.files_removed >= files_before and compacted.files_added == 2
    check_table_invariants(fresh, initial + outcomes)

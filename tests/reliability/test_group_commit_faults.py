"""Group-committing writers on a store, log and pending records that fail at random: each write once.

Three writers (threads, each with a catalog of its own, as separate processes would have) append
with ``group_commit`` on through tests/fixtures/faults.py: the object store, the in-memory log
and the pending records fail before a request, after applying it, let it land late or never,
throttle, refuse and answer slowly, on a seeded schedule. Racing threads lose puts, record
pending appends (some of those records land late, after their append is committed) and
commit each other's. Each write must succeed and then be in the table exactly once, or fail
with a typed ``SleeperSparkError``: ``CommitStateUnknownError`` when it may have landed (or may
still, through another writer), anything else only when it certainly did not. At the end, with
faults off, every held-back request landed or lost and what is pending committed: the
invariants of tests/invariants.py, and ``vacuum(older_than=0)`` leaves exactly the referenced files.

That the writers combine appends is not left to the luck of the race: their first appends, with
the faults held back, each record themselves at once and wait until all three are recorded
(tests/fixtures/group_commit.py), so the first version holds all three; the faults start then.
"""

from __future__ import annotations

import threading
from collections import Counter
from contextlib import ExitStack
from datetime import timedelta
from pathlib import Path

import pytest

import sleeper_spark as ss
from sleeper_spark.config import CatalogConfig, RetryPolicy
from sleeper_spark.storage import LocalObjectStore, NativeConditionalWrites
from tests.fixtures.catalogs import EVENTS_SCHEMA, events
from tests.fixtures.faults import FaultSchedule, FaultyLogBackend, FaultyObjectStore
from tests.fixtures.group_commit import RecordsTogether, group_of, records_at_once
from tests.invariants import WriteOutcome, check_table_invariants, tagged_writes
from tests.reliability import budget
from tests.reliability.crash import data_listing

pytestmark = pytest.mark.reliability

WRITERS = 3


@pytest.mark.timeout(budget.timeout_for(budget.FAULT_WRITES * 0.2))
def test_group_committed_writes_land_once_or_fail_typed(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    schedule = FaultSchedule(f"{budget.FAULT_SEED}-group")
    inner = LocalObjectStore(tmp_path / "warehouse")
    store = FaultyObjectStore(inner, schedule)
    backend = FaultyLogBackend(store, NativeConditionalWrites(store), schedule)
    config = CatalogConfig(warehouse=inner.root_uri, state_snapshot_interval=5, group_commit=True,
                           retry=RetryPolicy(max_attempts=8, base_delay_s=0.0005, max_delay_s=0.002))
    with schedule.paused():
        ss.Catalog(config, backend=backend).create_table("events", EVENTS_SCHEMA, partition_by=["day"])
        tables = [ss.Catalog(config, backend=backend).table("events") for _ in range(WRITERS)]
    outcomes: list[WriteOutcome] = []
    failures: Counter[str] = Counter()
    answers_hold: list[bool] = []
    per_writer = max(10, budget.FAULT_WRITES // WRITERS)
    # The first round, faults held back: each writer's first append records itself at once and
    # waits for the others' records, so the first proposal takes all three.
    first_round = ExitStack()
    first_round.enter_context(schedule.paused())
    recorded = threading.Barrier(WRITERS, timeout=300)
    first_round_over = threading.Barrier(WRITERS, action=first_round.close, timeout=300)
    for table in tables:
        records_at_once(table)
        group_of(table).pending = RecordsTogether(group_of(table).pending, recorded)
    start = threading.Barrier(WRITERS)

    def append(writer: int) -> None:
        start.wait()
        for seq in range(per_writer):
            if seq == 1:
                first_round_over.wait()
            rows = 1 + seq % 3
            try:
                snapshot = tables[writer].write(events(writer, seq, rows=rows, day=f"d{seq % 3}"),
                                                metadata={"writer": str(writer), "seq": str(seq)})
            except ss.CommitStateUnknownError:
                outcomes.append(WriteOutcome(writer, seq, rows, committed=None))
                failures["CommitStateUnknownError"] += 1
            except ss.SleeperSparkError as error:
                outcomes.append(WriteOutcome(writer, seq, rows, committed=False))
                failures[type(error).__name__] += 1
            else:
                outcomes.append(WriteOutcome(writer, seq, rows, committed=True))
                answers_hold.append((writer, seq) in tagged_writes(snapshot))

    threads = [threading.Thread(target=append, args=(w,)) for w in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    with schedule.paused():
        store.delayed.settle(everything=True)
        backend.delayed.settle(everything=True)
        table = ss.Catalog(config, backend=backend).table("events")
        assert table.group_commit is not None
        table.group_commit.commit_pending()
        check_table_invariants(table, outcomes)
        table.vacuum(older_than=timedelta(0))
        referenced = {f.path for f in table.files()}
        assert data_listing(table.catalog, "events") == referenced
        check_table_invariants(table, outcomes)
        history = table.history()

    assert all(answers_hold), "a caller got a snapshot that does not hold its write"
    committed = sum(1 for o in outcomes if o.committed)
    grouped = sum(1 for s in history if len(s.members) > 1)
    summary = (f"group commit under faults: {len(outcomes)} appends by {WRITERS} writers ({committed} committed, "
               f"{sum(1 for o in outcomes if o.committed is None)} unknown), {grouped} group versions; "
               f"{schedule.calls} calls, faults {schedule.summary()}; failures {dict(failures)}")
    request.node.user_properties.append(("fault_summary", summary))
    print(summary)
    assert committed > len(outcomes) // 2, "faults should not stop most writes"
    assert any(len(s.members) == WRITERS for s in history), "the first round should have made one version"

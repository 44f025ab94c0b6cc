"""Many writes through a store and a log that fail at random: nothing is lost or doubled.

The catalog runs on tests/fixtures/faults.py: an object store (the local disk underneath) that
fails before a request, after applying it, lets it land late or never, throttles, refuses and
answers slowly, on a seeded schedule; in the second configuration also an in-memory log with the
same faults, and every transaction body spilled to the store. Between the writes: compactions,
state snapshots, vacuums and cold re-opens, all under the same faults.

Each write must either succeed, and then be in the table exactly once, or fail with a typed
``SleeperSparkError``: ``CommitStateUnknownError`` when it may have landed, anything else only
when it certainly did not. At every step, every file the table references exists. At the end,
with faults off and every held-back request landed or lost: the invariants of
tests/invariants.py (``committed=None`` for the unknown outcomes), and ``vacuum(older_than=0)``
leaves exactly the referenced data files.

CI runs ``SLEEPER_FAULT_WRITES`` (default 150) operations per configuration; the long run more.
"""

from __future__ import annotations

import random
import traceback
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest

import sleeper_spark as ss
from sleeper_spark.config import CatalogConfig, RetryPolicy
from sleeper_spark.log import ObjectStoreBackend
from sleeper_spark.maintenance import locking
from sleeper_spark.storage import LocalObjectStore, NativeConditionalWrites
from sleeper_spark.storage.locks import break_lock
from tests.fixtures.catalogs import EVENTS_SCHEMA, events
from tests.fixtures.faults import FaultSchedule, FaultyLogBackend, FaultyObjectStore
from tests.invariants import InvariantViolation, WriteOutcome, check_table_invariants, explained
from tests.reliability import budget
from tests.reliability.crash import data_listing

pytestmark = pytest.mark.reliability

CONFIGURATIONS = ("object-store log", "faulty log, spilled bodies")
SPILL_EVERYTHING = 256  # bytes: every transaction body goes to the store as a spilled body
OPERATIONS = {"append": 80, "compact": 5, "state snapshot": 5, "vacuum": 3, "reopen": 7}


class FaultRun:
    def __init__(self, configuration: str, tmp_path: Path, seed: str) -> None:
        self.schedule = FaultSchedule(seed)
        inner = LocalObjectStore(tmp_path / "warehouse")
        self.store = FaultyObjectStore(inner, self.schedule)
        self.spill = configuration != "object-store log"
        if self.spill:
            self.backend: ObjectStoreBackend = FaultyLogBackend(self.store, NativeConditionalWrites(self.store),
                                                                self.schedule)
        else:
            self.backend = ObjectStoreBackend(self.store, NativeConditionalWrites(self.store))
        # Quick retries, few attempts: faults must also exhaust them sometimes.
        self.config = CatalogConfig(warehouse=inner.root_uri, state_snapshot_interval=4,
                                    retry=RetryPolicy(max_attempts=6, base_delay_s=0.0, max_delay_s=0.0))
        self.catalog = ss.Catalog(self.config, backend=self.backend, sleep=lambda _: None)

    def open(self) -> ss.Table:
        """A cold open through a new catalog (a new process, as far as caches go)."""
        self.catalog = ss.Catalog(self.config, backend=self.backend, sleep=lambda _: None)
        table = self.catalog.table("events")
        if self.spill:
            table.head.codec._threshold = SPILL_EVERYTHING
        return table

    def settle(self) -> None:
        """Every held-back request lands or is lost, now."""
        self.store.delayed.settle(everything=True)
        if isinstance(self.backend, FaultyLogBackend):
            self.backend.delayed.settle(everything=True)


def check_with_reasons(table: ss.Table, outcomes: list[WriteOutcome], reasons: dict[int, str]) -> None:
    try:
        check_table_invariants(table, outcomes)
    except InvariantViolation as violation:
        raise explained(violation, reasons) from None


@pytest.mark.timeout(budget.timeout_for(budget.FAULT_WRITES * 0.2))
@pytest.mark.parametrize("configuration", CONFIGURATIONS)
def test_every_write_lands_once_or_fails_typed(configuration: str, tmp_path: Path,
                                               request: pytest.FixtureRequest,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # A vacuum whose lock release failed leaves the lock behind; the next one gives up at once.
    monkeypatch.setattr(locking, "WAIT_S", 0.2)
    seed = f"{budget.FAULT_SEED}-{configuration}"
    run = FaultRun(configuration, tmp_path, seed)
    with run.schedule.paused():
        run.catalog.create_table("events", EVENTS_SCHEMA, partition_by=["day"])
        table = run.open()
    rng = random.Random(seed)
    outcomes: list[WriteOutcome] = []
    failures: Counter[str] = Counter()
    reasons: dict[int, str] = {}  # why each failed append failed, for the report of a violation
    for step in range(budget.FAULT_WRITES):
        operation = rng.choices(list(OPERATIONS), weights=list(OPERATIONS.values()))[0]
        try:
            if operation == "append":
                rows = 1 + step % 3
                outcome = WriteOutcome(0, step, rows, committed=None)
                outcomes.append(outcome)
                snapshot = table.write(events(0, step, rows=rows, day=f"d{step % 4}"),
                                       metadata={"writer": "0", "seq": str(step)})
                outcomes[-1] = WriteOutcome(0, step, rows, committed=True)
                assert snapshot.metadata == {"writer": "0", "seq": str(step)}
            elif operation == "compact":
                table.compact()
            elif operation == "state snapshot":
                table.create_state_snapshot()
            elif operation == "vacuum":
                table.vacuum(older_than=timedelta(hours=1))  # never deletes young files
            else:
                table = run.open()
        except ss.CommitStateUnknownError:
            failures[f"{operation}: CommitStateUnknownError"] += 1
        except ss.SleeperSparkError as error:
            failures[f"{operation}: {type(error).__name__}"] += 1
            if operation == "append":
                outcomes[-1] = WriteOutcome(0, step, outcomes[-1].rows, committed=False)
                reasons[step] = "".join(traceback.format_exception(error)[-6:])
        if step % 10 == 9:
            with run.schedule.paused():
                problems = run.open().verify().problems
            assert not problems, f"step {step}: the table references files that are missing or damaged: {problems}"

    with run.schedule.paused():
        run.settle()
        table = run.open()
        check_with_reasons(table, outcomes, reasons)
        # What a failed vacuum may leave: its maintenance lock (an operator breaks it).
        stale_locks = break_lock(run.store, locking.maintenance_lock_path(table), force=True)
        table.vacuum(older_than=timedelta(0))
        referenced = {f.path for f in table.files()}
        assert data_listing(run.catalog, "events") == referenced
        check_with_reasons(table, outcomes, reasons)

    committed = sum(1 for o in outcomes if o.committed)
    unknown = sum(1 for o in outcomes if o.committed is None)
    summary = (f"{configuration}: {budget.FAULT_WRITES} operations, {len(outcomes)} appends ({committed} committed, "
               f"{unknown} unknown); {run.schedule.calls} store/log calls, faults injected "
               f"{run.schedule.summary()}; delayed requests landed {run.store.delayed.landed}"
               f"{' + ' + str(run.backend.delayed.landed) if isinstance(run.backend, FaultyLogBackend) else ''}; "
               f"failures {dict(sorted(failures.items()))}; maintenance locks left {len(stale_locks)}")
    request.node.user_properties.append(("fault_summary", summary))
    print(summary)
    assert committed > len(outcomes) // 2, "faults should not stop most writes"

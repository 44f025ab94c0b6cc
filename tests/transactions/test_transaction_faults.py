"""Multi-table transactions through a store and logs that fail at random: nothing torn, nothing lost.

The catalog runs on tests/fixtures/faults.py: requests fail before reaching the store or the
log, land with their answer lost, land late or never, are throttled or slow, on a seeded
schedule; the decision logs of the transactions are such logs too. Between the transactions
(each appending to tables ``a`` and ``b``): plain appends to ``a`` and cold re-opens.

Each transaction must either commit, and then be in both tables, or fail with a typed
``SleeperSparkError`` (``CommitStateUnknownError`` when it may have landed). At the end, with
faults off and every held-back request landed or lost, and once the leases of undecided
transactions have run out: every transaction whole or absent, and the invariants of
tests/invariants.py on both tables (an unknown outcome allowed 0 or 1 times).
"""

from __future__ import annotations

import random
import time
import traceback
from collections import Counter
from pathlib import Path

import pytest

import sleeper_spark as ss
from sleeper_spark.config import CatalogConfig, RetryPolicy
from sleeper_spark.storage import LocalObjectStore, NativeConditionalWrites
from tests.fixtures.catalogs import EVENTS_SCHEMA, events
from tests.fixtures.faults import FaultSchedule, FaultyLogBackend, FaultyObjectStore
from tests.invariants import InvariantViolation, WriteOutcome, check_table_invariants, explained
from tests.reliability import budget
from tests.transactions.checks import check_transactions_whole

pytestmark = pytest.mark.reliability

OPERATIONS = {"transaction": 60, "append": 25, "reopen": 15}
LEASE_S = 0.3
ROWS = 2


@pytest.mark.timeout(budget.timeout_for(budget.FAULT_WRITES * 0.3))
def test_transactions_under_store_and_log_faults_are_whole_or_absent(tmp_path: Path,
                                                                     request: pytest.FixtureRequest) -> None:
    seed = f"{budget.FAULT_SEED}-transactions"
    schedule = FaultSchedule(seed)
    inner = LocalObjectStore(tmp_path / "warehouse")
    store = FaultyObjectStore(inner, schedule)
    backend = FaultyLogBackend(store, NativeConditionalWrites(store), schedule)
    # Quick retries, few attempts: faults must also exhaust them sometimes.
    config = CatalogConfig(warehouse=inner.root_uri, retry=RetryPolicy(max_attempts=6, base_delay_s=0.0,
                                                                       max_delay_s=0.0))

    def reopen() -> ss.Catalog:
        return ss.Catalog(config, backend=backend, sleep=lambda _: None)

    with schedule.paused():
        catalog = reopen()
        catalog.create_table("a", EVENTS_SCHEMA, partition_by=["day"])
        catalog.create_table("b", EVENTS_SCHEMA)
    rng = random.Random(seed)
    transactional: list[WriteOutcome] = []
    plain: list[WriteOutcome] = []
    failures: Counter[str] = Counter()
    reasons: dict[int, str] = {}  # why each failed operation failed, for the report of a violation
    operations = max(40, budget.FAULT_WRITES // 2)
    for step in range(operations):
        operation = rng.choices(list(OPERATIONS), weights=list(OPERATIONS.values()))[0]
        tags = {"writer": "0" if operation == "transaction" else "1", "seq": str(step)}
        outcome = WriteOutcome(int(tags["writer"]), step, ROWS, committed=None)
        try:
            if operation == "transaction":
                transactional.append(outcome)
                with catalog.transaction(lease_s=LEASE_S) as tx:
                    tx.write("a", events(0, step, rows=ROWS, day=f"d{step % 3}"), metadata=tags)
                    tx.write("b", events(0, step, rows=ROWS), metadata=tags)
                transactional[-1] = WriteOutcome(0, step, ROWS, committed=True)
            elif operation == "append":
                plain.append(outcome)
                catalog.table("a").write(events(1, step, rows=ROWS, day="d0"), metadata=tags)
                plain[-1] = WriteOutcome(1, step, ROWS, committed=True)
            else:
                catalog = reopen()
        except ss.CommitStateUnknownError:
            failures[f"{operation}: CommitStateUnknownError"] += 1
        except ss.SleeperSparkError as error:
            failures[f"{operation}: {type(error).__name__}"] += 1
            reasons[step] = "".join(traceback.format_exception(error)[-8:])
            done = transactional if operation == "transaction" else plain
            if done and done[-1].seq == step:
                done[-1] = WriteOutcome(done[-1].writer, step, ROWS, committed=False)

    with schedule.paused():
        store.delayed.settle(everything=True)
        backend.delayed.settle(everything=True)
        time.sleep(LEASE_S)  # every undecided transaction's lease has run out: readers roll it back
        cold = reopen()
        try:
            counts = check_transactions_whole(cold, ["a", "b"])
            check_table_invariants(cold.table("a"), [*transactional, *plain])
            check_table_invariants(cold.table("b"), transactional)
        except InvariantViolation as violation:
            raise explained(violation, reasons) from None
    committed = sum(1 for o in transactional if o.committed)
    summary = (f"{operations} operations: {len(transactional)} transactions ({committed} committed), "
               f"{len(plain)} appends; decided {counts}; faults injected {schedule.summary()}; "
               f"failures {dict(sorted(failures.items()))}")
    request.node.user_properties.append(("fault_summary", summary))
    print(summary)
    # Each transaction makes some 20 store and log calls, of which about one in six fails.
    assert committed > len(transactional) // 5, "faults should not stop so many transactions"
    assert sum(failures.values()) > 0, "the schedule should have failed some operations"

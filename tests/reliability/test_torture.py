"""Concurrency torture: 8 processes on one local table, mixing every kind of operation, for a while.

Each process (tests/reliability/torture_worker.py) mostly appends, and also overwrites, compacts,
writes state snapshots and vacuums (with ``older_than`` far above the run's length), for
``SLEEPER_TORTURE_SECONDS`` (10 in CI; a long run goes in rounds of a minute, each on a new
table). Then:

* no append and no overwrite failed (they never conflict: they rebase);
* compactions failed only with ``CommitConflictError`` (a file they replace was removed first);
* state snapshots and vacuums did not fail;
* the invariants hold, with the rows checked *exactly* by replaying the history in version order
  (an overwrite drops every row before it; see ``check_table_invariants(overwrites=True)``), and
  every overwrite reporting as removed exactly the rows that were there;
* ``vacuum(older_than=0)`` leaves in ``data/`` exactly the files the table references.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import pytest

import sleeper_spark as ss
from tests.fixtures.catalogs import EVENTS_SCHEMA
from tests.invariants import WriteOutcome, check_table_invariants
from tests.reliability import budget
from tests.reliability.crash import data_listing

pytestmark = [pytest.mark.reliability, pytest.mark.slow]

REPO = Path(__file__).parents[2]
# A long run goes in rounds of at most this long, each on a new table, so that the final checks
# (a replay of the whole log from every state snapshot) stay quick.
ROUND_SECONDS = 60


@dataclass
class Tally:
    done: Counter[str] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)
    slowest: dict[str, float] = field(default_factory=dict)
    versions: int = 0
    checked_s: float = 0.0


@pytest.mark.timeout(budget.timeout_for(budget.TORTURE_SECONDS * 1.5 + 60))
def test_concurrent_mixed_operations_keep_every_invariant(tmp_path: Path,
                                                          request: pytest.FixtureRequest) -> None:
    warehouse = str(tmp_path / "warehouse")
    tally = Tally()
    remaining = budget.TORTURE_SECONDS
    round_number = 0
    while remaining > 0:
        seconds = min(remaining, ROUND_SECONDS)
        torture_round(warehouse, round_number, seconds, tmp_path, tally)
        remaining -= seconds
        round_number += 1
    summary = (f"torture: {budget.TORTURE_WORKERS} processes for {budget.TORTURE_SECONDS}s in {round_number} "
               f"round(s), {tally.versions} versions; done {dict(sorted(tally.done.items()))}; "
               f"failed {dict(sorted(tally.failed.items()))}; slowest ms {tally.slowest}; "
               f"checked in {tally.checked_s:.1f}s")
    request.node.user_properties.append(("torture_summary", summary))
    print(summary)
    # Each process's first operation is an append, and appends never fail (checked per round).
    assert tally.done["append"] >= budget.TORTURE_WORKERS, "every process should have appended"


def torture_round(warehouse: str, round_number: int, seconds: int, tmp_path: Path, tally: Tally) -> None:
    name = f"events_{round_number}"
    folder = tmp_path / f"round-{round_number}"
    folder.mkdir()
    ss.Catalog.local(warehouse).create_table(name, EVENTS_SCHEMA, partition_by=["day"])
    journals = [folder / f"journal-{worker}" for worker in range(budget.TORTURE_WORKERS)]
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.reliability.torture_worker", warehouse, name, str(worker), str(seconds),
             str(budget.KILL_SEED + 1000 * round_number + worker), str(journal)],
            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        for worker, journal in enumerate(journals)
    ]
    deadline = time.monotonic() + seconds + 240
    for process in processes:
        _, stderr = process.communicate(timeout=max(1.0, deadline - time.monotonic()))
        assert process.returncode == 0, f"a worker crashed: {stderr.decode()[-3000:]}"

    outcomes: list[WriteOutcome] = []
    wrong: list[str] = []
    for worker, journal in enumerate(journals):
        for line in journal.read_text().splitlines():
            entry = json.loads(line)
            op = entry["op"]
            tally.slowest[op] = max(tally.slowest.get(op, 0.0), entry["ms"])
            if entry["outcome"] == "done":
                tally.done[op] += 1
            else:
                tally.failed[f"{op}: {entry['error']}"] += 1
                if not (op == "compact" and entry["error"] == "CommitConflictError"):
                    wrong.append(f"worker {worker}: {op} failed with {entry['error']}: {entry['message']}")
            if op in ("append", "overwrite"):
                outcomes.append(WriteOutcome(worker, entry["seq"], entry["rows"], committed=entry["outcome"] == "done"))
    assert not wrong, "operations that must not fail did:\n" + "\n".join(wrong[:20])

    started = time.monotonic()
    table = ss.Catalog.local(warehouse).table(name)
    check_table_invariants(table, outcomes, overwrites=True)
    table.vacuum(older_than=timedelta(0))
    assert data_listing(table.catalog, name) == {f.path for f in table.files()}
    check_table_invariants(table, outcomes, overwrites=True)
    tally.checked_s += time.monotonic() - started
    tally.versions += table.latest().version

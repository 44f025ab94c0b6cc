"""Writers killed with SIGKILL at random points: the table keeps every invariant.

CI runs a bounded number of trials; the long run sets ``SLEEPER_KILL_TRIALS`` (see docs).
Each trial kills one appending process at a random moment — while staging files, between the
log put and the journal, while writing a state snapshot (every 3 commits) — then checks the
table, which accumulates the survivors of every earlier trial.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import sleeper_spark as ss
from tests.fixtures.catalogs import EVENTS_SCHEMA
from tests.invariants import WriteOutcome, check_table_invariants
from tests.reliability.kill_worker import ROWS

TRIALS = int(os.environ.get("SLEEPER_KILL_TRIALS", "12"))
REPO = Path(__file__).parents[2]


def outcomes_from_journal(path: Path, writer: int) -> list[WriteOutcome]:
    started: set[int] = set()
    done: set[int] = set()
    if path.exists():
        for line in path.read_text().splitlines():
            word, _, seq = line.partition(" ")
            if seq.isdigit():
                (done if word == "done" else started).add(int(seq))
    return [WriteOutcome(writer, seq, ROWS, committed=True if seq in done else None) for seq in sorted(started)]


@pytest.mark.slow
def test_sigkilled_writers_never_break_the_table(tmp_path: Path) -> None:
    warehouse = str(tmp_path / "warehouse")
    ss.Catalog.local(warehouse).create_table("events", EVENTS_SCHEMA, partition_by=["day"])
    rng = random.Random(int(os.environ.get("SLEEPER_KILL_SEED", "20261122")))
    outcomes: list[WriteOutcome] = []
    for trial in range(TRIALS):
        journal = tmp_path / f"journal-{trial}"
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.reliability.kill_worker", warehouse, "events", str(trial), str(journal)],
            cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        # Wait until the writer is past its imports and committing, then kill it mid-flight.
        deadline = time.monotonic() + 60
        while not journal.exists() and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 0.4))
        process.send_signal(signal.SIGKILL)
        _, stderr = process.communicate(timeout=30)
        assert process.returncode == -signal.SIGKILL, f"writer died on its own: {stderr.decode()[-2000:]}"
        outcomes += outcomes_from_journal(journal, trial)
        table = ss.Catalog.local(warehouse).table("events")
        check_table_invariants(table, outcomes)
    assert sum(1 for o in outcomes if o.committed) >= TRIALS, "the writers should have committed something"

"""Processes killed with SIGKILL at random points, on every backend: the table keeps every invariant.

CI runs a few trials per catalog kind; the long run sets ``SLEEPER_KILL_TRIALS`` (see
docs/reliability.md). Each trial starts one worker (tests/reliability/kill_worker.py) from the
catalog's flat options, in one of three modes that rotate — appends only, appends and
compactions, appends, compactions and ``vacuum(older_than=0)`` — and kills it at a random
moment: while it stages files, between its log put and its journal, while it writes a state
snapshot (every 3 commits), in the middle of a compaction's rewrite or commit, or of a vacuum's
deletions. Then, on a cold-opened table that accumulates the survivors of the earlier trials (a
long run starts a new table every 25 trials):

* the operator's clean-up of what only a dead holder leaves (:mod:`tests.reliability.crash`);
* every invariant of tests/invariants.py, the in-flight write allowed 0 or 1 times;
* ``vacuum(older_than=0)`` leaves in ``data/`` exactly the files the table references, and the
  invariants still hold after it.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

import sleeper_spark as ss
from tests.fixtures.catalogs import EVENTS_SCHEMA, catalog_params, make_catalog
from tests.invariants import WriteOutcome
from tests.reliability import budget
from tests.reliability.crash import check_after_crash, recover_after_crash
from tests.reliability.kill_worker import MODES, OPTIONS_VARIABLE, ROWS

pytestmark = [pytest.mark.reliability, pytest.mark.slow]

REPO = Path(__file__).parents[2]
KINDS = ("local", "aws", "object_store", "object_store_put_and_verify", "object_store_dynamodb_lock")
# How long a worker may run before it is killed: a few commits' worth on each backend, and
# about one compaction's or vacuum's worth once one has begun.
KILL_WINDOW_S = {"local": (0.4, 0.05)}
KILL_WINDOW_ELSEWHERE_S = (1.5, 0.5)
STARTUP_TIMEOUT_S = 60.0
# A long run starts a new table every so many trials, so that each check stays quick (it reads
# the whole log, every file and every state snapshot).
TRIALS_PER_TABLE = 25


def outcomes_from_journal(path: Path, writer: int) -> list[WriteOutcome]:
    started: set[int] = set()
    done: set[int] = set()
    if path.exists():
        for line in path.read_text().splitlines():
            word, _, seq = line.partition(" ")
            if seq.isdigit():
                (done if word == "done" else started).add(int(seq))
    return [WriteOutcome(writer, seq, ROWS, committed=True if seq in done else None) for seq in sorted(started)]


def phase_at_death(path: Path) -> str:
    """What the worker was doing when it died, from the last line of its journal."""
    lines = path.read_text().splitlines() if path.exists() else []
    last = lines[-1].split(" ")[0] if lines else "starting"
    return {"start": "append", "done": "append (after)", "idle": "append"}.get(last, last)


def wait_for(journal: Path, process: subprocess.Popen[bytes], word: str, count: int) -> None:
    """Until the journal holds ``count`` lines starting with ``word`` (or the worker exits)."""
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline and process.poll() is None:
        if journal.exists() and sum(1 for line in journal.read_text().splitlines()
                                    if line.split(" ")[0] == word) >= count:
            return
        time.sleep(0.005)


@pytest.mark.timeout(budget.timeout_for(20 * max(budget.kill_trials(kind) for kind in KINDS)))
@pytest.mark.parametrize("kind", catalog_params(KINDS))
def test_sigkilled_processes_never_break_the_table(kind: str, request: pytest.FixtureRequest,
                                                   tmp_path: Path) -> None:
    catalog = make_catalog(kind, request, tmp_path)
    environment = {**os.environ, OPTIONS_VARIABLE: json.dumps(catalog.options())}
    if kind != "local":
        environment.update(request.getfixturevalue("aws_env"))
    rng = random.Random(f"{budget.KILL_SEED}-{kind}")
    window, maintenance_window = KILL_WINDOW_S.get(kind, KILL_WINDOW_ELSEWHERE_S)
    outcomes: list[WriteOutcome] = []
    committed = unknown = 0
    name = ""
    phases: Counter[str] = Counter()
    cleaned: Counter[str] = Counter()
    vacuumed = 0
    trials = budget.kill_trials(kind)
    for trial in range(trials):
        if trial % TRIALS_PER_TABLE == 0:
            name = f"events_{trial // TRIALS_PER_TABLE}"
            catalog.create_table(name, EVENTS_SCHEMA, partition_by=["day"])
            outcomes = []
        mode = MODES[trial % len(MODES)]
        journal = tmp_path / f"journal-{trial}"
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.reliability.kill_worker", mode, name, str(trial), str(journal)],
            cwd=REPO, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        # Wait until the worker is past its imports and committing (in the maintenance modes:
        # until it starts its first or second maintenance round), then kill it mid-flight.
        if mode == "append":
            wait_for(journal, process, "start", 1)
            time.sleep(rng.uniform(0.0, window))
        else:
            wait_for(journal, process, "compact" if mode == "compact" else rng.choice(["compact", "vacuum"]),
                     rng.randint(1, 2))
            time.sleep(rng.uniform(0.0, maintenance_window))
        process.send_signal(signal.SIGKILL)
        _, stderr = process.communicate(timeout=30)
        assert process.returncode == -signal.SIGKILL, f"the worker died on its own: {stderr.decode()[-3000:]}"
        phases[f"{mode}: {phase_at_death(journal)}"] += 1
        written = outcomes_from_journal(journal, trial)
        outcomes += written
        committed += sum(1 for o in written if o.committed)
        unknown += sum(1 for o in written if o.committed is None)
        if kind != "local":
            # A request the worker sent just before it died may still complete at the server (a data
            # file's PUT, seen once on SeaweedFS): the vacuum below would miss a file landing after
            # its listing. An operator's vacuum runs long after; a second is plenty here.
            time.sleep(1.0)
        recovered = recover_after_crash(catalog, name)
        cleaned["maintenance locks"] += recovered.maintenance_locks
        cleaned["intents"] += len(recovered.intents)
        cleaned["lock records"] += len(recovered.lock_records)
        vacuumed += check_after_crash(catalog, name, outcomes)
    summary = (f"{kind}: {trials} trials, {committed} writes committed, {unknown} in flight when killed; "
               f"killed during {dict(sorted(phases.items()))}; operator clean-up {dict(cleaned)}; "
               f"vacuum deleted {vacuumed} unreferenced data files")
    request.node.user_properties.append(("kill_summary", summary))
    print(summary)
    assert committed >= trials // 2, "the workers should have committed something"
    assert ss.Catalog(catalog.config).table(name).verify().ok

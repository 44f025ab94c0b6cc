"""Writers racing with group commit on, SIGKILLed at random moments: every write lands at most once.

Each trial starts three append workers (tests/reliability/kill_worker.py) on one table with
``group_commit=true``, so they lose races, record pending appends and commit each other's; then
kills them one by one at random moments: while staging, between a lost put and its pending
record, while combining, after committing but before journaling. A dead writer's recorded
append may be committed by a survivor, by the next trial's writers, or at the end by
``commit_pending`` (as vacuum does); it may also never be, if it died before recording it.

Combining does not wait on the luck of a race: before each trial's workers start, a writer
records an append and dies (tests/fixtures/group_commit.py), and each worker's first append
records itself and lists the pending records before it proposes; so the trial's first version
holds the dead writer's append and a live one's, and the kills start only after it.

After every trial, on a cold open:

* the invariants of tests/invariants.py, each in-flight write allowed 0 or 1 times and every
  journaled one exactly once (group versions counted member by member);
* after ``commit_pending`` and ``vacuum(older_than=0)``, ``data/`` holds exactly the referenced
  files, and the invariants still hold.

CI runs a few trials per catalog kind; ``SLEEPER_KILL_TRIALS`` sets more (docs/reliability.md).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import sleeper_spark as ss
from tests.fixtures.catalogs import EVENTS_SCHEMA, catalog_params, make_catalog
from tests.fixtures.group_commit import record_and_die
from tests.invariants import WriteOutcome
from tests.reliability import budget
from tests.reliability.crash import check_after_crash
from tests.reliability.kill_worker import OPTIONS_VARIABLE
from tests.reliability.test_kill_trials import REPO, outcomes_from_journal, wait_for

pytestmark = [pytest.mark.reliability, pytest.mark.slow]

KINDS = ("local", "aws", "object_store")
WORKERS = 3
# How long the workers race after the first commit before the first kill (at least, at most), and
# at most between kills: long enough that they lose races and combine appends, short enough for CI.
RACE_S = {"local": (0.5, 1.5, 0.2)}
RACE_ELSEWHERE_S = (1.0, 2.0, 0.6)
# The writers of the appends that are left pending by a writer that died after recording them.
DEAD_WRITERS = 10_000


@pytest.mark.timeout(budget.timeout_for(30 * max(budget.group_kill_trials(kind) for kind in KINDS)))
@pytest.mark.parametrize("kind", catalog_params(KINDS))
def test_sigkilled_group_committers_never_lose_or_double_a_write(kind: str, request: pytest.FixtureRequest,
                                                                tmp_path: Path) -> None:
    catalog = make_catalog(kind, request, tmp_path)
    options = {**catalog.options(), "group_commit": "true"}
    environment = {**os.environ, OPTIONS_VARIABLE: json.dumps(options)}
    if kind != "local":
        environment.update(request.getfixturevalue("aws_env"))
    rng = random.Random(f"{budget.KILL_SEED}-group-{kind}")
    shortest, longest, between = RACE_S.get(kind, RACE_ELSEWHERE_S)
    catalog.create_table("events", EVENTS_SCHEMA, partition_by=["day"])
    outcomes: list[WriteOutcome] = []
    trials = budget.group_kill_trials(kind)
    for trial in range(trials):
        journals = [tmp_path / f"journal-{trial}-{w}" for w in range(WORKERS)]
        writers = [trial * WORKERS + w for w in range(WORKERS)]
        outcomes.append(record_and_die(options, "events", DEAD_WRITERS + trial, rows=2, day=f"d{trial % 3}"))
        processes = [
            subprocess.Popen([sys.executable, "-m", "tests.reliability.kill_worker", "append", "events", str(writer),
                              str(journal)], cwd=REPO, env=environment, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
            for writer, journal in zip(writers, journals, strict=True)
        ]
        for process, journal in zip(processes, journals, strict=True):
            wait_for(journal, process, "start", 1)
        # The trial's first version (a proposal that took the dead writer's append) is in.
        wait_for(journals[0], processes[0], "done", 1)
        time.sleep(rng.uniform(shortest, longest))
        for process in processes:
            process.send_signal(signal.SIGKILL)
            _, stderr = process.communicate(timeout=30)
            assert process.returncode == -signal.SIGKILL, f"a worker died on its own: {stderr.decode()[-3000:]}"
            time.sleep(rng.uniform(0.0, between))
        for writer, journal in zip(writers, journals, strict=True):
            outcomes += outcomes_from_journal(journal, writer)
    # What the dead left pending goes in (as vacuum does), then every check of a crash.
    group_table = ss.Catalog.from_options(options).table("events")
    assert group_table.group_commit is not None
    group_table.group_commit.commit_pending()
    check_after_crash(catalog, "events", outcomes)
    grouped = sum(1 for s in ss.Catalog(catalog.config).table("events").history() if len(s.members) > 1)
    committed = sum(1 for o in outcomes if o.committed and o.writer < DEAD_WRITERS)
    unknown = sum(1 for o in outcomes if o.committed is None)
    summary = (f"{kind}: {trials} trials of {WORKERS} group-committing writers, {committed} writes committed, "
               f"{unknown} in flight when killed, {trials} left pending by a dead writer, "
               f"{grouped} versions held several writers' appends")
    request.node.user_properties.append(("kill_summary", summary))
    print(summary)
    assert committed >= trials, "the workers should have committed something"
    assert grouped >= trials, "each trial's first version should hold a dead writer's append and a live one's"

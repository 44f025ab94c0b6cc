"""Real processes appending to one table with group commit on, on every backend: each write once.

Here, not in tests/commit, because most of its cases need the loopback servers.

Six processes (each with two threads, so batches form inside a process too) are released at
the same moment and append ten times per thread. Every write must succeed, the table must keep
every invariant of tests/invariants.py (no write lost, doubled or reordered; every file there
with its checksum; the loaded state equal to a replay), each caller's snapshot must hold its
write, and appends must have been combined: some versions hold several writers'.

Combining does not wait on the luck of the race (a busy machine may run the processes one after
another): before they start, a writer records an append and dies, and each process's first
append records itself and lists the pending records before it proposes
(tests/fixtures/group_commit.py); so the first version holds the dead writer's append and a
live one's.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

import sleeper_spark as ss
from tests.fixtures.catalogs import EVENTS_SCHEMA, catalog_params, events, make_catalog
from tests.fixtures.group_commit import record_and_die, records_at_once
from tests.fixtures.processes import released_together
from tests.invariants import WriteOutcome, check_table_invariants, tagged_writes
from tests.reliability.budget import long_run_only

PROCESSES = 6
THREADS = 2
APPENDS = 10
ROWS = 2


def append_many(options: dict[str, str], process: int, start: Any) -> list[tuple[WriteOutcome, bool]]:
    """Each thread's writes, with whether the snapshot it got back holds that write."""
    table = ss.Catalog.from_options({**options, "group_commit": "true", "state_snapshot_interval": "7"}).table(
        "events")
    table.state()
    records_at_once(table)
    results: list[tuple[WriteOutcome, bool]] = []
    start.wait()

    def thread_appends(thread: int) -> None:
        writer = process * THREADS + thread
        for seq in range(APPENDS):
            try:
                snapshot = table.write(events(writer, seq, rows=ROWS, day=f"d{seq % 2}"),
                                       metadata={"writer": str(writer), "seq": str(seq)})
            except ss.SleeperSparkError:
                results.append((WriteOutcome(writer, seq, ROWS, committed=False), False))
                continue
            results.append((WriteOutcome(writer, seq, ROWS, committed=True), (writer, seq) in tagged_writes(snapshot)))

    threads = [threading.Thread(target=thread_appends, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


# The object store in a long run: group commit is one protocol over the log's conditional append,
# which the object store's racing tests (tests/integration/test_aws_commits.py) cover by default.
@pytest.mark.parametrize("kind", [*catalog_params(("local", "aws")),
                                  pytest.param("object_store", marks=[pytest.mark.integration, long_run_only])])
def test_racing_processes_with_group_commit_commit_every_write_once(kind: str, request: pytest.FixtureRequest,
                                                                    tmp_path: Path) -> None:
    catalog = make_catalog(kind, request, tmp_path)
    catalog.create_table("events", EVENTS_SCHEMA, partition_by=["day"])
    dead = record_and_die(catalog.options(), "events", PROCESSES * THREADS, rows=ROWS)
    results = released_together(append_many, catalog.options(), PROCESSES)
    outcomes = [outcome for outcome, _ in results]
    assert all(o.committed for o in outcomes), [o for o in outcomes if not o.committed]
    assert all(holds for _, holds in results), "a caller got a snapshot that does not hold its write"
    table = ss.Catalog(catalog.config).table("events")
    check_table_invariants(table, [*outcomes, dead])
    history = table.history()
    combined = [s for s in history if len(s.members) > 1]
    assert combined, "the first version should hold the dead writer's append and a live one's"
    assert len(history) < len(outcomes) + 1
    assert table.catalog.backend.pending_appends(table.entry).list() == []

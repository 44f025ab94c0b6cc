"""Group commit against the in-memory log and pending records, with rivals and faults at chosen points.

Each test sets up the moment the protocol must survive (a lost race, a writer that dies after
recording its append, a put whose answer is lost, racing threads) through the hooks of
``InMemoryTransactionLog`` and ``InMemoryPendingAppends``, then checks every write is in the
table exactly once (tests/invariants.py) and each caller got the version that holds its write.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterable
from datetime import timedelta

import pytest

import sleeper_spark as ss
from sleeper_spark.commit.group import BACK_TO_BACK_S, SOLO_ATTEMPTS
from sleeper_spark.log import AppendOutcomeUnknownError, InMemoryLogBackend
from sleeper_spark.log.pending import InMemoryPendingAppends
from sleeper_spark.models import AppendGroup
from tests.fixtures.catalogs import EVENTS_SCHEMA, events, memory_catalog
from tests.invariants import WriteOutcome, check_table_invariants, tagged_writes


class WriterDied(BaseException):
    """Stands for SIGKILL at a chosen point: nothing of the writer runs after it."""


def tagged(writer: int, seq: int, rows: int = 3) -> dict[str, object]:
    return {"data": events(writer, seq, rows=rows), "metadata": {"writer": str(writer), "seq": str(seq)}}


@pytest.fixture
def table(memory_backend: InMemoryLogBackend) -> ss.Table:
    catalog = memory_catalog(memory_backend, group_commit=True)
    return catalog.create_table("events", EVENTS_SCHEMA)


def writer(backend: InMemoryLogBackend) -> ss.Table:
    """Another process's writer of the same table: its own catalog, cache and batching."""
    return memory_catalog(backend, group_commit=True).table("events")


def rivals_commit_first(backend: InMemoryLogBackend, table: ss.Table, rival: ss.Table, writer_id: int,
                        seqs: Iterable[int]) -> list[WriteOutcome]:
    """Before each of the next puts, ``rival`` commits one write: a writer that meets
    ``SOLO_ATTEMPTS`` of them loses both its solo attempts and records its append."""
    log = backend.logs[table.table_id]
    outcomes = []
    for seq in seqs:
        log.at_start_of_next_append(lambda s=seq: rival.write(**tagged(writer_id, s)))
        outcomes.append(WriteOutcome(writer_id, seq, 3, True))
    return outcomes


def a_writer_dies_after_recording(backend: InMemoryLogBackend, table: ss.Table, **write: object) -> list[WriteOutcome]:
    """Another writer loses its solo attempts (rival writer 2 commits first), records its append
    (``write``, by default writer 1's seq 0) and dies; returns the rival's outcomes."""
    doomed = writer(backend)
    doomed.state()
    outcomes = rivals_commit_first(backend, table, writer(backend), 2, range(SOLO_ATTEMPTS))
    pending_of(backend, table).fail_next_put(WriterDied(), after_storing=True)
    with pytest.raises(WriterDied):
        doomed.write(**(write or tagged(1, 0)))  # type: ignore[arg-type]
    return outcomes


def pending_of(backend: InMemoryLogBackend, table: ss.Table) -> InMemoryPendingAppends:
    pending = backend.pending_appends(table.entry)
    assert isinstance(pending, InMemoryPendingAppends)
    return pending


def test_a_lone_writer_pays_one_put_and_no_read(table: ss.Table, memory_backend: InMemoryLogBackend) -> None:
    # Given a warm writer with group commit on
    table.write(**tagged(0, 0))
    log = memory_backend.logs[table.table_id]
    pending = pending_of(memory_backend, table)
    appends, reads = log.append_calls, log.read_calls
    # When it appends alone (after a pause, however long the load makes it: one that appends back
    # to back also lists the pending records once a second)
    time.sleep(BACK_TO_BACK_S)
    snapshot = table.write(**tagged(0, 1))
    # Then it made one conditional put, no read and no pending record, and its version is its own
    assert (log.append_calls - appends, log.read_calls - reads) == (1, 0)
    assert (pending.put_calls, pending.list_calls) == (0, 0)
    assert snapshot.members == () and snapshot.metadata == {"writer": "0", "seq": "1"}


def test_a_writer_that_loses_one_race_retries_alone_without_a_record(
        table: ss.Table, memory_backend: InMemoryLogBackend) -> None:
    # Given a warm writer, and a rival that takes the next number just before its put
    table.write(**tagged(0, 0))
    rivals = rivals_commit_first(memory_backend, table, writer(memory_backend), 1, [0])
    pending = pending_of(memory_backend, table)
    # When it appends
    snapshot = table.write(**tagged(0, 1))
    # Then it read the tail and won the next number alone, as without group commit
    assert pending.put_calls == 0 and snapshot.version == 4 and snapshot.members == ()
    check_table_invariants(table, [WriteOutcome(0, 0, 3, True), WriteOutcome(0, 1, 3, True), *rivals])


def test_a_writer_that_loses_its_solo_attempts_records_its_append_and_commits_it(
        table: ss.Table, memory_backend: InMemoryLogBackend) -> None:
    # Given a warm writer, and a rival that takes the next number before each of its solo puts
    table.write(**tagged(0, 0))
    rivals = rivals_commit_first(memory_backend, table, writer(memory_backend), 1, range(SOLO_ATTEMPTS))
    pending = pending_of(memory_backend, table)
    # When it appends
    snapshot = table.write(**tagged(0, 1))
    # Then it recorded its append, committed it after the rival, and removed its record
    assert pending.put_calls == 1 and pending.list() == []
    assert snapshot.version == 3 + SOLO_ATTEMPTS and (0, 1) in tagged_writes(snapshot)
    check_table_invariants(table, [WriteOutcome(0, 0, 3, True), WriteOutcome(0, 1, 3, True), *rivals])


def test_the_append_of_a_writer_that_died_after_recording_it_is_committed_once(
        table: ss.Table, memory_backend: InMemoryLogBackend) -> None:
    # Given a writer that lost its races, recorded its append and died before committing it
    table.write(**tagged(0, 0))
    pending = pending_of(memory_backend, table)
    outcomes = a_writer_dies_after_recording(memory_backend, table)
    assert len(pending.list()) == 1
    # When another writer appends and loses its races too
    rival = writer(memory_backend)
    outcomes += rivals_commit_first(memory_backend, table, rival, 3, range(SOLO_ATTEMPTS))
    snapshot = table.write(**tagged(0, 1))
    # Then its version holds the dead writer's append as well as its own, each exactly once
    assert sorted(tagged_writes(snapshot)) == [(0, 1), (1, 0)]
    assert len(snapshot.members) == 2 and pending.list() == []
    # And later commits, alone or grouped, never take the dead writer's append again
    for seq in range(2, 6):
        outcomes += rivals_commit_first(memory_backend, table, rival, 3, [10 + seq])
        table.write(**tagged(0, seq))
    check_table_invariants(table, [WriteOutcome(0, s, 3, True) for s in range(6)]
                           + [WriteOutcome(1, 0, 3, None), *outcomes])
    assert Counter(k for s in table.history() for k in tagged_writes(s))[(1, 0)] == 1


def test_commit_pending_and_vacuum_take_in_what_a_dead_writer_left(
        table: ss.Table, memory_backend: InMemoryLogBackend) -> None:
    # Given a dead writer's recorded append, and nobody else racing
    table.write(**tagged(0, 0))
    pending = pending_of(memory_backend, table)
    outcomes = a_writer_dies_after_recording(memory_backend, table)
    # When vacuum runs, even one that deletes every unreferenced file at once
    report = table.vacuum(older_than=timedelta(0))
    # Then the append is committed first, so its files are kept and read, and its record is gone
    assert report.data_files_deleted == 0 and pending.list() == []
    check_table_invariants(table, [WriteOutcome(0, 0, 3, True), WriteOutcome(1, 0, 3, True), *outcomes])
    # And a second round finds nothing left to commit
    assert table.group_commit is not None and table.group_commit.commit_pending() is None


def test_an_append_committed_by_another_writer_is_done(table: ss.Table, memory_backend: InMemoryLogBackend) -> None:
    # Given a writer whose record another writer lists and commits before the writer proposes
    table.write(**tagged(0, 0))
    helper = writer(memory_backend)
    helper.state()
    pending = pending_of(memory_backend, table)
    outcomes: list[WriteOutcome] = []

    def helper_races() -> None:  # the helper loses its solo puts too, then commits what is pending
        outcomes.extend(rivals_commit_first(memory_backend, table, writer(memory_backend), 2, range(SOLO_ATTEMPTS)))
        helper.write(**tagged(1, 0))

    outcomes += rivals_commit_first(memory_backend, table, writer(memory_backend), 3, range(SOLO_ATTEMPTS))
    pending.at_start_of_next_list(helper_races)
    # When the writer appends
    snapshot = table.write(**tagged(0, 1))
    # Then the helper's version holds it, the writer reports that version, and it is there once
    assert (0, 1) in tagged_writes(snapshot) and (1, 0) in tagged_writes(snapshot)
    check_table_invariants(table, [WriteOutcome(0, 0, 3, True), WriteOutcome(0, 1, 3, True),
                                   WriteOutcome(1, 0, 3, True), *outcomes])
    # And the helper, which committed the writer's last append, deleted its record
    assert pending.list() == []


@pytest.mark.parametrize("landed", [True, False], ids=["landed", "lost"])
def test_a_group_put_whose_answer_is_lost_lands_once(table: ss.Table, memory_backend: InMemoryLogBackend,
                                                     landed: bool) -> None:
    # Given a writer in the recorded path whose group put's answer is lost (stored or not)
    table.write(**tagged(0, 0))
    log = memory_backend.logs[table.table_id]
    pending = pending_of(memory_backend, table)
    outcomes = a_writer_dies_after_recording(memory_backend, table)  # its record makes the next proposal a group
    outcomes += rivals_commit_first(memory_backend, table, writer(memory_backend), 3, range(SOLO_ATTEMPTS))

    def lose_the_answer() -> None:
        log.fail_next_append(AppendOutcomeUnknownError("connection reset"), after_storing=landed)

    pending.at_start_of_next_list(lose_the_answer)
    # When it appends
    snapshot = table.write(**tagged(0, 1))
    # Then its write and the dead writer's are in the table exactly once
    assert (0, 1) in tagged_writes(snapshot)
    check_table_invariants(table, [WriteOutcome(0, 0, 3, True), WriteOutcome(0, 1, 3, True),
                                   WriteOutcome(1, 0, 3, True), *outcomes])


def test_threads_of_one_process_share_versions(table: ss.Table, memory_backend: InMemoryLogBackend) -> None:
    # Given 8 threads appending 15 times each through one catalog
    outcomes: list[WriteOutcome] = []
    answers: list[tuple[int, int, ss.Snapshot]] = []
    barrier = threading.Barrier(8)
    group = table.group_commit
    assert group is not None

    def hold_the_first_put() -> None:
        # The first leader's put waits until two other threads queue behind it: they ride together
        # next, however the threads happen to be scheduled.
        deadline = time.monotonic() + 300
        while group.waiting() < 2:
            assert time.monotonic() < deadline, "the other threads never queued"
            time.sleep(0.001)

    memory_backend.logs[table.table_id].at_start_of_next_append(hold_the_first_put)

    def append(thread: int) -> None:
        barrier.wait()
        for seq in range(15):
            answers.append((thread, seq, table.write(**tagged(thread, seq, rows=1))))
            outcomes.append(WriteOutcome(thread, seq, 1, True))

    threads = [threading.Thread(target=append, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Then every write is there once, each caller's snapshot holds its own write
    check_table_invariants(table, outcomes)
    assert all((writer_, seq) in tagged_writes(snapshot) for writer_, seq, snapshot in answers)
    # And waiting threads rode together: fewer versions than writes
    assert len(table.history()) < 120
    assert any(len(s.members) > 1 for s in table.history())


def test_each_member_keeps_its_idempotency(table: ss.Table, memory_backend: InMemoryLogBackend) -> None:
    # Given a writer whose app version a rival commits just before the writer's own put
    table.write(**tagged(0, 0))
    log = memory_backend.logs[table.table_id]
    rival = writer(memory_backend)
    firsts: list[ss.Snapshot] = []
    log.at_start_of_next_append(lambda: firsts.append(
        rival.write(events(1, 0), metadata={"writer": "1", "seq": "0"}, app_id="job", app_version=1)))
    # When the writer commits the same app version
    again = table.write(events(0, 1), metadata={"writer": "0", "seq": "1"}, app_id="job", app_version=1)
    # Then it learns of the rival's commit, commits nothing, and reports the rival's version
    assert again.version == firsts[0].version
    check_table_invariants(table, [WriteOutcome(0, 0, 3, True), WriteOutcome(0, 1, 3, False),
                                   WriteOutcome(1, 0, 3, True)])
    assert pending_of(memory_backend, table).list() == []


def test_history_and_time_travel_show_the_members(table: ss.Table, memory_backend: InMemoryLogBackend) -> None:
    # Given a group version of two writers' appends
    table.write(**tagged(0, 0))
    log = memory_backend.logs[table.table_id]
    a_writer_dies_after_recording(memory_backend, table, data=events(1, 0, rows=5),
                                  metadata={"writer": "1", "seq": "0"}, app_id="stream", app_version=7)
    rivals_commit_first(memory_backend, table, writer(memory_backend), 3, range(SOLO_ATTEMPTS))
    group = table.write(**tagged(0, 1, rows=2))
    # Then the version's members carry each writer's own facts, and its counts are their sums
    members = {m.metadata["writer"]: m for m in group.members}
    assert members["1"].app_id == "stream" and members["1"].app_version == 7 and members["1"].rows_added == 5
    assert members["0"].rows_added == 2 and group.rows_added == 7 and group.files_added == 2
    stored = log.read_one(group.version)
    assert stored is not None and isinstance(table.head.codec.decode(group.version, stored.body), AppendGroup)
    # And the same members come back from a cold open, through a state snapshot, and by time travel
    table.create_state_snapshot()
    cold = memory_catalog(memory_backend).table("events")
    assert cold.snapshot(group.version).members == group.members
    assert table.state(group.version).app_versions["stream"] == 7

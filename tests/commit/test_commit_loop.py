"""The commit loop against the in-memory log, with rivals and faults injected at chosen points."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import sleeper_spark as ss
from sleeper_spark.log import AppendOutcomeUnknownError, InMemoryLogBackend, LogThrottledError
from sleeper_spark.models import ReplaceFiles
from tests.fixtures.catalogs import EVENTS_SCHEMA, events, memory_catalog


def _data_files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*.parquet")}


@pytest.fixture
def table(memory_backend: InMemoryLogBackend) -> ss.Table:
    return memory_catalog(memory_backend).create_table("events", EVENTS_SCHEMA, partition_by=["day"])


def rival(backend: InMemoryLogBackend) -> ss.Table:
    """Another writer of the same table, with its own cached state."""
    return memory_catalog(backend).table("events")


def test_an_append_rebases_onto_a_rival_commit(table: ss.Table, memory_backend: InMemoryLogBackend) -> None:
    # Given a table whose writer's state is warm, and a rival that commits just before its append
    table.write(events(0, 0))
    other = rival(memory_backend)
    memory_backend.logs[table.table_id].at_start_of_next_append(lambda: other.write(events(1, 0)))
    # When the writer appends
    snapshot = table.write(events(0, 1))
    # Then it lands after the rival, names the rival's snapshot as parent, and nothing is lost
    history = table.history()
    assert [s.version for s in history] == [2, 3, 4]
    assert snapshot.version == 4 and snapshot.parent_id == history[1].snapshot_id
    assert table.scan().num_rows == 9


def test_a_replace_conflicts_when_a_file_it_removes_is_gone(table: ss.Table, memory_backend: InMemoryLogBackend) -> None:
    # Given two writers that both saw the same file, and one of them replaces it first
    table.write(events(0, 0))
    file = table.files()[0]
    other = rival(memory_backend)
    other.write(events(9, 9), mode="overwrite")
    replace = ReplaceFiles(snapshot_id="s", committed_at=file_time(), operation="compact", write_id="w",
                           removed=(file.path,), added=())
    # When the other writer commits a replacement of that file
    # Then it fails with a conflict no retry can fix, and the log is unchanged
    with pytest.raises(ss.CommitConflictError, match="removed by a concurrent commit"):
        table.head.commit(lambda state: replace)
    assert [s.operation for s in table.history()] == ["append", "overwrite"]


def file_time():  # type: ignore[no-untyped-def]
    from sleeper_spark.commit import utc_now

    return utc_now()


def test_an_overwrite_never_conflicts_and_removes_what_is_there_when_it_lands(
    table: ss.Table, memory_backend: InMemoryLogBackend
) -> None:
    # Given a rival append that lands while an overwrite is being committed
    table.write(events(0, 0))
    other = rival(memory_backend)
    memory_backend.logs[table.table_id].at_start_of_next_append(lambda: other.write(events(1, 0)))
    # When the overwrite commits
    snapshot = table.write(events(2, 0, rows=5), mode="overwrite")
    # Then it serialises after the rival: only its own rows remain
    assert snapshot.rows_removed == 6 and snapshot.files_removed == 2
    assert table.scan().column("writer").to_pylist() == [2] * 5


def test_a_lost_response_after_the_put_landed_commits_exactly_once(
    table: ss.Table, memory_backend: InMemoryLogBackend
) -> None:
    # Given a log that stores the append but loses the response
    log = memory_backend.logs[table.table_id]
    log.fail_next_append(AppendOutcomeUnknownError("connection reset"), after_storing=True)
    calls_before = log.append_calls
    # When writing
    snapshot = table.write(events(0, 0), metadata={"writer": "0", "seq": "0"})
    # Then the write is reported once, at the number it landed at, and not appended again
    assert [s.version for s in table.history()] == [2]
    assert snapshot.version == 2
    assert log.append_calls - calls_before == 1


def test_a_lost_request_is_retried_at_the_same_number(table: ss.Table, memory_backend: InMemoryLogBackend) -> None:
    # Given a log that fails before storing, with an unknown outcome
    log = memory_backend.logs[table.table_id]
    log.fail_next_append(AppendOutcomeUnknownError("timeout"))
    calls_before = log.append_calls
    # When writing
    snapshot = table.write(events(0, 0))
    # Then the retry commits it once
    assert snapshot.version == 2 and len(table.history()) == 1
    assert log.append_calls - calls_before == 2


def test_an_unknown_outcome_with_an_unreadable_log_keeps_the_staged_files(
    table: ss.Table, memory_backend: InMemoryLogBackend, tmp_path: Path
) -> None:
    # Given an append whose outcome is unknown and a log that then cannot be read
    log = memory_backend.logs[table.table_id]
    table.head.catch_up()
    log.fail_next_append(AppendOutcomeUnknownError("timeout"), after_storing=True)
    log.at_start_of_next_append(lambda: log.fail_next_read(ss.StorageError("log unreachable")))
    # When writing, Then the outcome is reported as unknown and the staged files stay
    with pytest.raises(ss.CommitStateUnknownError):
        table.write(events(0, 0))
    assert len(_data_files(tmp_path / "warehouse")) == 1
    # And once the log is reachable again, the write is found committed exactly once
    assert len(table.history()) == 1


def test_a_failed_retry_of_an_uncertain_append_is_reported_unknown(
    table: ss.Table, memory_backend: InMemoryLogBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Regression (found by tests/reliability/test_store_faults.py): an append whose request was
    # lost in flight, retried at the same number, whose retry the log then refused outright, was
    # reported as a plain StorageError ("not committed") -- and the first request landed later.
    log = memory_backend.logs[table.table_id]
    table.head.catch_up()
    in_flight: list[tuple[int, bytes]] = []
    answers = iter([AppendOutcomeUnknownError("timeout"), ss.StorageError("refused")])

    def append(number: int, body: bytes) -> None:
        error = next(answers)
        if isinstance(error, AppendOutcomeUnknownError):
            in_flight.append((number, body))  # lost in flight: it may still land
        raise error

    monkeypatch.setattr(log, "append", append)
    # When writing, Then the outcome is reported unknown and the staged file is kept
    with pytest.raises(ss.CommitStateUnknownError, match="refused"):
        table.write(events(0, 0), metadata={"writer": "0", "seq": "0"})
    assert len(_data_files(tmp_path / "warehouse")) == 1
    # Because the first request can still land: then the write is in the table, whole
    monkeypatch.undo()
    (number, body), = in_flight
    log.append(number, body)
    assert [s.metadata for s in table.history()] == [{"writer": "0", "seq": "0"}]
    assert table.verify().ok and table.scan().num_rows == 3


def test_a_throttled_tail_read_after_a_lost_response_is_retried(
    table: ss.Table, memory_backend: InMemoryLogBackend
) -> None:
    # Regression (found by tests/reliability/test_store_faults.py): after a lost response, one
    # throttled tail read ended the commit in CommitStateUnknownError instead of a retry.
    log = memory_backend.logs[table.table_id]
    table.head.catch_up()
    log.fail_next_append(AppendOutcomeUnknownError("connection reset"), after_storing=True)
    log.at_start_of_next_append(lambda: log.fail_next_read(LogThrottledError("slow down")))
    # When writing, Then it backs off, reads again, finds its own transaction and reports it once
    snapshot = table.write(events(0, 0))
    assert snapshot.version == 2 and [s.version for s in table.history()] == [2]


def test_throttling_is_retried_with_backoff(memory_backend: InMemoryLogBackend) -> None:
    # Given a log that throttles twice
    waits: list[float] = []
    table = memory_catalog(memory_backend, waits).create_table("events", EVENTS_SCHEMA)
    log = memory_backend.logs[table.table_id]
    log.fail_next_append(LogThrottledError("slow down"))
    log.fail_next_append(LogThrottledError("slow down"))
    # When writing
    table.write(events(0, 0))
    # Then the write succeeds after two recorded back-offs
    assert len(table.history()) == 1 and len(waits) == 2


def test_exhausted_retries_commit_nothing_and_remove_staged_files(
    memory_backend: InMemoryLogBackend, tmp_path: Path
) -> None:
    # Given a writer that loses every attempt to a rival
    waits: list[float] = []
    table = memory_catalog(memory_backend, waits, max_attempts=3).create_table("events", EVENTS_SCHEMA)
    other = rival(memory_backend)
    log = memory_backend.logs[table.table_id]
    for seq in range(3):
        log.at_start_of_next_append(lambda seq=seq: other.write(events(1, seq)))  # type: ignore[misc]
    # When it writes, Then it fails cleanly: nothing of its own committed, its files deleted
    with pytest.raises(ss.CommitFailedError):
        table.write(events(0, 0))
    assert {s.metadata.get("writer") for s in table.history()} == {None}
    assert len(table.history()) == 3
    assert len(_data_files(tmp_path / "warehouse")) == 3
    # And the waits grew within the policy's bounds
    assert len(waits) == 2 and all(0 <= w <= 0.5 for w in waits)


def test_an_idempotent_repeat_commits_nothing(table: ss.Table, tmp_path: Path) -> None:
    # Given a write tagged (app, 7)
    first = table.write(events(0, 0), app_id="ingest", app_version=7)
    # When the same (app, 7) is written again, and then an older version
    again = table.write(events(0, 0), app_id="ingest", app_version=7)
    older = table.write(events(0, 0), app_id="ingest", app_version=3)
    # Then both return the earlier snapshot, nothing new is committed, and no file is left behind
    assert again == first and older == first
    assert len(table.history()) == 1
    assert len(_data_files(tmp_path / "warehouse")) == 1


def test_a_big_body_is_spilled_once_and_reads_back(table: ss.Table, memory_backend: InMemoryLogBackend) -> None:
    # Given an append of many files (one per partition value) whose body exceeds 200 KiB
    days = [f"day-{i:04d}" for i in range(800)]
    data = pa.table({"day": days, "writer": [0] * 800, "seq": [0] * 800, "value": [1.0] * 800}, schema=EVENTS_SCHEMA)
    # When it commits
    snapshot = table.write(data)
    # Then the log item is small, the body lies under _log/bodies, and a fresh reader sees every file
    entry = memory_backend.logs[table.table_id].read_one(2)
    assert entry is not None and len(entry.body) < 1024
    assert len(list(memory_backend.store.list("events/_log/bodies/"))) == 1
    fresh = rival(memory_backend)
    assert len(fresh.files()) == 800 and fresh.latest() == snapshot


def test_version_zero_of_a_new_app_is_committed(table: ss.Table) -> None:
    # Given an app that has never written; When it writes its version 0
    snapshot = table.write(events(0, 0), app_id="fresh", app_version=0)
    # Then it is committed as its own snapshot, and only a repeat of 0 is skipped
    assert (snapshot.app_id, snapshot.app_version, snapshot.version) == ("fresh", 0, 2)
    assert table.write(events(0, 0), app_id="fresh", app_version=0) == snapshot
    assert table.scan().num_rows == 3


def test_a_throttled_tail_read_is_retried_not_failed(table: ss.Table, memory_backend: InMemoryLogBackend) -> None:
    # Given a writer that loses a race and whose next tail read is throttled
    table.write(events(0, 0))
    other = rival(memory_backend)
    log = memory_backend.logs[table.table_id]

    def rival_commits_then_reads_throttle() -> None:
        other.write(events(1, 0))
        log.fail_next_read(LogThrottledError("slow down"))

    log.at_start_of_next_append(rival_commits_then_reads_throttle)
    # When it appends, Then it backs off, reads again, and commits
    snapshot = table.write(events(0, 1))
    assert snapshot.version == 4 and table.scan().num_rows == 9


def test_a_retried_big_commit_writes_its_body_once(table: ss.Table, memory_backend: InMemoryLogBackend) -> None:
    # Given a big append (spilled body) that loses its first attempt to a rival
    table.write(events(0, 0))
    other = rival(memory_backend)
    memory_backend.logs[table.table_id].at_start_of_next_append(lambda: other.write(events(1, 0)))
    days = [f"day-{i:04d}" for i in range(800)]
    data = pa.table({"day": days, "writer": [2] * 800, "seq": [0] * 800, "value": [1.0] * 800}, schema=EVENTS_SCHEMA)
    # When it commits after a retry
    snapshot = table.write(data)
    # Then one body object serves both attempts, and the entry reads back with the final parent
    assert snapshot.version == 4
    assert len(list(memory_backend.store.list("events/_log/bodies/"))) == 1
    assert rival(memory_backend).latest() == snapshot


def test_the_back_off_doubles_from_the_base_delay_as_the_docs_say() -> None:
    # Given the commit policy without jitter, and a loop that loses every attempt
    from sleeper_spark.commit.retry import RetryCommit, commit_retrying
    from sleeper_spark.config import RetryPolicy

    waits: list[float] = []
    policy = RetryPolicy(max_attempts=6, base_delay_s=0.01, max_delay_s=0.05, jitter=0.0)
    retrying = commit_retrying(policy, "t", waits.append)

    # When every attempt asks for another
    def attempt() -> None:
        raise RetryCommit("lost")

    with pytest.raises(Exception):  # noqa: B017  tenacity's RetryError once attempts run out
        retrying(attempt)

    # Then the back-off after attempt n is min(max_delay, base_delay * 2**(n - 1))
    assert waits == pytest.approx([0.01, 0.02, 0.04, 0.05, 0.05])

"""The mutex and the readers-writer lock on the object store."""

from __future__ import annotations

import itertools
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest

from sleeper_spark.errors import LockHeldError, StorageError
from sleeper_spark.storage import LocalObjectStore, ObjectStore
from sleeper_spark.storage.locks import Mutex, ReadWriteLock, break_lock, lock_status
from sleeper_spark.storage.put_and_verify import intent_key, utc_now
from tests.storage.stores import PlainStore
from tests.storage.workers import StrategySpec, mutex_worker, run_processes

PATH = "_locks/compaction"


@pytest.fixture
def store(tmp_path: Path) -> ObjectStore:
    return PlainStore(LocalObjectStore(tmp_path / "warehouse"))


@pytest.mark.parametrize("where,processes,iterations", [
    ("local", 4, 6),
    pytest.param("seaweedfs", 3, 4, marks=pytest.mark.integration),
])
def test_the_mutex_excludes_other_processes(where: str, processes: int, iterations: int, tmp_path: Path,
                                            request: pytest.FixtureRequest, report: list[str]) -> None:
    if where == "local":
        spec = StrategySpec("locks-local", "put-and-verify", str(tmp_path / "warehouse"))
    else:
        endpoint, bucket = request.getfixturevalue("seaweedfs_s3"), request.getfixturevalue("s3_bucket")
        spec = StrategySpec("locks-seaweedfs", "put-and-verify", f"s3://{bucket}/warehouse", endpoint)
    spec.store().put("counter", b"0")
    started = time.perf_counter()
    held = [interval for worker in run_processes(mutex_worker, processes, (spec, PATH, iterations))
            for interval in worker]
    elapsed = time.perf_counter() - started
    assert int(spec.store().get("counter")) == processes * iterations  # no update lost
    held.sort()
    for (_, left), (right, _) in itertools.pairwise(held):
        assert left <= right, "two processes held the mutex at once"
    assert lock_status(spec.store(), PATH) == []
    report.append(f"mutex, {processes} processes x {iterations} turns, {where}: {elapsed:.2f}s (incl. process start)")


def test_the_mutex_is_a_context_manager_and_names_its_holder(store: ObjectStore) -> None:
    with Mutex(store, PATH, label="compactor") as held:
        [info] = lock_status(store, PATH)
        assert info == held.info
        assert info.kind == "mutex" and info.label == "compactor" and info.pid > 0 and info.host
        assert info.expires_at - info.acquired_at == timedelta(hours=1)
        with pytest.raises(LockHeldError, match=r"held by mutex lock .*'compactor' \(pid \d+ on "):
            Mutex(store, PATH, label="second").acquire(timeout_s=0.2)
    assert lock_status(store, PATH) == []
    Mutex(store, PATH).acquire().release()


class FailingDeletes(PlainStore):
    """Deletes fail (with the store's own error) while ``failures`` lasts."""

    failures = 0

    def delete(self, key: str) -> None:
        if self.failures > 0:
            self.failures -= 1
            raise StorageError(f"DELETE {key}: 503 Service Unavailable")
        super().delete(key)


def test_release_retries_a_failing_store_then_leaves_a_breakable_lock(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = FailingDeletes(LocalObjectStore(tmp_path / "warehouse"))
    waits: list[float] = []
    # Given a held mutex and a store whose next three deletes fail, When the mutex is released
    # (armed only once the lock is held: taking it deletes its own put-and-verify intent)
    with Mutex(store, PATH, label="vacuum of events", sleep=waits.append):
        store.failures = 3
    # Then the release retried and the lock is free
    assert lock_status(store, PATH) == [] and waits == [0.2, 0.4, 0.8]
    # Given a held mutex and a store that keeps failing, When the mutex is released
    with Mutex(store, PATH, label="vacuum of events", sleep=waits.append):
        store.failures = 100
    # Then nothing is raised (the work under the lock is done), the error says how to remove the lock,
    [left] = lock_status(store, PATH)
    assert "could not release mutex lock _locks/compaction of 'vacuum of events'" in caplog.text
    assert "sleeper-spark lock break" in caplog.text and "503 Service Unavailable" in caplog.text
    # and the next holder is told who holds it, and can take it once it is broken
    store.failures = 0
    with pytest.raises(LockHeldError, match=r"'vacuum of events'.*sleeper-spark lock break"):
        Mutex(store, PATH).acquire(timeout_s=0)
    assert break_lock(store, PATH, force=True) == [left]
    Mutex(store, PATH).acquire(timeout_s=0).release()


def test_readers_share_and_a_writer_excludes_them(store: ObjectStore) -> None:
    lock = ReadWriteLock(store, PATH, label="reader")
    first, second = lock.read(), lock.read()
    assert sorted(i.kind for i in lock.status()) == ["read", "read"]
    with pytest.raises(LockHeldError, match="read lock"):
        ReadWriteLock(store, PATH, label="writer").write(timeout_s=0)
    first.release()
    with pytest.raises(LockHeldError):
        lock.write(timeout_s=0)
    second.release()
    with lock.write() as writing:
        assert writing.info.kind == "write" and writing.info.key == PATH + ".WRIT"
        with pytest.raises(LockHeldError, match="write lock"):
            lock.read(timeout_s=0)
        with pytest.raises(LockHeldError):
            lock.write(timeout_s=0)
    assert lock.status() == []


def test_a_writer_waits_for_the_last_reader(store: ObjectStore) -> None:
    lock = ReadWriteLock(store, PATH, poll_s=0.02)
    reading = lock.read()
    timer = threading.Timer(0.3, reading.release)
    timer.start()
    started = time.monotonic()
    with lock.write(timeout_s=10):
        assert time.monotonic() - started >= 0.25
    timer.join()


def test_an_expired_holder_can_be_seen_and_broken(store: ObjectStore) -> None:
    crashed = Mutex(store, PATH, label="crashed job", lease_s=60).acquire()  # never released
    live = ReadWriteLock(store, PATH, label="live reader").read()
    later = utc_now() + timedelta(minutes=5)
    statuses = {i.label: i.expired(later) for i in lock_status(store, PATH)}
    assert statuses == {"crashed job": True, "live reader": False}
    assert not any(i.expired(utc_now()) for i in lock_status(store, PATH))
    assert break_lock(store, PATH) == []  # nothing has expired yet
    renewed = live.renew(lease_s=3600)
    assert renewed.expires_at > later
    broken = break_lock(store, PATH, now=later)
    assert [i.label for i in broken] == ["crashed job"]
    Mutex(store, PATH).acquire().release()
    # The crashed holder's release, should it wake up, leaves the new holder's lock alone.
    newer = Mutex(store, PATH, label="newer").acquire()
    crashed.release()
    assert [i.label for i in lock_status(store, PATH) if i.kind == "mutex"] == ["newer"]
    newer.release()
    assert [i.label for i in break_lock(store, PATH, force=True)] == ["live reader"]
    with pytest.raises(LockHeldError, match="broken"):
        live.renew()


def test_a_stale_intent_of_a_crashed_locker_shows_and_can_be_broken(store: ObjectStore) -> None:
    store.put(intent_key(PATH + ".WRIT", "dead"), b'{"target": "x", "host": "h", "pid": 7, "written_at": '
              b'"2020-01-01T00:00:00+00:00"}')
    [intent] = lock_status(store, PATH)
    assert intent.kind == "intent" and intent.pid == 7 and intent.expired(utc_now())
    with pytest.raises(LockHeldError):
        ReadWriteLock(store, PATH).read(timeout_s=0)  # a writer's intent holds readers off
    assert [i.key for i in break_lock(store, PATH)] == [intent.key]
    ReadWriteLock(store, PATH).read().release()


def test_unrelated_keys_sharing_the_prefix_are_not_locks(store: ObjectStore) -> None:
    store.put(PATH + "-2.WRIT", b"another lock")
    store.put(PATH + ".WRITTEN", b"not a lock file")
    assert lock_status(store, PATH) == []
    ReadWriteLock(store, PATH).write().release()
    Mutex(store, PATH).acquire().release()

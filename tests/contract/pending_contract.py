"""The pending appends contract (see sleeper_spark/log/pending.py), as a suite every backend subclasses.

A subclass provides ``open_pending``: a picklable callable that, given a table, opens the SAME
pending appends of that table each time it is called, in this process or in a spawned one.
"""

from __future__ import annotations

import random
import threading
import traceback
import uuid
from collections import Counter
from collections.abc import Callable
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from typing import Any

import pytest

from sleeper_spark.log.pending import PendingAppends
from tests.storage.workers import BARRIER_TIMEOUT_S, run_processes

OpenPending = Callable[[str], PendingAppends]

BIGGEST_BODY = 300 * 1024  # group commit never records a batch bigger than this


def new_key() -> str:
    return uuid.uuid4().hex


def body_of(key: str, size: int = 0) -> bytes:
    """A body that names its key (so a mixed-up record shows), padded to ``size`` bytes."""
    text = f'{{"key": "{key}", "pad": "'.encode()
    return text + b"x" * max(0, size - len(text) - 2) + b'"}'


def put_records(worker: int, open_pending: OpenPending, table: str, count: int, barrier: Barrier,
                queue: Queue[Any]) -> None:
    """A spawned writer: waits for the others, then puts ``count`` records; reports their keys."""
    try:
        pending = open_pending(table)
        keys = [new_key() for _ in range(count)]
        barrier.wait(BARRIER_TIMEOUT_S)
        for key in keys:
            pending.put(key, body_of(key))
        queue.put((worker, keys))
    except BaseException:
        barrier.abort()  # free the others now rather than at the barrier's timeout
        queue.put((worker, "error: " + traceback.format_exc()))


class PendingAppendsContract:
    supports_processes = True
    writers = 4
    records_per_writer = 20

    @pytest.fixture
    def open_pending(self) -> OpenPending:
        raise NotImplementedError

    def test_a_table_without_records_lists_none(self, open_pending: OpenPending) -> None:
        assert open_pending("fresh").list() == []

    def test_a_put_record_is_listed_with_its_bytes(self, open_pending: OpenPending) -> None:
        # Given two records put
        pending = open_pending("t")
        one, two = new_key(), new_key()
        pending.put(one, body_of(one))
        pending.put(two, b"")
        # When the table's records are listed, Then both are there with the bytes put
        assert {(r.key, r.body) for r in pending.list()} == {(one, body_of(one)), (two, b"")}

    def test_a_repeated_put_leaves_one_record(self, open_pending: OpenPending) -> None:
        # Given a record put twice (a retried put whose first answer was lost)
        pending = open_pending("t")
        key = new_key()
        pending.put(key, body_of(key))
        pending.put(key, body_of(key))
        # Then it is listed once
        assert [(r.key, r.body) for r in pending.list()] == [(key, body_of(key))]

    def test_delete_removes_a_record_and_deleting_again_is_no_error(self, open_pending: OpenPending) -> None:
        # Given two records
        pending = open_pending("t")
        gone, kept = new_key(), new_key()
        pending.put(gone, body_of(gone))
        pending.put(kept, body_of(kept))
        # When one is deleted, twice (a retried delete), and a key never put is deleted
        pending.delete(gone)
        pending.delete(gone)
        pending.delete(new_key())
        # Then only the other is listed
        assert [r.key for r in pending.list()] == [kept]

    def test_another_handle_sees_a_put_and_a_delete_at_once(self, open_pending: OpenPending) -> None:
        # Given two handles on one table's records
        writer, reader = open_pending("t"), open_pending("t")
        key = new_key()
        # When one puts a record, Then the other lists it; when that one deletes it, the first lists none
        writer.put(key, body_of(key))
        assert [r.key for r in reader.list()] == [key]
        reader.delete(key)
        assert writer.list() == []

    def test_records_of_two_tables_never_mix(self, open_pending: OpenPending) -> None:
        # Given records of two tables
        one, two = open_pending("one"), open_pending("two")
        ones = [new_key() for _ in range(3)]
        twos = [new_key() for _ in range(2)]
        for key in ones:
            one.put(key, body_of(key))
        for key in twos:
            two.put(key, body_of(key))
        # When one table drops its records and the other deletes one of its own
        two.delete(twos[0])
        one.drop()
        # Then each lists only what is left of its own
        assert one.list() == []
        assert [(r.key, r.body) for r in two.list()] == [(twos[1], body_of(twos[1]))]
        assert open_pending("one").list() == []

    def test_bodies_up_to_the_largest_round_trip(self, open_pending: OpenPending) -> None:
        # Given records of every size up to the biggest a group commit writes, with arbitrary bytes
        pending = open_pending("t")
        bodies = {new_key(): body_of("", size) for size in (1, 4096, 200 * 1024, BIGGEST_BODY)}
        binary = new_key()
        bodies[binary] = random.Random(7).randbytes(BIGGEST_BODY)
        for key, body in bodies.items():
            pending.put(key, body)
        # When they are listed, Then each comes back byte for byte
        listed = {r.key: r.body for r in pending.list()}
        assert listed.keys() == bodies.keys()
        assert all(listed[key] == body for key, body in bodies.items())
        assert len(listed[binary]) == BIGGEST_BODY

    def test_drop_removes_every_record(self, open_pending: OpenPending) -> None:
        # Given a table with more records than one page of a listing holds (1 MB on DynamoDB)
        pending = open_pending("t")
        keys = [new_key() for _ in range(30)]
        for key in keys:
            pending.put(key, body_of(key, 100 * 1024))
        assert sorted(r.key for r in pending.list()) == sorted(keys)
        # When its records are dropped (twice: a retried drop table)
        pending.drop()
        pending.drop()
        # Then none is listed, through this handle or a new one
        assert pending.list() == [] and open_pending("t").list() == []

    def test_a_listing_sees_every_put_acknowledged_before_it_began(self, open_pending: OpenPending) -> None:
        # Given a writer thread putting records one after another
        writer, lister = open_pending("t"), open_pending("t")
        acknowledged: list[str] = []
        done = threading.Event()
        failures: list[BaseException] = []

        def write() -> None:
            try:
                for _ in range(40):
                    key = new_key()
                    writer.put(key, body_of(key))
                    acknowledged.append(key)
            except BaseException as error:
                failures.append(error)
            finally:
                done.set()

        thread = threading.Thread(target=write)
        thread.start()
        # When another handle lists while the writer goes on
        checks = 0
        try:
            while not done.is_set() or checks == 0:
                before = set(acknowledged)
                listed = [r.key for r in lister.list()]
                # Then every listing holds each record acknowledged before it began, once
                assert before <= set(listed), f"missing {sorted(before - set(listed))}"
                assert len(listed) == len(set(listed))
                checks += 1
        finally:
            thread.join()
        assert not failures, failures
        assert {r.key for r in lister.list()} == set(acknowledged)

    def test_a_listing_sees_every_record_of_writers_in_other_processes(self, open_pending: OpenPending) -> None:
        if not self.supports_processes:
            pytest.skip("these records live in one process by design")
        # Given writers in separate processes, as Spark drivers on separate machines
        table = "raced"
        # When they all put their records at the same moment
        results = run_processes(put_records, self.writers, (open_pending, table, self.records_per_writer))
        # Then one listing here finds every record of every writer, exactly once, with its bytes
        put = [key for keys in results for key in keys]
        listed = open_pending(table).list()
        assert len(put) == self.writers * self.records_per_writer
        counts = Counter(r.key for r in listed)
        assert sorted(counts) == sorted(put) and set(counts.values()) == {1}
        assert all(r.body == body_of(r.key) for r in listed)

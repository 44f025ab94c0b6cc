"""The transaction log contract (see sleeper_spark/log/transaction_log.py), as a suite every backend subclasses.

A subclass provides ``log_factory``: a picklable callable that opens the SAME log each time it is
called, in this process or in another one (for the races between real processes).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from sleeper_spark.log import TransactionLog, TransactionNumberTakenError
from tests.fixtures.processes import racing_context
from tests.reliability.budget import LONG_RUN

LogFactory = Callable[[], TransactionLog]


def _try_append(factory: LogFactory, number: int, body: bytes, start: threading.Barrier | None = None) -> bool:
    log = factory()
    if start is not None:
        start.wait()
    try:
        log.append(number, body)
        return True
    except TransactionNumberTakenError:
        return False


def _race_in_process(args: tuple[LogFactory, int, bytes]) -> bool:
    factory, number, body = args
    return _try_append(factory, number, body)


class TransactionLogContract:
    supports_processes = True
    racers = 8
    rounds = 20 if LONG_RUN else 10  # numbers raced for; each round is a race of all racers

    @pytest.fixture
    def log_factory(self) -> LogFactory:
        raise NotImplementedError

    def test_appends_read_back_in_order(self, log_factory: LogFactory) -> None:
        log = log_factory()
        for number in range(1, 6):
            log.append(number, f"body {number}".encode())
        records = list(log.read())
        assert [r.number for r in records] == [1, 2, 3, 4, 5]
        assert [r.body for r in records] == [f"body {n}".encode() for n in range(1, 6)]

    def test_a_damaged_entry_is_replaced_only_while_it_holds_the_damaged_bytes(self, log_factory: LogFactory) -> None:
        # Given entry 2 holding some bytes (damaged, as far as the caller knows)
        log = log_factory()
        log.append(1, b"one")
        log.append(2, b"dam")
        # When a repair names other bytes, it is refused and nothing changes
        with pytest.raises(TransactionNumberTakenError):
            log.replace_damaged(2, b"other", b"repaired")
        with pytest.raises(TransactionNumberTakenError):
            log.replace_damaged(3, b"", b"repaired")  # no such entry: nothing to replace
        assert [r.body for r in log.read()] == [b"one", b"dam"]
        # Then a repair naming the stored bytes replaces them, once
        log.replace_damaged(2, b"dam", b"repaired")
        assert [r.body for r in log.read()] == [b"one", b"repaired"]
        with pytest.raises(TransactionNumberTakenError):
            log.replace_damaged(2, b"dam", b"again")

    def test_a_taken_number_is_refused_and_the_first_body_kept(self, log_factory: LogFactory) -> None:
        log = log_factory()
        log.append(1, b"first")
        with pytest.raises(TransactionNumberTakenError):
            log.append(1, b"second")
        assert log.read_one(1) is not None and log.read_one(1).body == b"first"  # type: ignore[union-attr]

    def test_read_after_and_up_to_bound_the_tail(self, log_factory: LogFactory) -> None:
        log = log_factory()
        for number in range(1, 11):
            log.append(number, str(number).encode())
        assert [r.number for r in log.read(after=7)] == [8, 9, 10]
        assert [r.number for r in log.read(after=2, up_to=4)] == [3, 4]
        assert list(log.read(after=10)) == []

    def test_an_empty_log_reads_nothing(self, log_factory: LogFactory) -> None:
        log = log_factory()
        assert list(log.read()) == []
        assert log.first_number() is None
        assert log.read_one(1) is None

    def test_another_handle_sees_appends_at_once(self, log_factory: LogFactory) -> None:
        writer, reader = log_factory(), log_factory()
        writer.append(1, b"a")
        assert [r.number for r in reader.read()] == [1]
        writer.append(2, b"b")
        assert [r.number for r in reader.read(after=1)] == [2]

    def test_delete_up_to_truncates_the_front(self, log_factory: LogFactory) -> None:
        log = log_factory()
        for number in range(1, 8):
            log.append(number, b"x")
        assert log.delete_up_to(4) == 4
        assert log.first_number() == 5
        assert [r.number for r in log.read(after=4)] == [5, 6, 7]

    def test_racing_threads_have_exactly_one_winner_per_number(self, log_factory: LogFactory) -> None:
        for number in range(1, self.rounds + 1):
            start = threading.Barrier(self.racers)
            with ThreadPoolExecutor(self.racers) as pool:
                wins = list(pool.map(_try_append, [log_factory] * self.racers, [number] * self.racers,
                                     [f"{i}".encode() for i in range(self.racers)], [start] * self.racers))
            assert wins.count(True) == 1, f"round {number}: {wins.count(True)} winners"
        assert [r.number for r in log_factory().read()] == list(range(1, self.rounds + 1))

    def test_racing_processes_have_exactly_one_winner_per_number(self, log_factory: LogFactory) -> None:
        if not self.supports_processes:
            pytest.skip("this log lives in one process by design")
        context = racing_context()
        with context.Pool(self.racers) as pool:
            for number in range(1, self.rounds + 1):
                wins = pool.map(_race_in_process, [(log_factory, number, f"{i}".encode()) for i in range(self.racers)])
                assert wins.count(True) == 1, f"round {number}: {wins.count(True)} winners"

"""The state pointer contract (see sleeper_spark/log/state_snapshots.py), as a suite every backend subclasses.

A subclass provides ``open_pointer``: a picklable callable that, given a table, opens the SAME
pointer of that table each time it is called, in this process or in a spawned one.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from sleeper_spark.log.state_snapshots import StatePointer
from tests.fixtures.processes import racing_context

OpenPointer = Callable[[str], StatePointer]


def _advance(open_pointer: OpenPointer, table: str, number: int, start: threading.Barrier | None = None) -> bool:
    pointer = open_pointer(table)
    if start is not None:
        start.wait()
    return pointer.advance(number)


def _advance_in_process(args: tuple[OpenPointer, str, int]) -> bool:
    return _advance(*args)


def _targets(round_: int, racers: int) -> list[int]:
    """What each racer advances to in a round: three numbers above the last round's, each shared."""
    return [10 * round_ + racer % 3 for racer in range(racers)]


class StatePointerContract:
    supports_processes = True
    racers = 6
    rounds = 10

    @pytest.fixture
    def open_pointer(self) -> OpenPointer:
        raise NotImplementedError

    def _check_round(self, pointer: StatePointer, round_: int, wins: list[bool]) -> None:
        """One True at most per number, exactly one for the round's highest, which the pointer holds."""
        targets = _targets(round_, len(wins))
        won = Counter(target for target, win in zip(targets, wins, strict=True) if win)
        assert all(count == 1 for count in won.values()), f"round {round_}: winners per number {dict(won)}"
        assert won[max(targets)] == 1, f"round {round_}: nobody moved it to {max(targets)}"
        assert pointer.get() == max(targets)

    def test_a_new_pointer_points_nowhere(self, open_pointer: OpenPointer) -> None:
        # Given a table whose pointer was never advanced, When it is read, Then it names no number
        assert open_pointer("fresh").get() is None

    def test_advance_moves_forward_only(self, open_pointer: OpenPointer) -> None:
        # Given a pointer advanced to 5
        pointer = open_pointer("t")
        assert pointer.advance(5) is True
        # When it is advanced to an older number and to the same one, Then it stays, saying False
        assert pointer.advance(3) is False
        assert pointer.advance(5) is False
        assert pointer.get() == 5
        # When it is advanced to a newer number, Then it moves, saying True
        assert pointer.advance(7) is True
        assert pointer.get() == 7

    def test_the_first_advance_may_be_to_any_number(self, open_pointer: OpenPointer) -> None:
        # Given two fresh pointers, When one starts at 1 and one at a big number, Then both move
        assert open_pointer("one").advance(1) is True
        assert open_pointer("big").advance(10**12) is True
        assert (open_pointer("one").get(), open_pointer("big").get()) == (1, 10**12)

    def test_another_handle_sees_an_advance_at_once(self, open_pointer: OpenPointer) -> None:
        # Given two handles on one table's pointer
        writer, reader = open_pointer("t"), open_pointer("t")
        # When one advances it, Then the other reads the new number and cannot move it back
        writer.advance(4)
        assert reader.get() == 4
        assert reader.advance(2) is False
        assert writer.get() == 4

    def test_pointers_of_different_tables_are_separate(self, open_pointer: OpenPointer) -> None:
        # Given the pointers of two tables, When one is advanced and the other dropped
        one, two = open_pointer("one"), open_pointer("two")
        one.advance(8)
        two.advance(3)
        two.drop()
        # Then each kept only its own doings
        assert one.get() == 8 and two.get() is None

    def test_drop_deletes_the_pointer(self, open_pointer: OpenPointer) -> None:
        # Given an advanced pointer
        pointer = open_pointer("t")
        pointer.advance(9)
        # When it is dropped (twice: a retried drop table)
        pointer.drop()
        pointer.drop()
        # Then it points nowhere, and a table made again under the name starts from any number
        assert pointer.get() is None
        assert pointer.advance(1) is True
        assert open_pointer("t").get() == 1

    def test_racing_threads_end_at_the_highest_with_one_winner_per_number(self, open_pointer: OpenPointer) -> None:
        # Given racers that, each round, all advance one table's pointer to one of three newer numbers
        for round_ in range(1, self.rounds + 1):
            start = threading.Barrier(self.racers)
            targets = _targets(round_, self.racers)
            # When they advance at the same moment
            with ThreadPoolExecutor(self.racers) as pool:
                wins = list(pool.map(_advance, [open_pointer] * self.racers, ["raced"] * self.racers, targets,
                                     [start] * self.racers))
            # Then no number was won twice, the highest was won, and the pointer holds it
            self._check_round(open_pointer("raced"), round_, wins)

    def test_racing_processes_end_at_the_highest_with_one_winner_per_number(self, open_pointer: OpenPointer) -> None:
        if not self.supports_processes:
            pytest.skip("this pointer lives in one process by design")
        # Given racing processes, as Spark drivers of one table on several machines
        context = racing_context()
        with context.Pool(self.racers) as pool:
            for round_ in range(1, self.rounds + 1):
                # When each round they advance the pointer to one of three newer numbers
                args = [(open_pointer, "raced", target) for target in _targets(round_, self.racers)]
                wins = pool.map(_advance_in_process, args)
                # Then no number was won twice, the highest was won, and the pointer holds it
                self._check_round(open_pointer("raced"), round_, wins)

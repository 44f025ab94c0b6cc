"""The group-commit contention simulation (bench/group_commit_sim.py): fixed latencies, no servers."""

from __future__ import annotations

import dataclasses
import math

import pytest

from bench.group_commit_sim import (
    AWS,
    Fixed,
    Kind,
    LatencyProfile,
    Listing,
    LogNormal,
    Process,
    SimConfig,
    Simulation,
    SimulationError,
    Uniform,
    _Writer,
    simulate,
)
from sleeper_spark.commit.group import SOLO_BELOW

LATENCY_S = 0.004
FIXED = LatencyProfile.every_kind("fixed 4 ms", Fixed(LATENCY_S))
# Racing writers need latencies with a tail: with bounded ones a writer that wins alone keeps
# winning (see the starvation test below).
TAILED = LatencyProfile.every_kind("4 ms, p99 12 ms", LogNormal(LATENCY_S, 3.0))


def config(writers: int, **changes: object) -> SimConfig:
    base = SimConfig(writers, duration_s=1.5, warmup_s=0.5, profile=FIXED if writers == 1 else TAILED)
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_one_writer_makes_one_request_per_append_at_one_over_the_latency() -> None:
    result = simulate(config(1))

    # Besides its puts, one listing of the pending records in the one-second window: a writer
    # committing alone back to back looks once a second for appends others recorded.
    assert result.requests == {Kind.CONDITIONAL_PUT: result.appends, Kind.QUERY_PENDING: 1}
    assert result.requests_per_append == pytest.approx(1.0, rel=0.01)
    assert result.appends_per_s == pytest.approx(1 / LATENCY_S, rel=0.01)
    assert result.p50_s == pytest.approx(LATENCY_S) and result.p99_s == pytest.approx(LATENCY_S)
    assert result.members_per_transaction == 1.0


def test_many_writers_commit_every_append_exactly_once_and_share_transactions() -> None:
    simulation = Simulation(config(64))
    result = simulation.run()  # checks exactly-once itself, and raises if broken

    members = [member for transaction in simulation.log for member in transaction]
    assert sorted(members) == list(range(1, simulation.started + 1))
    assert not simulation.live  # every pending record deleted
    assert result.members_per_transaction > 1
    assert result.requests[Kind.PUT] > 0 and result.requests[Kind.QUERY_PENDING] > 0


class ProposesCommittedAppends(Simulation):
    """A broken combiner: puts every listed record in its proposal, even those already in the log."""

    def _propose(self, head: int, listing: Listing | None, own: int) -> list[int] | None:
        if len(self.log) != head:
            return None
        others = [] if listing is None else [
            append for append in self.records[listing.first:listing.end] if append in self.live and append != own]
        self._commit(head + 1, [own, *others])
        return others


def _two_rounds(simulation: Simulation) -> list[list[int]]:
    """Two proposals by hand: the winner of number 1 takes appends 1 and 2; before its delete
    lands, the writer of append 3 lists the records, sees 1 and 2 still there, and proposes 2."""
    simulation._record(1)
    simulation._record(2)
    assert simulation._propose(0, simulation._list_pending(), own=1) == [2]
    simulation._record(3)
    settled = simulation._propose(1, simulation._list_pending(), own=3)
    assert settled is not None
    simulation._delete([1, 2])
    simulation._delete([3, *settled])
    simulation.started, simulation.completions = 3, [(0.0, 0.0)] * 3
    simulation._check()
    return simulation.log


def test_a_proposal_leaves_out_what_the_log_has_and_settles_its_records() -> None:
    assert _two_rounds(Simulation(config(1))) == [[1, 2], [3]]


def test_the_self_check_catches_an_append_committed_twice() -> None:
    # Once a run of many writers exposed this combiner; now the winner deletes the records it
    # settled straight away, so a record stays listed after its append landed only for that
    # delete's round trip, and a run rarely has a proposal win inside it.
    with pytest.raises(SimulationError, match=r"^2 appends committed more than once"):
        _two_rounds(ProposesCommittedAppends(config(1)))


BOUNDED = [Fixed(LATENCY_S), Uniform(0.003, 0.005)]


@pytest.mark.parametrize("latency", BOUNDED, ids=["fixed", "3-5 ms"])
def test_without_help_a_writer_winning_alone_starves_the_recorded_ones_while_latencies_are_bounded(
        latency: Fixed | Uniform) -> None:
    # The winner of number 1 never loses, so its estimate stays at 0 and it puts one number per
    # round trip; any other put lands at least 1.5 round trips after its writer read the head, so
    # it always finds the number taken. The others finish only once the winner stops (the drain
    # after the run). Only a latency tail (a slow request of the winner) lets another in.
    profile = LatencyProfile.every_kind("bounded", latency)
    simulation = Simulation(config(32, profile=profile, help_every_s=None))
    result = simulation.run()

    assert result.members_per_transaction == 1.0
    assert result.appends_per_s < 1 / 0.003
    starved = [latency for _, latency in simulation.completions if latency > 1.0]
    assert len(starved) == 31  # each other writer's first append, waiting the whole run


@pytest.mark.parametrize("latency", BOUNDED, ids=["fixed", "3-5 ms"])
def test_a_writer_winning_alone_takes_the_recorded_appends_in_once_a_second(latency: Fixed | Uniform) -> None:
    # The same race with the help: the winner lists the pending records once a second and puts
    # them in with its own. A recorded append waits at most about that second, plus the back-off
    # after which its writer reads the tail and finds it in (the commit retry policy's cap).
    profile = LatencyProfile.every_kind("bounded", latency)
    simulation = Simulation(config(32, profile=profile, duration_s=3.5))
    result = simulation.run()

    assert result.members_per_transaction > 1
    longest = max(latency for _, latency in simulation.completions)
    assert longest < 1.0 + simulation.config.commit_backoff_cap_s + 0.1


class StartsContended(Simulation):
    """Its writers start out believing the table busy, as after a burst of other writers."""

    def _group_writer(self, writer: _Writer) -> Process:
        writer.contention = 1.0
        self.writer = writer
        return super()._group_writer(writer)


def test_a_writer_that_believes_the_table_busy_records_until_its_records_meet_nobody() -> None:
    # No blind put probes a table believed busy; each recorded append that meets no other writer
    # observes 0, and three of them take the estimate from 1 to 0.42, under one half.
    simulation = StartsContended(config(1, warmup_s=0.0))
    result = simulation.run()

    assert result.requests[Kind.PUT] == 3
    assert result.members_per_transaction == 1.0
    assert simulation.writer.contention < SOLO_BELOW


def test_group_commit_beats_every_writer_retrying_alone_at_32_writers() -> None:
    # Once more than twice as fast as the writers retrying alone; now the writers that find the
    # log calm between rounds commit alone and take numbers one append at a time, so the gain is
    # in the tail more than in the rate.
    on = simulate(config(32))
    off = simulate(config(32, group_commit=False))

    assert on.appends_per_s > off.appends_per_s
    assert on.p99_s < off.p99_s
    assert on.members_per_transaction > 1
    assert off.members_per_transaction == 1.0


def test_at_low_contention_group_commit_costs_little() -> None:
    # Two writers mostly win their blind puts, so they rarely record: the adaptive solo path's
    # point is that group commit then runs about as fast as without it.
    on, off = (simulate(SimConfig(2, duration_s=5.0, warmup_s=1.0, profile=AWS, group_commit=group_commit))
               for group_commit in (True, False))

    assert on.appends_per_s >= 0.8 * off.appends_per_s


def test_256_writers_without_a_capacity_limit_append_over_5000_per_second() -> None:
    result = simulate(SimConfig(256, duration_s=3.0, warmup_s=1.0, profile=AWS))

    assert result.appends_per_s > 5000


def test_the_same_seed_gives_the_same_run_and_another_seed_another() -> None:
    def outcome(seed: int) -> tuple[object, ...]:
        result = simulate(SimConfig(32, duration_s=0.5, warmup_s=0.1, profile=AWS, seed=seed))
        return result.appends, result.latencies_s, result.transactions, result.members, dict(result.requests)

    assert outcome(7) == outcome(7)
    assert outcome(7) != outcome(8)


@pytest.mark.parametrize("over_capacity", ["throttle", "queue"])
def test_a_partition_limit_caps_the_rate_of_one_unit_writes(over_capacity: str) -> None:
    # One writer, 1 ms requests, one write unit each: 1,000 appends/s unlimited, 100 with the limit.
    fast = LatencyProfile.every_kind("fixed 1 ms", Fixed(0.001))
    result = simulate(SimConfig(1, duration_s=4.0, warmup_s=2.0, profile=fast, partition_writes_per_s=100,
                                over_capacity=over_capacity))  # type: ignore[arg-type]

    assert result.appends_per_s == pytest.approx(100, rel=0.1)
    assert (sum(result.throttled.values()) > 0) == (over_capacity == "throttle")
    assert result.units_per_append("log", read=False) == 1.0


def test_a_conditional_put_is_charged_for_the_bigger_of_its_item_and_the_one_in_place() -> None:
    simulation = Simulation(config(1))
    simulation._commit(1, list(range(1, 11)))  # 300 + 10 * 390 bytes: 5 write units

    assert simulation._put_units(1, 1) == 5  # a lost race costs what the winner's item weighs
    assert simulation._put_units(2, 1) == 1  # a free number: its own 690 bytes
    assert simulation._put_units(2, 10) == 5
    assert simulation._tail_units(0) == 2  # 4,200 bytes read: two 4 KB read units


def test_without_limits_the_partition_cap_reflects_the_charges() -> None:
    result = simulate(config(1))  # one write unit per append, nothing else

    assert result.partition_cap(writes_per_s=1000, reads_per_s=3000) == pytest.approx(1000)
    assert math.isinf(result.partition_cap(writes_per_s=math.inf, reads_per_s=math.inf))

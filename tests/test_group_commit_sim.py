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
    LogNormal,
    SimConfig,
    Simulation,
    SimulationError,
    Uniform,
    simulate,
)

LATENCY_S = 0.004
FIXED = LatencyProfile.every_kind("fixed 4 ms", Fixed(LATENCY_S))
# Racing writers need latencies with a tail: with bounded ones a calm writer keeps the fast path
# for ever (see the starvation test below).
TAILED = LatencyProfile.every_kind("4 ms, p99 12 ms", LogNormal(LATENCY_S, 3.0))


def config(writers: int, **changes: object) -> SimConfig:
    base = SimConfig(writers, duration_s=1.5, warmup_s=0.5, profile=FIXED if writers == 1 else TAILED)
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_one_writer_makes_one_request_per_append_at_one_over_the_latency() -> None:
    result = simulate(config(1))

    assert result.requests == {Kind.CONDITIONAL_PUT: result.appends}
    assert result.requests_per_append == 1.0
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

    def _propose(self, head: int, listed: int, own: int) -> bool:
        if len(self.log) != head:
            return False
        others = [self.records[i] for i in range(self.first_live, listed) if self.records[i] in self.live]
        return self._commit(head + 1, [own, *(a for a in others if a != own)])


def test_the_self_check_catches_an_append_committed_twice() -> None:
    with pytest.raises(SimulationError, match="more than once"):
        ProposesCommittedAppends(config(64)).run()


@pytest.mark.parametrize("latency", [Fixed(LATENCY_S), Uniform(0.003, 0.005)], ids=["fixed", "3-5 ms"])
def test_a_calm_writer_keeps_the_fast_path_and_starves_the_combiners_while_latencies_are_bounded(
        latency: Fixed | Uniform) -> None:
    # The winner of number 1 never loses, so it stays calm and puts one number per round trip; a
    # combiner's put lands at least 1.5 round trips after it read the head, so it always finds
    # the number taken. The others finish only once the calm writer stops (the drain after the
    # run). Only a latency tail (a slow request of the calm writer) lets a combiner in.
    simulation = Simulation(config(32, profile=LatencyProfile.every_kind("bounded", latency)))
    result = simulation.run()

    assert result.members_per_transaction == 1.0
    assert result.appends_per_s < 1 / 0.003
    starved = [latency for _, latency in simulation.completions if latency > 1.0]
    assert len(starved) == 31  # each other writer's first append, waiting the whole run


def test_group_commit_beats_every_writer_retrying_alone_at_32_writers() -> None:
    on = simulate(config(32))
    off = simulate(config(32, group_commit=False))

    assert on.appends_per_s > 2 * off.appends_per_s
    assert on.p99_s < off.p99_s
    assert off.members_per_transaction == 1.0


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

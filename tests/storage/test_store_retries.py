"""The one retry policy of store calls: bounded in attempts and in time, its sleep injected."""

from __future__ import annotations

import random

import pytest

from sleeper_spark.config import CatalogConfig, StoreRetryPolicy
from sleeper_spark.storage.retry import FailureKind, StoreRetries


class FakeClock:
    """A clock that only moves when the code under test sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


def run(retries: StoreRetries, outcomes: list[FailureKind | str | None]) -> str | None:
    """Attempts that fail with each kind in turn, or succeed with a string."""
    for attempt in retries:
        with attempt:
            outcome = outcomes.pop(0)
            if isinstance(outcome, str):
                return outcome
            retries.failed(OSError(f"failure {retries.attempts}"), outcome)
            raise ValueError("no retry fixes this")
    return None


def test_a_call_that_recovers_returns_and_the_waits_follow_the_policy() -> None:
    clock = FakeClock()
    policy = StoreRetryPolicy(max_attempts=5, base_delay_s=0.1, max_delay_s=0.3, jitter=0.0)
    retries = StoreRetries(policy, "test", sleep=clock.sleep, clock=clock.clock)
    result = run(retries, [FailureKind.NOT_APPLIED, FailureKind.THROTTLED, FailureKind.NOT_APPLIED, "done"])
    assert result == "done" and retries.attempts == 4
    assert clock.waits == pytest.approx([0.1, 0.2, 0.3])  # doubling, capped at max_delay_s
    assert not retries.maybe_applied and not retries.throttled


def test_full_jitter_stays_under_the_ceiling() -> None:
    policy = StoreRetryPolicy(base_delay_s=1.0, max_delay_s=4.0, jitter=1.0)
    rng = random.Random(7)
    delays = [policy.delay_s(retry, rng) for retry in (1, 2, 3, 10) for _ in range(50)]
    assert all(0 <= d <= 4.0 for d in delays) and max(delays[:50]) <= 1.0


def test_the_loop_ends_after_max_attempts_remembering_what_the_failures_meant() -> None:
    clock = FakeClock()
    retries = StoreRetries(StoreRetryPolicy(max_attempts=3), "test", sleep=clock.sleep, clock=clock.clock)
    outcomes: list[FailureKind | str | None] = [FailureKind.MAYBE_APPLIED, FailureKind.NOT_APPLIED,
                                                FailureKind.THROTTLED, "never reached"]
    assert run(retries, outcomes) is None
    assert retries.attempts == 3 and len(clock.waits) == 2
    assert retries.maybe_applied and retries.throttled
    assert str(retries.last) == "failure 3"


def test_the_loop_ends_before_its_time_budget_is_spent() -> None:
    # Given a policy whose waits (1, 2, 4, ... s) would outlast a 5 s budget long before 100 attempts
    clock = FakeClock()
    policy = StoreRetryPolicy(max_attempts=100, base_delay_s=1.0, max_delay_s=100.0, jitter=0.0, max_elapsed_s=5.0)
    retries = StoreRetries(policy, "test", sleep=clock.sleep, clock=clock.clock)
    # When every attempt is throttled
    assert run(retries, [FailureKind.THROTTLED] * 100) is None
    # Then it stops rather than wait past the budget
    assert clock.waits == [1.0, 2.0] and clock.now <= 5.0 and retries.attempts == 3


def test_a_failure_no_retry_fixes_propagates_at_once() -> None:
    clock = FakeClock()
    retries = StoreRetries(StoreRetryPolicy(), "test", sleep=clock.sleep, clock=clock.clock)
    with pytest.raises(ValueError, match="no retry fixes this"):
        run(retries, [FailureKind.NOT_APPLIED, None])
    assert clock.waits and retries.attempts == 2


def test_the_policy_round_trips_through_catalog_options() -> None:
    config = CatalogConfig.from_options({"warehouse": "/w", "store_retry.max_attempts": "9",
                                         "STORE_RETRY.max_elapsed_s": "12.5"})
    assert config.store_retry == StoreRetryPolicy(max_attempts=9, max_elapsed_s=12.5)
    assert CatalogConfig.from_options(config.to_options()) == config

"""Loops of the conditional-write strategies end, in attempts and in time, whatever the store does.

The DynamoDB client here is a stub that misbehaves on purpose, and the clock moves only when the
code under test sleeps, so a loop without a bound would spin for ever; each stub gives up after
a generous number of calls with a ``RuntimeError``, so that such a loop fails instead of hanging.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from botocore.exceptions import ClientError

from sleeper_spark.config import StoreRetryPolicy
from sleeper_spark.errors import LockHeldError
from sleeper_spark.storage.dynamodb_lock import DynamoDBLockConditionalWrites
from sleeper_spark.storage.put_and_verify import PutAndVerifySettings, intent_key
from sleeper_spark.storage.put_and_verify_writes import PutAndVerifyConditionalWrites
from tests.storage.stores import MemoryStore

RUNAWAY = 10_000  # calls after which a stub calls the loop endless


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.waits: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds
        if len(self.waits) > RUNAWAY:
            raise RuntimeError("the loop never ended")


class HostileLockTable:
    """A lock table whose record always belongs to someone else: a new holder every time it is asked.

    ``timeout_ms`` is the lease each holder claims.
    """

    def __init__(self, timeout_ms: int) -> None:
        self.timeout_ms = timeout_ms
        self.holders = itertools.count()
        self.calls = 0

    def put_item(self, **request: Any) -> None:
        self.calls += 1
        if self.calls > RUNAWAY:
            raise RuntimeError("the loop never ended")
        holder = next(self.holders)
        item = {"owner": {"S": f"holder-{holder}"}, "generation": {"N": str(holder)},
                "timeout": {"N": str(self.timeout_ms)}}
        error: Any = {"Error": {"Code": "ConditionalCheckFailedException", "Message": "held"}, "Item": item,
                      "ResponseMetadata": {"HTTPStatusCode": 400}}
        raise ClientError(error, "PutItem")

    def delete_item(self, **request: Any) -> None:
        pass


def hostile_strategy(table: HostileLockTable, clock: FakeClock, policy: StoreRetryPolicy) -> DynamoDBLockConditionalWrites:
    return DynamoDBLockConditionalWrites(MemoryStore(), "locks", client=table, timeout_s=1.0,  # type: ignore[arg-type]
                                         test_interval_s=0.1, clock=clock.clock, sleep=clock.sleep, retry=policy)


def test_a_lock_that_keeps_changing_hands_ends_in_lock_held() -> None:
    # Given a lock table where every holder dies and another takes its place as we take over
    table, clock = HostileLockTable(timeout_ms=1000), FakeClock()
    conditional = hostile_strategy(table, clock, StoreRetryPolicy(max_attempts=4, max_elapsed_s=600))
    # When a create is attempted
    with pytest.raises(LockHeldError, match="changed hands 4 times"):
        conditional.create_if_absent("t/_log/1.json", b"x")
    # Then it gave up after the policy's rounds, having waited out each stale lease once
    assert table.calls == 4
    assert clock.now - 1000.0 < 4 * (3.0 + 0.2)


def test_a_lease_that_never_goes_stale_ends_at_the_time_budget() -> None:
    # Given a holder that claims a lease of a million seconds
    table, clock = HostileLockTable(timeout_ms=10**9), FakeClock()
    conditional = hostile_strategy(table, clock, StoreRetryPolicy(max_elapsed_s=30))
    # When a create waits for it
    with pytest.raises(LockHeldError, match="still held by holder-0"):
        conditional.create_if_absent("t/_log/1.json", b"x")
    # Then it stops once the budget (plus one stale wait of our own timeout) has passed
    assert 30.0 <= clock.now - 1000.0 <= 30.0 + 3.0 + 0.2
    assert table.calls == 1


def test_put_and_verify_gives_up_within_its_time_budget() -> None:
    # Given another writer's fresh intent that never goes away, and room for a thousand attempts
    store = MemoryStore()
    store.put(intent_key("t/k", "other"), b"{}")
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        store.advance(seconds)

    settings = PutAndVerifySettings(max_attempts=1000, base_delay_s=1.0, max_delay_s=1.0, max_elapsed_s=5.0)
    conditional = PutAndVerifyConditionalWrites(store, settings, sleep=sleep, now=lambda: store.now)
    # When a create keeps meeting it
    with pytest.raises(LockHeldError, match="5s"):
        conditional.create_if_absent("t/k", b"x")
    # Then it stopped at the time budget, long before the attempts ran out
    assert sum(waits) <= 5.0 and len(waits) < 1000

"""The dynamodb-lock strategy against SeaweedFS (without its conditional requests) and DynamoDB Local.

Time is a fake clock wherever a test waits for a lock to go stale: ``sleep`` moves the clock,
so waiting out ``timeout * max_clock_skew_rate`` (60 s by default) takes no real time, while
every HEAD and PutItem still goes to the real servers.
"""

from __future__ import annotations

import os
import pickle
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import boto3
import pytest

from sleeper_spark.config import CatalogConfig
from sleeper_spark.errors import ConfigError, PathExistsError, StorageError, WriteOutcomeUnknownError
from sleeper_spark.storage import ObjectStore
from sleeper_spark.storage.dynamodb_lock import DynamoDBLockConditionalWrites, ensure_lock_table
from sleeper_spark.storage.s3 import S3ObjectStore
from tests.fixtures.processes import racing_context
from tests.storage.stores import PlainStore

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

pytestmark = pytest.mark.integration

STALE_AFTER_S = 20.0 * 3  # the defaults: timeout x max_clock_skew_rate


class FakeClock:
    """Monotonic time that only ``sleep`` moves; ``on_sleep`` runs at each sleep."""

    def __init__(self, on_sleep: Callable[[float], None] | None = None) -> None:
        self.now = 1000.0
        self.slept = 0
        self._on_sleep = on_sleep

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.slept += 1
        if self._on_sleep is not None:
            self._on_sleep(self.now)


@pytest.fixture
def config(seaweedfs_s3: str, s3_bucket: str, dynamodb_local: str, lock_table: str) -> CatalogConfig:
    return CatalogConfig(catalog="object_store", warehouse=f"s3://{s3_bucket}/warehouse", s3_endpoint_url=seaweedfs_s3,
                         dynamodb_endpoint_url=dynamodb_local, conditional_writes="dynamodb-lock", lock_table=lock_table)


@pytest.fixture
def store(config: CatalogConfig) -> PlainStore:
    return PlainStore(S3ObjectStore(config.warehouse, config))


@pytest.fixture
def client(dynamodb_local: str) -> DynamoDBClient:
    """A client of its own, so that event hooks of one test reach no other."""
    return boto3.session.Session().client("dynamodb", endpoint_url=dynamodb_local, region_name="us-east-1")


@pytest.fixture
def put_items(client: DynamoDBClient) -> Iterator[list[dict[str, Any]]]:
    """Every PutItem the client sends: its condition and item."""
    seen: list[dict[str, Any]] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        seen.append(params)

    client.meta.events.register("provide-client-params.dynamodb.PutItem", record)
    yield seen
    client.meta.events.unregister("provide-client-params.dynamodb.PutItem", record)


def strategy(store: ObjectStore, client: DynamoDBClient, table: str, clock: FakeClock | None = None,
             **options: Any) -> DynamoDBLockConditionalWrites:
    timing: dict[str, Any] = {"clock": clock.clock, "sleep": clock.sleep} if clock else {}
    return DynamoDBLockConditionalWrites(store, table, client=client, test_interval_s=1.0, **timing, **options)


def plant_lock(client: DynamoDBClient, table: str, path: str, etag: str = "*", owner: str = "dead") -> None:
    """The record a holder leaves when it dies between taking the lock and writing."""
    client.put_item(TableName=table, Item={
        "path": {"S": path}, "etag": {"S": etag}, "generation": {"N": "0"}, "timeout": {"N": "20000"},
        "ttl": {"N": str(int(time.time()) + 3600)}, "owner": {"S": owner}, "holder": {"S": "elsewhere:1"},
    })


def lock_record(client: DynamoDBClient, table: str, path: str, etag: str = "*") -> dict[str, Any] | None:
    item = client.get_item(TableName=table, Key={"path": {"S": path}, "etag": {"S": etag}}, ConsistentRead=True)
    return dict(item["Item"]) if "Item" in item else None


def test_a_crashed_holder_is_taken_over_only_after_timeout_times_skew(
    store: PlainStore, client: DynamoDBClient, lock_table: str, put_items: list[dict[str, Any]]
) -> None:
    key = f"t/_log/{uuid.uuid4().hex}.json"
    plant_lock(client, lock_table, store.uri(key))
    put_items.clear()
    clock = FakeClock()
    started = clock.now
    times: list[float] = []
    client.meta.events.register("before-call.dynamodb.PutItem", lambda **_: times.append(clock.now))
    etag = strategy(store, client, lock_table, clock).create_if_absent(key, b"ours")

    assert store.get(key) == b"ours" and etag
    first, takeover = put_items
    assert first["ConditionExpression"] == "attribute_not_exists(#path)"
    assert "#generation = :generation" in takeover["ConditionExpression"]
    assert takeover["Item"]["generation"] == {"N": "1"}
    # Taken over at the first poll past timeout x skew, not one poll earlier.
    assert times[0] == started
    assert STALE_AFTER_S < times[1] - started <= STALE_AFTER_S + 1.0
    assert lock_record(client, lock_table, store.uri(key)) is None  # released after the write


def test_a_live_holder_that_writes_in_time_is_never_taken_over(
    store: PlainStore, client: DynamoDBClient, lock_table: str, put_items: list[dict[str, Any]]
) -> None:
    key = f"t/_log/{uuid.uuid4().hex}.json"
    plant_lock(client, lock_table, store.uri(key), owner="slow-but-alive")
    put_items.clear()
    start = 1000.0

    def holder_writes_at_50s(now: float) -> None:
        if now - start >= 50 and store.head(key) is None:
            store.put(key, b"holder's")

    clock = FakeClock(holder_writes_at_50s)
    with pytest.raises(PathExistsError):
        strategy(store, client, lock_table, clock).create_if_absent(key, b"ours")
    assert store.get(key) == b"holder's"
    assert len(put_items) == 1  # no takeover
    assert clock.now - start < STALE_AFTER_S


def test_a_replace_waits_only_for_the_lock_of_its_etag(store: PlainStore, client: DynamoDBClient,
                                                       lock_table: str) -> None:
    key = f"t/_state/{uuid.uuid4().hex}"
    first = store.put(key, b"1")
    plant_lock(client, lock_table, store.uri(key), etag="*")  # a create's record does not block a replace
    assert strategy(store, client, lock_table, FakeClock()).replace_if_match(key, b"2", first)
    second = store.head(key)
    assert second is not None
    plant_lock(client, lock_table, store.uri(key), etag=second.etag.strip('"'))
    clock = FakeClock()
    strategy(store, client, lock_table, clock).replace_if_match(key, b"3", second.etag)
    assert store.get(key) == b"3"
    assert clock.now - 1000.0 > STALE_AFTER_S


def _hold_the_lock_and_hang(config: CatalogConfig, key: str, ready: Any) -> None:
    """Takes the lock through the real code, then hangs in the PUT until it is killed."""

    class HangingStore(PlainStore):
        def put(self, key: str, data: bytes) -> str:
            ready.set()
            time.sleep(600)
            raise AssertionError("not killed")

    inner = S3ObjectStore(config.warehouse, config)
    assert config.lock_table is not None
    DynamoDBLockConditionalWrites(HangingStore(inner), config.lock_table, config=config).create_if_absent(key, b"dead")


def test_a_process_killed_between_lock_and_write_is_taken_over(
    config: CatalogConfig, store: PlainStore, client: DynamoDBClient, lock_table: str
) -> None:
    key = f"t/_log/{uuid.uuid4().hex}.json"
    context = racing_context()
    ready = context.Event()
    process = context.Process(target=_hold_the_lock_and_hang, args=(config, key, ready), daemon=True)
    process.start()
    try:
        assert ready.wait(120), "the holder never took the lock"
    finally:
        process.kill()
        process.join(30)
    record = lock_record(client, lock_table, store.uri(key))
    assert record is not None and record["holder"]["S"].endswith(f":{process.pid}")
    assert store.head(key) is None

    clock = FakeClock()
    strategy(store, client, lock_table, clock).create_if_absent(key, b"survivor")
    assert store.get(key) == b"survivor"
    assert clock.now - 1000.0 > STALE_AFTER_S


def test_of_several_waiters_exactly_one_takes_over(store: PlainStore, client: DynamoDBClient, lock_table: str) -> None:
    key = f"t/_log/{uuid.uuid4().hex}.json"
    plant_lock(client, lock_table, store.uri(key))
    outcomes: list[str] = []

    def waiter(index: int) -> None:
        # Each with a clock of its own; real time per poll lets the threads interleave. 10 ms, not
        # 1: the losers' polls are bounded in fake time, and under a loaded machine (the other
        # test worker running Spark) 1 ms a poll ran them out before the winner had written.
        clock = FakeClock(lambda now: time.sleep(0.01))
        try:
            strategy(store, client, lock_table, clock).create_if_absent(key, f"waiter {index}".encode())
            outcomes.append(f"won {index}")
        except PathExistsError:
            outcomes.append("exists")

    threads = [threading.Thread(target=waiter, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    winners = [o for o in outcomes if o.startswith("won")]
    assert len(outcomes) == 4 and len(winners) == 1, outcomes
    assert store.get(key) == f"waiter {winners[0].split()[1]}".encode()


def test_a_failed_put_keeps_the_record_so_that_waiters_hold_off(
    store: PlainStore, client: DynamoDBClient, lock_table: str
) -> None:
    key = f"t/_log/{uuid.uuid4().hex}.json"

    class FailingStore(PlainStore):
        def put(self, key: str, data: bytes) -> str:
            raise StorageError("connection reset")

    with pytest.raises(WriteOutcomeUnknownError):
        strategy(FailingStore(store.inner), client, lock_table, FakeClock()).create_if_absent(key, b"lost?")
    assert lock_record(client, lock_table, store.uri(key)) is not None
    clock = FakeClock()
    strategy(store, client, lock_table, clock).create_if_absent(key, b"next")
    assert clock.now - 1000.0 > STALE_AFTER_S


def test_a_put_that_returns_after_the_timeout_is_reported_as_unknown(
    store: PlainStore, client: DynamoDBClient, lock_table: str
) -> None:
    key = f"t/_log/{uuid.uuid4().hex}.json"
    clock = FakeClock()

    class SlowStore(PlainStore):
        def put(self, key: str, data: bytes) -> str:
            clock.now += 25.0  # a PUT that took longer than the 20 s lease
            return super().put(key, data)

    with pytest.raises(WriteOutcomeUnknownError, match="after the lock timeout"):
        strategy(SlowStore(store.inner), client, lock_table, clock).create_if_absent(key, b"late")
    assert lock_record(client, lock_table, store.uri(key)) is None


def test_ensure_lock_table_is_idempotent_and_checks_the_keys(client: DynamoDBClient) -> None:
    name = f"locks-{uuid.uuid4().hex[:8]}"
    ensure_lock_table(client, name)
    ensure_lock_table(client, name)
    table = client.describe_table(TableName=name)["Table"]
    assert sorted((k["AttributeName"], k["KeyType"]) for k in table["KeySchema"]) == [("etag", "RANGE"),
                                                                                      ("path", "HASH")]
    assert table.get("BillingModeSummary", {}).get("BillingMode") == "PAY_PER_REQUEST"
    ttl = client.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
    assert ttl.get("AttributeName") == "ttl" and ttl.get("TimeToLiveStatus") in ("ENABLED", "ENABLING")
    other = f"other-{uuid.uuid4().hex[:8]}"
    client.create_table(TableName=other, AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
                        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}], BillingMode="PAY_PER_REQUEST")
    with pytest.raises(ConfigError, match="key schema"):
        ensure_lock_table(client, other)


def test_a_missing_lock_table_is_a_config_error(store: PlainStore, client: DynamoDBClient) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        strategy(store, client, "no-such-table").create_if_absent("t/x.json", b"x")


def test_pickles_with_its_config_only(config: CatalogConfig, store: PlainStore, client: DynamoDBClient) -> None:
    assert config.lock_table is not None
    built = DynamoDBLockConditionalWrites(store, config.lock_table, config=config)
    copy = pickle.loads(pickle.dumps(built))
    key = f"t/_log/{uuid.uuid4().hex}.json"
    copy.create_if_absent(key, b"from a copy")
    with pytest.raises(PathExistsError):
        built.create_if_absent(key, b"again")
    with pytest.raises(TypeError):
        pickle.dumps(DynamoDBLockConditionalWrites(store, config.lock_table, client=client))


def test_knobs_are_checked(store: PlainStore, client: DynamoDBClient) -> None:
    with pytest.raises(ConfigError):
        DynamoDBLockConditionalWrites(store, "t", client=client, max_clock_skew_rate=0.5)
    with pytest.raises(ConfigError):
        DynamoDBLockConditionalWrites(store, "t", client=client, ttl_s=30)
    assert os.environ.get("AWS_ACCESS_KEY_ID") == "test"

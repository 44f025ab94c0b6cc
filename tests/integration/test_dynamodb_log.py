"""The DynamoDB log, state pointer, registry and tables against a real DynamoDB Local."""

from __future__ import annotations

import functools
import pickle
import random
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Any

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError

from sleeper_spark.config import CatalogConfig, StoreRetryPolicy
from sleeper_spark.errors import (
    AppendOutcomeUnknownError,
    ConfigError,
    LogThrottledError,
    StorageError,
    TableAlreadyExistsError,
    TransactionNumberTakenError,
)
from sleeper_spark.log.aws.aws_catalog_backend import AwsBackend
from sleeper_spark.log.aws.dynamodb_log import DynamoDBTransactionLog
from sleeper_spark.log.aws.dynamodb_log_tables import ensure_tables
from sleeper_spark.log.aws.dynamodb_registry import DynamoDBTableRegistry
from sleeper_spark.log.aws.dynamodb_snapshots_table import DynamoDBStatePointer
from sleeper_spark.log.registry import TableEntry
from sleeper_spark.log.transaction_log import LogRecord, TransactionLog
from sleeper_spark.storage.aws import make_client
from tests.contract.log_contract import LogFactory, TransactionLogContract
from tests.integration.race_workers import (
    ensure_tables_race,
    log_append_race,
    pointer_race,
    registry_race,
    run_workers,
)

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("aws_credentials_env")]

RACERS = 8
ROUNDS = 20


@pytest.fixture
def config(dynamodb_local: str) -> CatalogConfig:
    suffix = uuid.uuid4().hex[:12]
    return CatalogConfig(
        catalog="aws",
        warehouse="s3://unused-bucket/warehouse",
        dynamodb_endpoint_url=dynamodb_local,
        transactions_table=f"txn-{suffix}",
        snapshots_table=f"snap-{suffix}",
    )


@pytest.fixture
def client(config: CatalogConfig) -> Any:
    client = make_client("dynamodb", config)
    ensure_tables(client, config.transactions_table, config.snapshots_table)
    return client


@pytest.fixture
def conditional(config: CatalogConfig, client: Any) -> Any:
    return make_client("dynamodb", config, retries=False)


@pytest.fixture
def waits() -> list[float]:
    """The back-offs of the ``log`` fixture's retries, recorded instead of slept."""
    return []


@pytest.fixture
def log(config: CatalogConfig, client: Any, conditional: Any, waits: list[float]) -> DynamoDBTransactionLog:
    return DynamoDBTransactionLog(client, config.transactions_table, str(uuid.uuid4()), conditional_client=conditional,
                                  sleep=waits.append)


@pytest.fixture
def fail_puts(conditional: Any) -> Iterator[list[Any]]:
    """Set ``[kind, count]``: the next ``count`` PutItems (-1: all) fail with ``kind``.

    ``"lost"``: stored, but the answer is lost; ``"timeout"``: never sent, no answer;
    ``"throttled"``: refused with ProvisionedThroughputExceededException.
    """
    plan: list[Any] = [None, 0]

    def before(**kwargs: Any) -> None:
        if plan[1] == 0:
            return
        if plan[0] == "timeout":
            plan[1] -= 1
            raise ReadTimeoutError(endpoint_url="dynamodb")
        if plan[0] == "throttled":
            plan[1] -= 1
            error = {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow down"},
                     "ResponseMetadata": {"HTTPStatusCode": 400}}
            raise ClientError(error, "PutItem")  # type: ignore[arg-type]

    def after(**kwargs: Any) -> None:
        if plan[0] == "lost" and plan[1] != 0:
            plan[1] -= 1
            raise ReadTimeoutError(endpoint_url="dynamodb")

    conditional.meta.events.register_first("before-call.dynamodb.PutItem", before)
    conditional.meta.events.register("after-call.dynamodb.PutItem", after)
    yield plan
    conditional.meta.events.unregister("before-call.dynamodb.PutItem", before)
    conditional.meta.events.unregister("after-call.dynamodb.PutItem", after)


def _numbers(records: Iterator[LogRecord]) -> list[int]:
    return [record.number for record in records]


# -- the log -----------------------------------------------------------------------------


def test_append_and_read(log: DynamoDBTransactionLog) -> None:
    assert list(log.read()) == []
    assert log.first_number() is None
    for number in range(1, 6):
        log.append(number, f"body {number}".encode())
    assert [(r.number, r.body) for r in log.read()] == [(n, f"body {n}".encode()) for n in range(1, 6)]
    assert _numbers(log.read(after=2)) == [3, 4, 5]
    assert _numbers(log.read(after=1, up_to=3)) == [2, 3]
    assert _numbers(log.read(after=3, up_to=3)) == []
    assert _numbers(log.read(after=5)) == []
    assert log.read_one(4) == LogRecord(4, b"body 4")
    assert log.read_one(9) is None
    assert log.first_number() == 1


def test_a_taken_number_is_refused_and_kept(log: DynamoDBTransactionLog) -> None:
    log.append(1, b"first")
    with pytest.raises(TransactionNumberTakenError):
        log.append(1, b"second")
    with pytest.raises(TransactionNumberTakenError):
        log.append(1, b"first")  # even the same bytes: another caller never "wins" a taken number
    assert log.read_one(1) == LogRecord(1, b"first")


def test_reading_stops_at_a_gap(log: DynamoDBTransactionLog) -> None:
    for number in (1, 2, 4, 5):
        log.append(number, b"x")
    assert _numbers(log.read()) == [1, 2]
    assert _numbers(log.read(after=3)) == [4, 5]


def test_logs_of_different_tables_are_separate(config: CatalogConfig, client: Any) -> None:
    one = DynamoDBTransactionLog(client, config.transactions_table, "table-one")
    two = DynamoDBTransactionLog(client, config.transactions_table, "table-two")
    one.append(1, b"one")
    two.append(1, b"two")
    assert [r.body for r in one.read()] == [b"one"]
    assert [r.body for r in two.read()] == [b"two"]
    one.drop()
    assert list(one.read()) == [] and [r.body for r in two.read()] == [b"two"]


@pytest.mark.parametrize("page_size", [None, 97])
def test_paged_reads_over_many_entries(config: CatalogConfig, client: Any, page_size: int | None) -> None:
    log = DynamoDBTransactionLog(client, config.transactions_table, str(uuid.uuid4()), page_size=page_size)
    count = 1500
    # 1 KiB bodies make 1.5 MB, more than one 1 MB query page even without a page size.
    bodies = {n: (f"{n:08d}".encode() * 128) for n in range(1, count + 1)}
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda n: log.append(n, bodies[n]), bodies))
    pages: list[int] = []

    def count_page(**kwargs: Any) -> None:
        pages.append(1)

    client.meta.events.register("after-call.dynamodb.Query", count_page)
    try:
        records = list(log.read())
    finally:
        client.meta.events.unregister("after-call.dynamodb.Query", count_page)
    assert len(pages) >= (count // page_size if page_size else 2)
    assert [r.number for r in records] == list(range(1, count + 1))
    assert all(r.body == bodies[r.number] for r in records)
    assert _numbers(log.read(after=1234, up_to=1300)) == list(range(1235, 1301))
    # Lazily paged: taking the first few records does not need the rest.
    first = next(iter(log.read(after=10)))
    assert first.number == 11


def test_delete_up_to_and_first_number(log: DynamoDBTransactionLog) -> None:
    for number in range(1, 61):
        log.append(number, b"x")
    assert log.delete_up_to(0) == 0
    assert log.delete_up_to(40) == 40
    assert log.first_number() == 41
    assert _numbers(log.read(after=40)) == list(range(41, 61))
    assert list(log.read()) == []  # the head is truncated: nothing is read from 1
    assert log.delete_up_to(40) == 0
    log.drop()
    assert log.first_number() is None


def test_a_lost_answer_of_an_append_that_landed_is_a_success(
    log: DynamoDBTransactionLog, fail_puts: list[Any], waits: list[float]
) -> None:
    fail_puts[:] = ["lost", 1]
    log.append(1, b"mine")  # stored; the retry's failed condition finds our own body
    assert fail_puts[1] == 0
    assert log.read_one(1) == LogRecord(1, b"mine")


def test_a_lost_answer_then_another_writer_is_number_taken(
    log: DynamoDBTransactionLog, fail_puts: list[Any], waits: list[float]
) -> None:
    log.append(1, b"theirs")
    fail_puts[:] = ["timeout", 1]  # our first attempt may have landed, as far as we know
    with pytest.raises(TransactionNumberTakenError):
        log.append(1, b"mine")
    assert fail_puts[1] == 0


def test_no_answer_at_all_is_outcome_unknown(
    log: DynamoDBTransactionLog, fail_puts: list[Any], waits: list[float]
) -> None:
    fail_puts[:] = ["timeout", -1]
    with pytest.raises(AppendOutcomeUnknownError):
        log.append(1, b"mine")
    assert log.read_one(1) is None
    policy = StoreRetryPolicy()
    assert len(waits) == policy.max_attempts - 1 and all(0 <= w <= policy.max_delay_s for w in waits)


def test_throttling_is_log_throttled(
    log: DynamoDBTransactionLog, fail_puts: list[Any], waits: list[float]
) -> None:
    fail_puts[:] = ["throttled", -1]
    with pytest.raises(LogThrottledError):
        log.append(1, b"mine")
    assert len(waits) == StoreRetryPolicy().max_attempts - 1  # bounded, and slept through the injected sleep
    fail_puts[:] = ["throttled", 2]  # a short burst is ridden out
    log.append(1, b"mine")
    assert fail_puts[1] == 0
    assert log.read_one(1) == LogRecord(1, b"mine")


def test_an_item_too_large_is_a_clear_storage_error(log: DynamoDBTransactionLog) -> None:
    with pytest.raises(StorageError, match="too large"):
        log.append(1, b"x" * 500_000)


def test_a_missing_table_is_a_clear_storage_error(client: Any) -> None:
    log = DynamoDBTransactionLog(client, "no-such-table", "t")
    with pytest.raises(StorageError, match="create it with `sleeper-spark init`"):
        list(log.read())
    with pytest.raises(StorageError, match="create it with `sleeper-spark init`"):
        log.append(1, b"x")


def test_append_has_exactly_one_winner(dynamodb_local: str, config: CatalogConfig, client: Any) -> None:
    table_id = str(uuid.uuid4())
    results = run_workers(
        log_append_race, RACERS, lambda worker: (dynamodb_local, config.transactions_table, table_id, ROUNDS)
    )
    log = DynamoDBTransactionLog(client, config.transactions_table, table_id)
    records = list(log.read())
    assert [r.number for r in records] == list(range(1, ROUNDS + 1))
    for round_, record in enumerate(records):
        winners = [worker for worker in range(RACERS) if results[worker][round_]]
        assert len(winners) == 1, f"round {round_}: winners {winners}"
        assert record.body.startswith(f"worker {winners[0]} round {round_} ".encode())


def open_dynamodb_log(endpoint: str, table: str, table_id: str) -> TransactionLog:
    config = CatalogConfig(catalog="aws", warehouse="s3://unused/w", dynamodb_endpoint_url=endpoint)
    conditional = make_client("dynamodb", config, retries=False)
    return DynamoDBTransactionLog(make_client("dynamodb", config), table, table_id, conditional_client=conditional)


class TestDynamoDBLogContract(TransactionLogContract):
    """The contract every log backend keeps, on DynamoDB Local."""

    @pytest.fixture
    def log_factory(self, config: CatalogConfig, client: Any) -> LogFactory:
        assert config.dynamodb_endpoint is not None
        return functools.partial(
            open_dynamodb_log, config.dynamodb_endpoint, config.transactions_table, str(uuid.uuid4())
        )


# -- the state pointer -------------------------------------------------------------------


def test_pointer_only_moves_forward(config: CatalogConfig, client: Any, conditional: Any) -> None:
    pointer = DynamoDBStatePointer(client, config.snapshots_table, "t1", conditional_client=conditional)
    assert pointer.get() is None
    assert pointer.advance(5) is True
    assert pointer.advance(3) is False
    assert pointer.advance(5) is False
    assert pointer.get() == 5
    assert pointer.advance(7) is True
    assert pointer.get() == 7
    other = DynamoDBStatePointer(client, config.snapshots_table, "t2")
    assert other.get() is None
    pointer.drop()
    assert pointer.get() is None
    assert pointer.advance(1) is True


def test_pointer_race_never_moves_back(dynamodb_local: str, config: CatalogConfig, client: Any) -> None:
    rng = random.Random(7)
    targets = [[rng.randint(1, 500) for _ in range(ROUNDS)] for _ in range(RACERS)]
    results = run_workers(
        pointer_race, RACERS, lambda worker: (dynamodb_local, config.snapshots_table, "raced", targets[worker])
    )
    highest = max(max(t) for t in targets)
    assert DynamoDBStatePointer(client, config.snapshots_table, "raced").get() == highest
    for worker_seen in results:
        seen = [after for _target, _moved, after in worker_seen]
        assert seen == sorted(seen), "a worker saw the pointer move back"
        for target, _moved, after in worker_seen:
            assert after is not None and after >= target
    # Per round, a target above the round's starting point moved it for exactly one worker at most.
    for round_ in range(ROUNDS):
        moved = [results[w][round_] for w in range(RACERS) if results[w][round_][1]]
        assert len({target for target, _, _ in moved}) == len(moved), "two workers moved it to one number"


# -- the registry ------------------------------------------------------------------------


def _entry(name: str) -> TableEntry:
    return TableEntry(name=name, table_id=str(uuid.uuid4()), root=name, created_at=datetime.now(timezone.utc))


def test_registry(config: CatalogConfig, client: Any, conditional: Any) -> None:
    registry = DynamoDBTableRegistry(client, config.snapshots_table, "s3://a/w", conditional_client=conditional)
    other = DynamoDBTableRegistry(client, config.snapshots_table, "s3://b/w")
    assert registry.names() == [] and registry.lookup("events") is None
    events = _entry("events")
    registry.register(events)
    registry.register(_entry("clicks"))
    with pytest.raises(TableAlreadyExistsError):
        registry.register(_entry("events"))
    assert registry.lookup("events") == events
    assert registry.names() == ["clicks", "events"]
    # A pointer of the same table lives in the same DynamoDB table without showing up as a name.
    DynamoDBStatePointer(client, config.snapshots_table, events.table_id).advance(3)
    assert registry.names() == ["clicks", "events"]
    # Another warehouse sharing the DynamoDB table has its own names.
    assert other.names() == [] and other.lookup("events") is None
    other.register(_entry("events"))
    registry.unregister("events")
    registry.unregister("events")
    assert registry.names() == ["clicks"] and other.names() == ["events"]


def test_registry_names_paginate(config: CatalogConfig, client: Any) -> None:
    registry = DynamoDBTableRegistry(client, config.snapshots_table, "s3://p/w")
    filler = "x" * 30_000  # big entries make the scan return several pages
    names = [f"t{i:03d}" for i in range(120)]
    for name in names:
        entry = _entry(name)
        registry.register(entry.model_copy(update={"root": f"{name}/{filler}"}))
    pages: list[int] = []

    def count_page(**kwargs: Any) -> None:
        pages.append(1)

    client.meta.events.register("after-call.dynamodb.Scan", count_page)
    try:
        assert registry.names() == names
    finally:
        client.meta.events.unregister("after-call.dynamodb.Scan", count_page)
    assert len(pages) > 1


def test_registry_race_has_one_winner(dynamodb_local: str, config: CatalogConfig, client: Any) -> None:
    results = run_workers(registry_race, RACERS, lambda worker: (dynamodb_local, config.snapshots_table, "raced"))
    winners = [table_id for table_id in results if table_id is not None]
    assert len(winners) == 1
    registry = DynamoDBTableRegistry(client, config.snapshots_table, "s3://race/warehouse")
    entry = registry.lookup("raced")
    assert entry is not None and entry.table_id == winners[0]


# -- the tables --------------------------------------------------------------------------


def _describe(client: Any, name: str) -> tuple[list[tuple[str, str]], str]:
    table = client.describe_table(TableName=name)["Table"]
    keys = [(k["AttributeName"], k["KeyType"]) for k in table["KeySchema"]]
    return keys, table["TableStatus"]


def test_ensure_tables_is_idempotent(config: CatalogConfig, client: Any) -> None:
    ensure_tables(client, config.transactions_table, config.snapshots_table)  # a second time
    assert _describe(client, config.transactions_table) == ([("table_id", "HASH"), ("number", "RANGE")], "ACTIVE")
    assert _describe(client, config.snapshots_table) == ([("table_id", "HASH")], "ACTIVE")
    ttl = client.describe_time_to_live(TableName=config.transactions_table)["TimeToLiveDescription"]
    assert ttl["TimeToLiveStatus"] == "ENABLED" and ttl["AttributeName"] == "expires_at"
    billing = client.describe_table(TableName=config.snapshots_table)["Table"]["BillingModeSummary"]
    assert billing["BillingMode"] == "PAY_PER_REQUEST"


def test_ensure_tables_from_four_processes_at_once(dynamodb_local: str, config: CatalogConfig) -> None:
    transactions, snapshots = f"race-txn-{uuid.uuid4().hex[:8]}", f"race-snap-{uuid.uuid4().hex[:8]}"
    assert run_workers(
        ensure_tables_race, 4, lambda worker: (dynamodb_local, transactions, snapshots)
    ) == ["ok"] * 4
    client = make_client("dynamodb", config)
    assert _describe(client, transactions)[1] == "ACTIVE"
    assert _describe(client, snapshots) == ([("table_id", "HASH")], "ACTIVE")


def test_ensure_tables_refuses_a_table_with_another_key_schema(config: CatalogConfig, client: Any) -> None:
    # The transactions table where the snapshots table should be: wrong keys.
    with pytest.raises(ConfigError, match="another key schema"):
        ensure_tables(client, config.transactions_table, config.transactions_table)


# -- the backend -------------------------------------------------------------------------


def test_aws_backend(seaweedfs_s3: str, s3_bucket: str, dynamodb_local: str) -> None:
    suffix = uuid.uuid4().hex[:8]
    config = CatalogConfig(
        catalog="aws",
        warehouse=f"s3://{s3_bucket}/warehouse",
        s3_endpoint_url=seaweedfs_s3,
        dynamodb_endpoint_url=dynamodb_local,
        transactions_table=f"be-txn-{suffix}",
        snapshots_table=f"be-snap-{suffix}",
    )
    backend = AwsBackend(config)
    backend.ensure_infrastructure()
    backend.ensure_infrastructure()
    entry = _entry("events")
    backend.registry.register(entry)
    backend.transaction_log(entry).append(1, b"create")
    assert backend.state_pointer(entry).advance(1)
    backend.store.put("events/_state/x", b"state")

    clone = pickle.loads(pickle.dumps(backend))
    assert clone.registry.lookup("events") == entry
    assert [r.body for r in clone.transaction_log(entry).read()] == [b"create"]
    assert clone.state_pointer(entry).get() == 1
    assert clone.store.get("events/_state/x") == b"state"

    missing = config.model_copy(update={"warehouse": "s3://no-such-bucket-for-sleeper/w"})
    with pytest.raises(ConfigError, match="create it"):
        AwsBackend(missing).ensure_infrastructure()

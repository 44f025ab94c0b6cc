"""S3ObjectStore against a real SeaweedFS S3 gateway on loopback."""

from __future__ import annotations

import functools
import pickle
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from botocore.exceptions import ClientError, ReadTimeoutError

import sleeper_spark as ss
from sleeper_spark.config import CatalogConfig
from sleeper_spark.errors import (
    ConfigError,
    PathExistsError,
    PreconditionFailedError,
    StorageError,
    WriteOutcomeUnknownError,
)
from sleeper_spark.log import ObjectStoreTransactionLog, TransactionLog
from sleeper_spark.storage import NativeConditionalWrites
from sleeper_spark.storage import s3 as s3_module
from sleeper_spark.storage.aws import make_client
from sleeper_spark.storage.s3 import S3ObjectStore, parse_s3_uri
from tests.contract.log_contract import LogFactory, TransactionLogContract
from tests.integration.race_workers import run_workers, s3_counter_race, s3_create_race

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("aws_credentials_env")]

RACERS = 8
ROUNDS = 20


@pytest.fixture
def config(seaweedfs_s3: str, s3_bucket: str) -> CatalogConfig:
    return CatalogConfig(catalog="object_store", warehouse=f"s3://{s3_bucket}/warehouse", endpoint_url=seaweedfs_s3)


@pytest.fixture
def store(config: CatalogConfig) -> S3ObjectStore:
    return S3ObjectStore(config.warehouse, config)


@pytest.fixture
def lose_next_answer(config: CatalogConfig) -> Iterator[list[int]]:
    """Makes the next conditional PUTs land but lose their answer (a read timeout).

    Yields a one-element list: how many answers to lose (the test sets it; -1 = all).
    """
    client = make_client("s3", config, retries=False)
    budget = [0]

    def drop_answer(**kwargs: Any) -> None:
        if budget[0] != 0:
            budget[0] -= 1
            raise ReadTimeoutError(endpoint_url=config.s3_endpoint or "")

    client.meta.events.register("after-call.s3.PutObject", drop_answer)
    yield budget
    client.meta.events.unregister("after-call.s3.PutObject", drop_answer)


def test_uri_parsing() -> None:
    assert parse_s3_uri("s3://bucket/a/b/") == ("bucket", "a/b")
    assert parse_s3_uri("s3://bucket") == ("bucket", "")
    with pytest.raises(ConfigError):
        parse_s3_uri("/local/path")
    with pytest.raises(ConfigError):
        parse_s3_uri("s3:///prefix")
    assert parse_s3_uri("s3a://bucket/a/b") == parse_s3_uri("s3n://bucket/a/b/") == ("bucket", "a/b")
    with pytest.raises(ConfigError, match="s3a://"):
        parse_s3_uri("gs://bucket/a")


def test_a_table_written_through_s3a_is_the_same_table_through_s3(
    seaweedfs_s3: str, s3_bucket: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an object-store catalog opened with Hadoop's s3a:// spelling
    monkeypatch.chdir(tmp_path)
    hadoop = ss.Catalog.object_store(f"s3a://{s3_bucket}/schemes", endpoint_url=seaweedfs_s3, region="us-east-1")
    # When a table is created and written through it
    hadoop.create_table("events", pa.schema([("n", pa.int64())])).write(pa.table({"n": [1, 2, 3]}))
    # Then the s3:// catalog of the same bucket sees it, and nothing was written to the local disk
    canonical = ss.Catalog.object_store(f"s3://{s3_bucket}/schemes/", endpoint_url=seaweedfs_s3, region="us-east-1")
    assert canonical.tables() == ["events"]
    assert canonical.table("events").scan().column("n").to_pylist() == [1, 2, 3]
    assert list(tmp_path.iterdir()) == []


def test_put_get_head_delete(store: S3ObjectStore) -> None:
    etag = store.put("a/b.txt", b"hello")
    assert store.get("a/b.txt") == b"hello"
    info = store.head("a/b.txt")
    assert info is not None
    assert (info.key, info.size, info.etag) == ("a/b.txt", 5, etag)
    assert info.last_modified.tzinfo is not None
    assert store.put("a/b.txt", b"bye") != etag  # put overwrites
    assert store.get("a/b.txt") == b"bye"
    store.delete("a/b.txt")
    assert store.head("a/b.txt") is None
    with pytest.raises(FileNotFoundError):
        store.get("a/b.txt")
    store.delete("a/b.txt")  # already gone: no error
    assert store.uri("x/y") == f"{store.root_uri}/x/y"


def test_list_is_in_key_order_and_stays_under_the_root(store: S3ObjectStore, config: CatalogConfig) -> None:
    keys = ["t/a/b", "t/a-c", "t/a/b/c", "t/a0", "t/a.x", "t/ab", "t/a/a", "u/z"]
    for key in keys:
        store.put(key, key.encode())
    # Beside the warehouse prefix, not in it.
    make_client("s3", config).put_object(Bucket=store.bucket, Key="warehouse-other/t/a", Body=b"x")
    assert [info.key for info in store.list("t/")] == sorted(k for k in keys if k.startswith("t/"))
    assert [info.key for info in store.list("t/a/")] == ["t/a/a", "t/a/b", "t/a/b/c"]
    assert [info.key for info in store.list("")] == sorted(keys)
    assert list(store.list("nothing/")) == []


def test_delete_many_in_batches(store: S3ObjectStore) -> None:
    keys = [f"many/{i:05d}" for i in range(s3_module.DELETE_BATCH + 5)]
    # Over a thousand round trips: in parallel, or they take most of this test's time.
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda key: store.put(key, b""), keys))
    store.delete_many([*keys[:-1], "many/never-existed"])
    assert [info.key for info in store.list("many/")] == keys[-1:]


def test_create_if_absent(store: S3ObjectStore) -> None:
    etag = store.create_if_absent("log/1", b"first")
    with pytest.raises(PathExistsError):
        store.create_if_absent("log/1", b"second")
    assert store.get("log/1") == b"first"
    head = store.head("log/1")
    assert head is not None and head.etag == etag


def test_replace_if_match(store: S3ObjectStore) -> None:
    first = store.create_if_absent("latest", b"1")
    second = store.replace_if_match("latest", b"2", first)
    assert store.get("latest") == b"2"
    with pytest.raises(PreconditionFailedError):
        store.replace_if_match("latest", b"3", first)  # stale etag
    assert store.get("latest") == b"2"
    third = store.replace_if_match("latest", b"3", second.strip('"'))  # an unquoted etag works too
    assert store.get("latest") == b"3"
    with pytest.raises(PreconditionFailedError):
        store.replace_if_match("missing", b"1", third)
    assert store.head("missing") is None


def test_unicode_and_percent_keys(store: S3ObjectStore) -> None:
    key = "dir/ünïcödé 100% +x=?&#.txt"
    store.create_if_absent(key, b"u")
    assert store.get(key) == b"u"
    info = store.head(key)
    assert info is not None
    assert [i.key for i in store.list("dir/")] == [key]
    store.replace_if_match(key, b"v", info.etag)
    assert store.get(key) == b"v"
    store.delete_many([key])
    assert store.head(key) is None


def test_new_object_publish_and_discard(store: S3ObjectStore, monkeypatch: pytest.MonkeyPatch) -> None:
    new = store.new_object("data/part-0.bin")
    new.file().write(b"abc")
    assert store.head("data/part-0.bin") is None  # invisible until published
    new.publish()
    assert store.get("data/part-0.bin") == b"abc"

    dropped = store.new_object("data/part-1.bin")
    dropped.file().write(b"never")
    dropped.discard()
    assert store.head("data/part-1.bin") is None

    again = store.new_object("data/part-0.bin")
    again.file().write(b"other")
    with pytest.raises(PathExistsError, match="never overwritten"):
        again.publish()
    assert store.get("data/part-0.bin") == b"abc"

    # Bigger than the in-memory spool: published from a temporary file.
    monkeypatch.setattr(s3_module, "SPOOL_IN_MEMORY_BYTES", 1024)
    big = store.new_object("data/part-2.bin")
    payload = bytes(range(256)) * 64
    big.file().write(payload)
    big.publish()
    assert store.get("data/part-2.bin") == payload


def test_parquet_through_new_object_and_open_input(store: S3ObjectStore) -> None:
    table = pa.table({"x": list(range(1000)), "s": [str(i) for i in range(1000)]})
    new = store.new_object("t/data/f.parquet")
    pq.write_table(table, new.file())
    new.publish()
    assert pq.read_table(store.open_input("t/data/f.parquet")).equals(table)


def test_store_pickles_without_clients(store: S3ObjectStore) -> None:
    store.put("p", b"1")
    clone = pickle.loads(pickle.dumps(store))
    assert clone.get("p") == b"1"
    assert clone.root_uri == store.root_uri


def test_missing_bucket(seaweedfs_s3: str) -> None:
    config = CatalogConfig(catalog="object_store", warehouse="s3://no-such-bucket-here/w", endpoint_url=seaweedfs_s3)
    store = S3ObjectStore(config.warehouse, config)
    with pytest.raises(ConfigError, match="does not exist"):
        store.check_bucket()
    with pytest.raises(StorageError, match="no-such-bucket-here"):
        store.get("x")


def test_check_bucket_passes_for_an_existing_bucket(store: S3ObjectStore) -> None:
    store.check_bucket()


def test_lost_answer_of_a_create_that_landed_is_a_success(
    store: S3ObjectStore, lose_next_answer: list[int]
) -> None:
    lose_next_answer[0] = 1
    store.create_if_absent("lost/1", b"mine")  # landed, answer lost, retry finds our bytes
    assert store.get("lost/1") == b"mine"
    with pytest.raises(PathExistsError):
        store.create_if_absent("lost/1", b"someone else")


def test_lost_answer_of_a_replace_that_landed_is_a_success(
    store: S3ObjectStore, lose_next_answer: list[int]
) -> None:
    etag = store.create_if_absent("lost/p", b"1")
    lose_next_answer[0] = 1
    store.replace_if_match("lost/p", b"2", etag)
    assert store.get("lost/p") == b"2"


def test_create_losing_to_another_after_a_lost_answer_is_path_exists(
    store: S3ObjectStore, lose_next_answer: list[int]
) -> None:
    store.create_if_absent("lost/2", b"theirs")
    lose_next_answer[0] = 1
    with pytest.raises(PathExistsError):
        store.create_if_absent("lost/2", b"mine")


def test_every_answer_lost_is_outcome_unknown_or_resolved(
    config: CatalogConfig, lose_next_answer: list[int]
) -> None:
    waits: list[float] = []
    store = S3ObjectStore(config.warehouse, config, sleep=waits.append)  # back-offs recorded, not slept
    lose_next_answer[0] = -1
    # Every PUT lands-or-not without an answer; the final look finds our bytes.
    store.create_if_absent("lost/3", b"mine")
    assert store.get("lost/3") == b"mine"
    # A replace whose every answer is lost, while the object still has the old etag, is unknown.
    etag = store.create_if_absent("lost/4", b"1")
    lose_next_answer[0] = -1

    def never_lands(**kwargs: Any) -> None:
        raise ReadTimeoutError(endpoint_url="x")

    client = make_client("s3", config, retries=False)
    client.meta.events.register_first("before-call.s3.PutObject", never_lands)
    try:
        with pytest.raises(WriteOutcomeUnknownError):
            store.replace_if_match("lost/4", b"2", etag)
    finally:
        client.meta.events.unregister("before-call.s3.PutObject", never_lands)
    assert store.get("lost/4") == b"1"


@pytest.fixture
def conflict_next_puts(config: CatalogConfig) -> Iterator[list[int]]:
    """Answers the next conditional PUTs (-1: all) with 409 ConditionalRequestConflict, unsent."""
    client = make_client("s3", config, retries=False)
    budget = [0]

    def conflict(**kwargs: Any) -> None:
        if budget[0] != 0:
            budget[0] -= 1
            response: Any = {
                "Error": {"Code": "ConditionalRequestConflict", "Message": "A conflicting operation occurred"},
                "ResponseMetadata": {"HTTPStatusCode": 409},
            }
            raise ClientError(response, "PutObject")

    client.meta.events.register_first("before-call.s3.PutObject", conflict)
    yield budget
    client.meta.events.unregister("before-call.s3.PutObject", conflict)


def test_a_409_conflict_is_retried_and_the_server_decides(
    config: CatalogConfig, conflict_next_puts: list[int]
) -> None:
    waits: list[float] = []
    store = S3ObjectStore(config.warehouse, config, sleep=waits.append)  # back-offs recorded, not slept
    conflict_next_puts[0] = 2
    store.create_if_absent("c/1", b"mine")  # two conflicts, then the PUT lands
    assert conflict_next_puts[0] == 0 and store.get("c/1") == b"mine"
    assert len(waits) == 2
    conflict_next_puts[0] = 1
    with pytest.raises(PathExistsError):
        store.create_if_absent("c/1", b"again")  # a conflict, then 412
    # Conflicts that never end: a key that exists was won by someone; a missing one by nobody.
    conflict_next_puts[0] = -1
    with pytest.raises(PathExistsError):
        store.create_if_absent("c/1", b"again")
    with pytest.raises(StorageError) as raised:
        store.create_if_absent("c/2", b"mine")
    assert not isinstance(raised.value, (PathExistsError, WriteOutcomeUnknownError))
    assert "ConditionalRequestConflict" in str(raised.value)


def test_create_if_absent_has_exactly_one_winner(seaweedfs_s3: str, config: CatalogConfig) -> None:
    results = run_workers(
        s3_create_race, RACERS, lambda worker: (seaweedfs_s3, config.warehouse, ROUNDS)
    )
    store = S3ObjectStore(config.warehouse, config)
    for round_ in range(ROUNDS):
        winners = [worker for worker in range(RACERS) if results[worker][round_]]
        assert len(winners) == 1, f"round {round_}: winners {winners}"
        assert store.get(f"race/{round_:04d}") == f"worker {winners[0]} round {round_}".encode()


def test_replace_if_match_loses_no_increment(seaweedfs_s3: str, config: CatalogConfig) -> None:
    store = S3ObjectStore(config.warehouse, config)
    store.create_if_absent("counter", b"0")
    increments = 5
    landed = run_workers(s3_counter_race, RACERS, lambda worker: (seaweedfs_s3, config.warehouse, increments))
    assert landed == [increments] * RACERS
    assert int(store.get("counter")) == RACERS * increments


def open_s3_log(endpoint: str, uri: str) -> TransactionLog:
    store = S3ObjectStore(uri, CatalogConfig(catalog="object_store", warehouse=uri, endpoint_url=endpoint))
    return ObjectStoreTransactionLog(store, NativeConditionalWrites(store), "table")


class TestObjectStoreLogOnS3Contract(TransactionLogContract):
    """The log contract for the object-store log on S3 with native conditional writes."""

    @pytest.fixture
    def log_factory(self, seaweedfs_s3: str, config: CatalogConfig) -> LogFactory:
        return functools.partial(open_s3_log, seaweedfs_s3, config.warehouse)

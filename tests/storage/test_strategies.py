"""Choosing a strategy from the config, and the store that routes conditional writes through it."""

from __future__ import annotations

import pickle
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper_spark.config import CatalogConfig
from sleeper_spark.errors import ConfigError, PathExistsError
from sleeper_spark.storage import LocalObjectStore, NativeConditionalWrites
from sleeper_spark.storage.put_and_verify_writes import PutAndVerifyConditionalWrites
from sleeper_spark.storage.strategies import ConditionalWritesStore, open_conditional_writes
from tests.storage.stores import PlainStore


def test_the_config_names_the_strategy(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path)
    config = CatalogConfig(catalog="object_store", warehouse=str(tmp_path))
    assert isinstance(open_conditional_writes(store, config), NativeConditionalWrites)
    chosen = open_conditional_writes(store, config.model_copy(update={"conditional_writes": "put-and-verify"}))
    assert isinstance(chosen, PutAndVerifyConditionalWrites)
    with pytest.raises(ConfigError, match="lock_table"):
        open_conditional_writes(store, config.model_copy(update={"conditional_writes": "dynamodb-lock"}))
    locked = open_conditional_writes(store, CatalogConfig(
        catalog="object_store", warehouse=str(tmp_path), conditional_writes="dynamodb-lock", lock_table="locks",
        dynamodb_endpoint_url="http://127.0.0.1:1"))
    assert type(locked).__name__ == "DynamoDBLockConditionalWrites"
    assert pickle.loads(pickle.dumps(locked)).table == "locks"  # no client inside: it pickles


def test_the_routing_store_sends_every_conditional_write_through_the_strategy(tmp_path: Path) -> None:
    plain = PlainStore(LocalObjectStore(tmp_path))
    store = ConditionalWritesStore(plain, PutAndVerifyConditionalWrites(plain))
    first = store.create_if_absent("a/b.json", b"1")
    with pytest.raises(PathExistsError):
        store.create_if_absent("a/b.json", b"2")
    store.replace_if_match("a/b.json", b"3", first)
    assert store.get("a/b.json") == b"3" and store.root_uri == plain.root_uri

    new = store.new_object("data/part-0.parquet")
    pq.write_table(pa.table({"x": [1, 2, 3]}), new.file())
    new.publish()
    assert pq.read_table(store.open_input("data/part-0.parquet")).num_rows == 3
    again = store.new_object("data/part-0.parquet")
    again.file().write(b"other")
    with pytest.raises(PathExistsError, match="never overwritten"):
        again.publish()
    discarded = store.new_object("data/part-1.parquet")
    discarded.discard()
    assert [i.key for i in store.list("data/")] == ["data/part-0.parquet"]
    assert pickle.loads(pickle.dumps(store)).get("a/b.json") == b"3"

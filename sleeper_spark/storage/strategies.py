"""Choosing a conditional-write strategy from the config, and a store that routes through it.

``native`` uses the store's own conditional requests. ``dynamodb-lock`` and ``put-and-verify``
use only the store's ``get``, ``head``, ``put``, ``delete`` and ``list``, never its own
conditional methods, so they serve S3-compatible stores that have none (or whose support is
not to be trusted). Every writer of one warehouse must use the same strategy: they do not see
each other's locks and intents.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator

import pyarrow as pa

from sleeper_spark.config import CatalogConfig
from sleeper_spark.errors import ConfigError
from sleeper_spark.storage.base import NewObject, ObjectInfo, ObjectStore, SpooledNewObject
from sleeper_spark.storage.conditional import ConditionalWriteStrategy, NativeConditionalWrites
from sleeper_spark.storage.put_and_verify_writes import PutAndVerifyConditionalWrites

STRATEGIES = ("native", "dynamodb-lock", "put-and-verify")


def open_conditional_writes(store: ObjectStore, config: CatalogConfig) -> ConditionalWriteStrategy:
    """The strategy ``config.conditional_writes`` names, in front of ``store``.

    ``dynamodb-lock`` keeps its records in the DynamoDB table ``config.lock_table``, reached
    at ``config.dynamodb_endpoint`` with a client from :mod:`sleeper_spark.storage.aws`; its
    ``ensure_infrastructure()`` creates that table.
    """
    kind = config.conditional_writes
    if kind == "native":
        return NativeConditionalWrites(store)
    if kind == "put-and-verify":
        return PutAndVerifyConditionalWrites(store)
    if kind == "dynamodb-lock":
        if not config.lock_table:
            raise ConfigError("conditional_writes='dynamodb-lock' needs lock_table (a DynamoDB table name)")
        # boto3 is imported only when this strategy is asked for.
        from sleeper_spark.storage.dynamodb_lock import DynamoDBLockConditionalWrites

        return DynamoDBLockConditionalWrites(store, config.lock_table, config=config)
    raise ConfigError(f"unknown conditional_writes {kind!r}; expected one of {', '.join(STRATEGIES)}")


class ConditionalWritesStore(ObjectStore):
    """``store`` with its create-if-absent, replace-if-match and new objects done by ``conditional``.

    For code that calls the store's conditional methods directly (spilled log bodies, state
    snapshot files, data files): with a non-native strategy they must not reach a store that
    lacks them. A new object is spooled (in memory, then in a temporary file) and published
    as one create-if-absent of its bytes.
    """

    def __init__(self, store: ObjectStore, conditional: ConditionalWriteStrategy) -> None:
        self._store = store
        self._conditional = conditional

    @property
    def inner(self) -> ObjectStore:
        return self._store

    @property
    def root_uri(self) -> str:
        return self._store.root_uri

    def get(self, key: str) -> bytes:
        return self._store.get(key)

    def head(self, key: str) -> ObjectInfo | None:
        return self._store.head(key)

    def put(self, key: str, data: bytes) -> str:
        return self._store.put(key, data)

    def create_if_absent(self, key: str, data: bytes) -> str:
        return self._conditional.create_if_absent(key, data)

    def replace_if_match(self, key: str, data: bytes, etag: str) -> str:
        return self._conditional.replace_if_match(key, data, etag)

    def delete(self, key: str) -> None:
        self._store.delete(key)

    def root_exists(self) -> bool:
        return self._store.root_exists()

    def create_root(self) -> None:
        self._store.create_root()

    def delete_many(self, keys: builtins.list[str]) -> None:
        self._store.delete_many(keys)

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        return self._store.list(prefix)

    def open_input(self, key: str) -> pa.NativeFile:
        return self._store.open_input(key)

    def new_object(self, key: str) -> NewObject:
        return SpooledNewObject(self.uri(key), lambda spool: self.create_if_absent(key, spool.read()))

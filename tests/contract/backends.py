"""Picklable openers of every backend the contract suites run against.

Each opener builds its object afresh from plain arguments, so that ``functools.partial`` of it
opens the SAME store, pointer, registry or log in this process and in a spawned one (the race
tests). Object-store backends are described by a :class:`StrategySpec`, which builds a store and
its conditional-write strategy the way a catalog does; a non-native strategy gets a store that
refuses conditional requests, so it is tested with native support switched off.
"""

from __future__ import annotations

from typing import Any

from sleeper_spark.config import CatalogConfig
from sleeper_spark.log import ObjectStoreTransactionLog, TransactionLog
from sleeper_spark.log.aws.dynamodb_registry import DynamoDBTableRegistry
from sleeper_spark.log.aws.dynamodb_snapshots_table import DynamoDBStatePointer
from sleeper_spark.log.registry import ObjectStoreTableRegistry, TableRegistry
from sleeper_spark.log.state_snapshots import ObjectStoreStatePointer, StatePointer
from sleeper_spark.storage import ConditionalWritesStore, ObjectStore
from sleeper_spark.storage.aws import make_client
from tests.storage.workers import StrategySpec

__all__ = [
    "StrategySpec",
    "dynamodb_clients",
    "open_dynamodb_pointer",
    "open_dynamodb_registry",
    "open_log",
    "open_pointer",
    "open_registry",
    "open_store",
]


def open_store(spec: StrategySpec) -> ObjectStore:
    """The warehouse as an ObjectStore whose conditional methods go through the spec's strategy."""
    store, conditional = spec.build()
    return store if spec.kind == "native" else ConditionalWritesStore(store, conditional)


def open_pointer(spec: StrategySpec, table_root: str) -> StatePointer:
    store, conditional = spec.build()
    return ObjectStoreStatePointer(store, conditional, table_root)


def open_registry(spec: StrategySpec) -> TableRegistry:
    store, conditional = spec.build()
    return ObjectStoreTableRegistry(store, conditional)


def open_log(spec: StrategySpec, table_root: str) -> TransactionLog:
    store, conditional = spec.build()
    return ObjectStoreTransactionLog(store, conditional, table_root)


def dynamodb_clients(endpoint: str) -> tuple[Any, Any]:
    """A client with automatic retries, and one without for conditional puts (as the AWS backend has)."""
    config = CatalogConfig(catalog="aws", warehouse="s3://unused/warehouse", dynamodb_endpoint_url=endpoint)
    return make_client("dynamodb", config), make_client("dynamodb", config, retries=False)


def open_dynamodb_pointer(endpoint: str, snapshots_table: str, run: str, table: str) -> StatePointer:
    """The pointer of ``table`` under the table id ``<run>/<table>``, so that tests sharing the DynamoDB table never meet."""
    client, conditional = dynamodb_clients(endpoint)
    return DynamoDBStatePointer(client, snapshots_table, f"{run}/{table}", conditional_client=conditional)


def open_dynamodb_registry(endpoint: str, table: str, warehouse: str) -> TableRegistry:
    client, conditional = dynamodb_clients(endpoint)
    return DynamoDBTableRegistry(client, table, warehouse, conditional_client=conditional)

"""The AWS backend: data and state snapshots on S3; logs, pending appends, pointers and registry in DynamoDB.

Also :func:`open_s3_store`, the S3 store of the object-store catalog, whose log lives on S3
itself (``ObjectStoreBackend(store, NativeConditionalWrites(store))``).

The backend holds clients, which cannot be pickled; pickling it keeps only the config and
rebuilds the rest, with clients from the module-level cache of the receiving process.
"""

from __future__ import annotations

from typing import Any

from sleeper_spark.config import CatalogConfig
from sleeper_spark.errors import ConfigError
from sleeper_spark.log.aws.dynamodb_log import DynamoDBTransactionLog
from sleeper_spark.log.aws.dynamodb_log_tables import ensure_tables
from sleeper_spark.log.aws.dynamodb_registry import DynamoDBTableRegistry
from sleeper_spark.log.aws.dynamodb_snapshots_table import DynamoDBStatePointer
from sleeper_spark.log.aws.pending_dynamodb import DynamoDBPendingAppends
from sleeper_spark.log.catalog_backend import CatalogBackend
from sleeper_spark.log.registry import TableEntry
from sleeper_spark.storage.aws import make_client
from sleeper_spark.storage.conditional import NativeConditionalWrites
from sleeper_spark.storage.s3 import S3ObjectStore


def open_s3_store(config: CatalogConfig) -> S3ObjectStore:
    """The warehouse ``s3://bucket/prefix`` of ``config`` as an object store."""
    if config.location.kind != "s3":
        raise ConfigError(f"warehouse {config.warehouse!r} is not on S3; expected s3://bucket/prefix")
    return S3ObjectStore(config.warehouse, config)


class AwsBackend(CatalogBackend):
    def __init__(self, config: CatalogConfig) -> None:
        store = open_s3_store(config)
        self._config = config
        self._dynamodb = make_client("dynamodb", config)
        # Conditional puts retry by hand, so that a lost answer is never taken for a lost race.
        self._dynamodb_conditional = make_client("dynamodb", config, retries=False)
        registry = DynamoDBTableRegistry(
            self._dynamodb,
            config.snapshots_table,
            warehouse=store.root_uri,
            conditional_client=self._dynamodb_conditional,
            retry=config.store_retry,
        )
        super().__init__(store, NativeConditionalWrites(store), registry)

    @property
    def config(self) -> CatalogConfig:
        return self._config

    def transaction_log(self, entry: TableEntry) -> DynamoDBTransactionLog:
        return DynamoDBTransactionLog(
            self._dynamodb,
            self._config.transactions_table,
            entry.table_id,
            conditional_client=self._dynamodb_conditional,
            retry=self._config.store_retry,
        )

    def state_pointer(self, entry: TableEntry) -> DynamoDBStatePointer:
        return DynamoDBStatePointer(
            self._dynamodb,
            self._config.snapshots_table,
            entry.table_id,
            conditional_client=self._dynamodb_conditional,
            retry=self._config.store_retry,
        )

    def pending_appends(self, entry: TableEntry) -> DynamoDBPendingAppends:
        return DynamoDBPendingAppends(
            self._dynamodb,
            self._config.transactions_table,
            entry.table_id,
            conditional_client=self._dynamodb_conditional,
            retry=self._config.store_retry,
        )

    def ensure_infrastructure(self) -> None:
        """Creates the DynamoDB tables (idempotent) and checks that the bucket exists."""
        ensure_tables(self._dynamodb, self._config.transactions_table, self._config.snapshots_table)
        store = self.store
        assert isinstance(store, S3ObjectStore)
        store.check_bucket()

    def __reduce__(self) -> tuple[Any, ...]:
        return (AwsBackend, (self._config,))

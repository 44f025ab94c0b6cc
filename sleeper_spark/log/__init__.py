"""Transaction logs (object store, memory, DynamoDB), their codec, state snapshots, and pending appends."""

from sleeper_spark.errors import AppendOutcomeUnknownError, LogThrottledError, TransactionNumberTakenError
from sleeper_spark.log.catalog_backend import CatalogBackend, InMemoryLogBackend, ObjectStoreBackend
from sleeper_spark.log.codec import TransactionCodec
from sleeper_spark.log.memory import InMemoryTransactionLog
from sleeper_spark.log.objectstore import ObjectStoreTransactionLog
from sleeper_spark.log.pending import InMemoryPendingAppends, PendingAppends, PendingRecord
from sleeper_spark.log.registry import TableEntry, TableRegistry
from sleeper_spark.log.state_snapshots import StatePointer, StateSnapshotStore
from sleeper_spark.log.transaction_log import LogRecord, TransactionLog

__all__ = [
    "AppendOutcomeUnknownError",
    "CatalogBackend",
    "InMemoryLogBackend",
    "InMemoryPendingAppends",
    "InMemoryTransactionLog",
    "LogRecord",
    "LogThrottledError",
    "ObjectStoreBackend",
    "ObjectStoreTransactionLog",
    "PendingAppends",
    "PendingRecord",
    "StatePointer",
    "StateSnapshotStore",
    "TableEntry",
    "TableRegistry",
    "TransactionCodec",
    "TransactionLog",
    "TransactionNumberTakenError",
]

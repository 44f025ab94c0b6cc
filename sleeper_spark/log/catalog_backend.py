"""What a catalog is built from: an object store, a registry, and per-table logs, pointers and pending appends."""

from __future__ import annotations

from abc import ABC, abstractmethod
from datetime import datetime, timezone

from sleeper_spark.config import StoreRetryPolicy
from sleeper_spark.errors import WarehouseNotFoundError
from sleeper_spark.layout import DECISIONS_DIR
from sleeper_spark.log.memory import InMemoryTransactionLog
from sleeper_spark.log.objectstore import ObjectStoreDecisionLog, ObjectStoreTransactionLog
from sleeper_spark.log.pending import InMemoryPendingAppends, PendingAppends
from sleeper_spark.log.pending_objectstore import ObjectStorePendingAppends
from sleeper_spark.log.registry import ObjectStoreTableRegistry, TableEntry, TableRegistry
from sleeper_spark.log.state_snapshots import ObjectStoreStatePointer, StatePointer
from sleeper_spark.log.transaction_log import TransactionLog
from sleeper_spark.storage import ConditionalWriteStrategy, ObjectStore

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class CatalogBackend(ABC):
    """The storage of one catalog: data files, table registry, logs, state pointers and pending appends."""

    def __init__(self, store: ObjectStore, conditional: ConditionalWriteStrategy, registry: TableRegistry) -> None:
        self.store = store
        self.conditional = conditional
        self.registry = registry

    @abstractmethod
    def transaction_log(self, entry: TableEntry) -> TransactionLog:
        """The transaction log of one table."""

    @abstractmethod
    def state_pointer(self, entry: TableEntry) -> StatePointer:
        """The state-snapshot pointer of one table."""

    @abstractmethod
    def pending_appends(self, entry: TableEntry) -> PendingAppends:
        """The appends of one table waiting for a group commit, where every writer of it can see them."""

    def decision_log(self, transaction_id: str) -> TransactionLog:
        """The log whose entry 1 is the decision of one multi-table transaction (ADR 0016).

        A log like a table's, at ``_transactions/<id>``, so the decision gets the backend's
        one-winner-per-number guarantee with the same conditional-write strategy as the tables.
        """
        key = f"{DECISIONS_DIR}/{transaction_id}"
        return self.transaction_log(TableEntry(name=key, table_id=key, root=key, created_at=_EPOCH))

    def ensure_infrastructure(self) -> None:
        """Creates what the backend needs outside the warehouse; idempotent."""

    def check_warehouse(self) -> None:
        """:class:`WarehouseNotFoundError` if the warehouse is missing, so a typo is not an empty catalog."""
        if not self.store.root_exists():
            raise WarehouseNotFoundError(
                f"the warehouse {self.store.root_uri} does not exist: check the path (create_table, "
                "catalog.write and `sleeper-spark init` create a warehouse; reads never do)"
            )


class ObjectStoreBackend(CatalogBackend):
    """Everything on the object store: the embedded default (local disk) and bare S3."""

    def __init__(
        self, store: ObjectStore, conditional: ConditionalWriteStrategy, retry: StoreRetryPolicy | None = None
    ) -> None:
        super().__init__(store, conditional, ObjectStoreTableRegistry(store, conditional, retry=retry))
        self._retry = retry  # of the compare-and-swaps of the state pointer and of namespace records

    def transaction_log(self, entry: TableEntry) -> TransactionLog:
        return ObjectStoreTransactionLog(self.store, self.conditional, entry.root)

    def ensure_infrastructure(self) -> None:
        """Creates the warehouse folder (local disk) and what the conditional-write strategy needs."""
        self.store.create_root()
        self.conditional.ensure_infrastructure()

    def decision_log(self, transaction_id: str) -> TransactionLog:
        return ObjectStoreDecisionLog(self.store, self.conditional, transaction_id)

    def state_pointer(self, entry: TableEntry) -> StatePointer:
        return ObjectStoreStatePointer(self.store, self.conditional, entry.root, retry=self._retry)

    def pending_appends(self, entry: TableEntry) -> PendingAppends:
        return ObjectStorePendingAppends(self.store, entry.root)


class InMemoryLogBackend(ObjectStoreBackend):
    """Data on a store, logs in memory with fault hooks: for tests of the commit loop."""

    def __init__(self, store: ObjectStore, conditional: ConditionalWriteStrategy) -> None:
        super().__init__(store, conditional)
        self.logs: dict[str, InMemoryTransactionLog] = {}
        self.pending: dict[str, InMemoryPendingAppends] = {}

    def transaction_log(self, entry: TableEntry) -> InMemoryTransactionLog:
        return self.logs.setdefault(entry.table_id, InMemoryTransactionLog())

    def pending_appends(self, entry: TableEntry) -> InMemoryPendingAppends:
        return self.pending.setdefault(entry.table_id, InMemoryPendingAppends())

    def decision_log(self, transaction_id: str) -> TransactionLog:
        return CatalogBackend.decision_log(self, transaction_id)  # in memory too, with the same fault hooks

"""The catalog: where tables and namespaces are found, created and dropped."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sleeper_spark.commit import DecisionBook, GroupCommit, MemberEntries, TableHead, utc_now
from sleeper_spark.config import CatalogConfig, ConditionalWrites
from sleeper_spark.errors import (
    ConfigError,
    PathExistsError,
    SchemaMismatchError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from sleeper_spark.layout import table_metadata_prefixes
from sleeper_spark.log import (
    CatalogBackend,
    StateSnapshotStore,
    TableEntry,
    TransactionCodec,
    TransactionNumberTakenError,
)
from sleeper_spark.models import CreateTable, Namespace, Snapshot, TableSchema
from sleeper_spark.table.catalog_storage import open_backend
from sleeper_spark.table.names import check_table_name
from sleeper_spark.table.namespaces import CatalogNamespaces
from sleeper_spark.table.schema_changes import clustering_properties
from sleeper_spark.table.table import Table
from sleeper_spark.table.transactions import (
    DEFAULT_LEASE_S,
    CatalogTransaction,
    TransactionRecord,
    consistent_versions,
    recent_transactions,
)
from sleeper_spark.table.writes import check_partial_overwrite, check_write_args

_PARTITION_TYPES = frozenset({"bool", "int8", "int16", "int32", "int64", "string", "date"})


class Catalog:
    """A warehouse of tables with one transaction log per table."""

    def __init__(self, config: CatalogConfig, backend: CatalogBackend | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.config = config
        self.backend = backend or open_backend(config)
        self._sleep = sleep  # injectable so tests record commit back-offs instead of sleeping
        self._tables: dict[str, Table] = {}
        self._lock = threading.Lock()
        # The decisions of multi-table transactions this catalog has met (each never changes).
        self.decisions = DecisionBook(self.backend.decision_log, config.retry, sleep=sleep)

    def __repr__(self) -> str:
        return f"Catalog({self.config.catalog}, {self.config.warehouse!r})"

    # -- construction --------------------------------------------------------------------

    @classmethod
    def local(cls, warehouse: str, **settings: Any) -> Catalog:
        """The embedded default: data, log and state snapshots on the local disk."""
        return cls(CatalogConfig.of(catalog="local", warehouse=str(warehouse), **settings))

    @classmethod
    def aws(cls, warehouse: str, transactions_table: str = "sleeper-transactions",
            snapshots_table: str = "sleeper-snapshots", region: str | None = None, endpoint_url: str | None = None,
            s3_endpoint_url: str | None = None, dynamodb_endpoint_url: str | None = None, **settings: Any) -> Catalog:
        """Data and state snapshots on S3; the log and pointers in DynamoDB."""
        return cls(CatalogConfig.of(catalog="aws", warehouse=warehouse, transactions_table=transactions_table,
                                 snapshots_table=snapshots_table, region=region, endpoint_url=endpoint_url,
                                 s3_endpoint_url=s3_endpoint_url, dynamodb_endpoint_url=dynamodb_endpoint_url,
                                 **settings))

    @classmethod
    def object_store(cls, uri: str, endpoint_url: str | None = None, conditional_writes: ConditionalWrites = "native",
                     lock_table: str | None = None, dynamodb_endpoint_url: str | None = None,
                     region: str | None = None, **settings: Any) -> Catalog:
        """Everything, the log included, on one object store."""
        return cls(CatalogConfig.of(catalog="object_store", warehouse=uri, endpoint_url=endpoint_url,
                                    conditional_writes=conditional_writes, lock_table=lock_table,
                                    dynamodb_endpoint_url=dynamodb_endpoint_url, region=region, **settings))

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> Catalog:
        """From flat string options, as Spark passes them (see :meth:`options`)."""
        return cls(CatalogConfig.from_options(options))

    def options(self) -> dict[str, str]:
        """Flat string options that rebuild this catalog, e.g. for ``df.write.options(**...)``."""
        return self.config.to_options()

    def ensure_infrastructure(self) -> None:
        """Creates what the backend needs (DynamoDB tables, ...); idempotent."""
        self.backend.ensure_infrastructure()

    # -- tables --------------------------------------------------------------------------

    def create_table(self, name: str, schema: Any, partition_by: Sequence[str] = (),
                     properties: Mapping[str, str] | None = None, event_time_column: str | None = None,
                     cluster_by: Sequence[str] = ()) -> Table:
        """Creates a table (transaction 1); :class:`TableAlreadyExistsError` if the name is taken.
        ``cluster_by``: the clustering columns its compactions lay rows out by (``t.set_clustering``)."""
        check_table_name(name)
        table_schema = TableSchema.from_any(schema)
        partition_by = _check_layout(table_schema, tuple(partition_by), event_time_column)
        properties = clustering_properties(name, table_schema, partition_by, properties or {}, cluster_by)
        entry = TableEntry(name=name, table_id=uuid.uuid4().hex, root=name, created_at=utc_now())
        self.backend.registry.register(entry)
        create = CreateTable(snapshot_id=uuid.uuid4().hex, committed_at=entry.created_at, operation="create",
                             write_id=uuid.uuid4().hex, table_id=entry.table_id, name=name, schema_=table_schema,
                             partition_by=partition_by, properties=properties,
                             event_time_column=event_time_column)
        table = self._open(entry)
        try:
            table.head.create(create)
        except TransactionNumberTakenError:
            self.backend.registry.unregister(name)
            raise PathExistsError(
                f"{table.location} still holds the log of a dropped table; drop_table({name!r}, purge=True) "
                "removes it"
            ) from None
        except BaseException:
            self.backend.registry.unregister(name)
            raise
        return table

    def table(self, name: str) -> Table:
        """Opens a table; :class:`TableNotFoundError` if there is none of that name."""
        check_table_name(name)
        entry = self.backend.registry.lookup(name)
        if entry is None:
            self.backend.check_warehouse()
            raise TableNotFoundError(f"no table {name!r} in {self.config.warehouse}; known: {self.tables()[:20]}")
        warm = self._cached(entry)
        table = self._open(entry)
        if not warm and not table.head.exists():
            raise TableNotFoundError(
                f"table {name!r} is registered but its creation never completed; drop_table({name!r}) and create it"
            )
        return table

    def tables(self) -> list[str]:
        """The names of the catalog's tables, sorted."""
        names = self.backend.registry.names()
        if not names:
            self.backend.check_warehouse()  # else a mistyped path would read as an empty catalog
        return names

    def drop_table(self, name: str, purge: bool = False) -> None:
        """Removes the table from the catalog with its log; ``purge`` also deletes its data files."""
        table = self.table(name)
        self.backend.registry.unregister(name)
        with self._lock:
            self._tables.pop(name, None)
        table.head.drop()
        self.backend.pending_appends(table.entry).drop()
        store = self.backend.store
        prefixes = [table.root + "/"] if purge else table_metadata_prefixes(table.root)
        for prefix in prefixes:
            store.delete_many([info.key for info in store.list(prefix)])

    # -- namespaces ----------------------------------------------------------------------

    def create_namespace(self, name: str, comment: str | None = None, properties: Mapping[str, str] | None = None,
                         if_not_exists: bool = False) -> Namespace:
        """Creates the namespace ``name`` (``"sales"``, ``"sales.eu"``) with a comment and properties.

        :class:`NamespaceAlreadyExistsError` if it exists (created, or a prefix of table names),
        unless ``if_not_exists``, which returns the existing one unchanged. Creates the warehouse
        if it is new, as :meth:`create_table` does. A property ``"comment"`` is the comment, as in
        Spark's namespace metadata.
        """
        return self._namespaces.create(name, comment, properties, if_not_exists)

    def namespace(self, name: str) -> Namespace:
        """The namespace ``name``: its record, or for a prefix of table names that was never
        created, one with no comment, no properties and ``created_at=None``;
        :class:`NamespaceNotFoundError` if it is neither."""
        return self._namespaces.get(name)

    def namespaces(self, parent: str | None = None) -> list[str]:
        """The full names of the namespaces directly in ``parent`` (at the top when ``None``), sorted:
        created ones and the prefixes of table names. :class:`NamespaceNotFoundError` for a missing parent."""
        return self._namespaces.children(parent)

    def alter_namespace(self, name: str, set: Mapping[str, str] | None = None, unset: Sequence[str] = ()) -> Namespace:
        """Sets and removes properties of a namespace (the key ``"comment"`` sets or removes its comment)
        and returns it; a namespace only table names made is recorded by its first change."""
        return self._namespaces.alter(name, set, unset)

    def drop_namespace(self, name: str, cascade: bool = False) -> None:
        """Drops a namespace; :class:`NamespaceNotEmptyError` while it holds tables or namespaces, unless
        ``cascade``, which drops each of its tables as :meth:`drop_table` does and the namespaces in it."""
        self._namespaces.drop(name, cascade)

    @property
    def _namespaces(self) -> CatalogNamespaces:
        return CatalogNamespaces(self.backend, self.config.warehouse, self.drop_table)

    def _cached(self, entry: TableEntry) -> bool:
        with self._lock:
            cached = self._tables.get(entry.name)
            return cached is not None and cached.table_id == entry.table_id

    def _open(self, entry: TableEntry) -> Table:
        with self._lock:
            cached = self._tables.get(entry.name)
            if cached is not None and cached.table_id == entry.table_id:
                return cached
            store = self.backend.store
            head = TableHead(
                entry.name,
                self.backend.transaction_log(entry),
                TransactionCodec(store, entry.root, entry.name),
                StateSnapshotStore(store, entry.root, self.backend.state_pointer(entry)),
                self.config.retry,
                state_snapshot_interval=self.config.state_snapshot_interval,
                sleep=self._sleep,
                recheck_after_s=self.config.recheck_after_s,
                members=MemberEntries(self.decisions, entry.table_id, entry.name),
            )
            group = GroupCommit(head, self.backend.pending_appends(entry)) if self.config.group_commit else None
            table = self._tables[entry.name] = Table(self, entry, head, store, group)
            return table

    # -- the helper API ------------------------------------------------------------------

    def write(self, data: Any, name: str, mode: str = "append", partition_by: Sequence[str] = (),
              metadata: Mapping[str, str] | None = None, app_id: str | None = None,
              app_version: int | None = None, merge_schema: bool = False, replace_where: str | None = None,
              partition_overwrite_mode: str | None = None) -> Snapshot:
        """Writes ``data`` (a Spark DataFrame or Arrow data) to ``name``, creating the table if needed.

        ``merge_schema=True``: columns the data adds become table columns in the same commit.
        ``replace_where`` and ``partition_overwrite_mode`` make an overwrite replace part of the
        table, as in :meth:`Table.write`.
        """
        checked = check_write_args(mode, metadata, app_id, app_version)
        check_partial_overwrite(mode, replace_where, partition_overwrite_mode)  # before a table is created
        try:
            table = self.table(name)
        except TableNotFoundError:
            table = self._create_for(data, name, partition_by)
        if partition_by and tuple(partition_by) != table.partition_by:
            raise ConfigError(
                f"table {name!r} is partitioned by {list(table.partition_by)}, not {list(partition_by)}"
            )
        return table.write(data, mode=mode, metadata=checked, app_id=app_id, app_version=app_version,
                           merge_schema=merge_schema, replace_where=replace_where,
                           partition_overwrite_mode=partition_overwrite_mode)

    def transaction(self, lease_s: float = DEFAULT_LEASE_S) -> CatalogTransaction:
        """One atomic commit across tables: ``with catalog.transaction() as tx: tx.write(...)``.

        Every table written in the block gets its new version, or none does (see
        :mod:`sleeper_spark.table.transactions`). ``lease_s``: how long readers of the tables wait
        for the commit's decision before rolling it back (a writer that died half way holds the
        tables up for at most this long).
        """
        return CatalogTransaction(self, lease_s)

    def read_consistent(self, names: Sequence[str]) -> dict[str, int]:
        """Each table's version as of one point: no multi-table transaction in one but not another."""
        return consistent_versions(self, names)

    def transactions(self, names: Sequence[str] | None = None, limit: int = 100) -> list[TransactionRecord]:
        """The newest multi-table transactions in these tables' histories (all tables by default)."""
        return recent_transactions(self, self.tables() if names is None else names, limit)

    def _create_for(self, data: Any, name: str, partition_by: Sequence[str]) -> Table:
        schema = data.schema
        try:
            return self.create_table(name, schema, partition_by=partition_by)
        except TableAlreadyExistsError:
            return self.table(name)  # another writer created it first: write into theirs

    def read(self, spark: Any, name: str, version: int | None = None, timestamp: datetime | None = None) -> Any:
        """The table as a Spark DataFrame."""
        return self.table(name).read(spark, version=version, timestamp=timestamp)


def _check_layout(schema: TableSchema, partition_by: tuple[str, ...], event_time_column: str | None) -> tuple[str, ...]:
    for column in partition_by:
        if column not in schema.names:
            raise SchemaMismatchError(f"partition column {column!r} is not in the schema {schema.names}")
        type_name = schema.field(column).type.name
        if type_name not in _PARTITION_TYPES:
            raise SchemaMismatchError(
                f"cannot partition by {column!r} of type {type_name}: use a string, integer, boolean or date column"
            )
    if len(set(partition_by)) != len(partition_by):
        raise SchemaMismatchError(f"partition columns repeat: {list(partition_by)}")
    if event_time_column is not None and (
        event_time_column not in schema.names or schema.field(event_time_column).type.name != "timestamp"
    ):
        raise SchemaMismatchError(f"event_time_column {event_time_column!r} must be a timestamp column of the table")
    return partition_by


__all__ = ["Catalog"]

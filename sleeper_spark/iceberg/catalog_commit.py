"""Pointing an Iceberg catalog (Glue, pyiceberg's SQL catalog, any pyiceberg catalog) at the
published versions of a table, so that engines find it by name.

The first publish registers the table with the metadata JSON written beside it. Later ones commit
the new snapshots, schemas and properties as an Iceberg commit (``assert-ref-snapshot-id`` on
``main``: the catalog's compare-and-swap), so the catalog's pointer only moves forward, and a
publisher that lost a race re-reads and retries a bounded number of times.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from pyiceberg.catalog import Catalog as IcebergCatalog
from pyiceberg.catalog import load_catalog
from pyiceberg.exceptions import CommitFailedException, NoSuchTableError, TableAlreadyExistsError
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.refs import MAIN_BRANCH, SnapshotRefType
from pyiceberg.table.update import (
    AddSchemaUpdate,
    AddSnapshotUpdate,
    AssertRefSnapshotId,
    AssertTableUUID,
    RemoveSnapshotsUpdate,
    SetCurrentSchemaUpdate,
    SetPropertiesUpdate,
    SetSnapshotRefUpdate,
    TableUpdate,
)

from sleeper_spark.errors import IcebergPublishError

logger = logging.getLogger(__name__)

DEFAULT_NAMESPACE = "default"
_ATTEMPTS = 5


def identifier(table_name: str, namespace: str = DEFAULT_NAMESPACE) -> tuple[str, str]:
    """A sleeper table's name in an Iceberg catalog: ``db.events`` is table ``events`` of namespace
    ``db``; a name without a dot goes into ``namespace``."""
    space, dot, name = table_name.rpartition(".")
    return (space, name) if dot else (namespace, table_name)


class CatalogCommitter:
    """Commits published versions to one Iceberg catalog, opened on first use."""

    def __init__(self, properties: Mapping[str, str], namespace: str = DEFAULT_NAMESPACE) -> None:
        self._properties = dict(properties)
        self._namespace = namespace
        self._catalog: IcebergCatalog | None = None
        self._lock = threading.Lock()

    def catalog(self) -> IcebergCatalog:
        with self._lock:
            if self._catalog is None:
                name = self._properties.get("name", "sleeper")
                self._catalog = load_catalog(name, **{k: v for k, v in self._properties.items() if k != "name"})
            return self._catalog

    def commit(self, table_name: str, wanted: TableMetadata, metadata_location: str) -> None:
        """Makes the catalog's table ``table_name`` current at ``wanted`` (written at ``metadata_location``)."""
        catalog, ident = self.catalog(), identifier(table_name, self._namespace)
        for _ in range(_ATTEMPTS):
            try:
                table = catalog.load_table(ident)
            except NoSuchTableError:
                catalog.create_namespace_if_not_exists(ident[0])
                try:
                    catalog.register_table(ident, metadata_location)
                    return
                except TableAlreadyExistsError:
                    continue  # another publisher registered it first: commit on top of theirs
            if table.metadata.table_uuid != wanted.table_uuid:
                raise IcebergPublishError(
                    f"the Iceberg catalog already has a table {'.'.join(ident)} that is not sleeper table "
                    f"{table_name!r} (another table uuid); drop it there, or publish into another namespace")
            updates = catalog_updates(table.metadata, wanted)
            if not updates:
                return
            requirements = (AssertTableUUID(uuid=wanted.table_uuid),
                            AssertRefSnapshotId(ref=MAIN_BRANCH, snapshot_id=table.metadata.current_snapshot_id))
            try:
                catalog.commit_table(table, requirements, updates)
                return
            except CommitFailedException as error:
                logger.debug("table %s: Iceberg catalog commit lost a race (%s); retrying", table_name, error)
        raise IcebergPublishError(f"table {table_name!r}: the Iceberg catalog kept changing under {_ATTEMPTS} "
                                  "commits; the next publish will catch it up")


def catalog_updates(current: TableMetadata, wanted: TableMetadata) -> tuple[TableUpdate, ...]:
    """The updates that take the catalog's ``current`` metadata to ``wanted``; none when the
    catalog is already there or further on (its pointer never moves back)."""
    now, target = current.current_snapshot_id, wanted.current_snapshot_id
    if target is None or (now is not None and now > target):
        return ()
    updates: list[Any] = []
    known_schemas = {s.schema_id for s in current.schemas}
    updates += [AddSchemaUpdate(schema_=s) for s in wanted.schemas if s.schema_id not in known_schemas]
    if wanted.current_schema_id != current.current_schema_id:
        updates.append(SetCurrentSchemaUpdate(schema_id=wanted.current_schema_id))
    known_snapshots = {s.snapshot_id for s in current.snapshots}
    updates += [AddSnapshotUpdate(snapshot=s) for s in wanted.snapshots if s.snapshot_id not in known_snapshots]
    if now != target:
        updates.append(SetSnapshotRefUpdate(ref_name=MAIN_BRANCH, type=SnapshotRefType.BRANCH, snapshot_id=target,
                                            max_ref_age_ms=None, max_snapshot_age_ms=None, min_snapshots_to_keep=None))
    expired = sorted(known_snapshots - {s.snapshot_id for s in wanted.snapshots})
    if expired:
        updates.append(RemoveSnapshotsUpdate(snapshot_ids=expired))
    changed = {k: v for k, v in wanted.properties.items() if current.properties.get(k) != v}
    if changed:
        updates.append(SetPropertiesUpdate(updates=changed))
    return tuple(updates)

"""The Iceberg table metadata (the JSON document) of a published version.

Sleeper version ``v`` is Iceberg snapshot ``v``, with sequence number ``v``: the mapping is the
identity, so it never changes, whoever publishes and however often. Every version still in the
log is a snapshot, including schema and property changes (operation ``replace``: no data
changed), so that every version reads the same in another engine.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import TableMetadataV2
from pyiceberg.table.refs import MAIN_BRANCH, SnapshotRef, SnapshotRefType
from pyiceberg.table.snapshots import MetadataLogEntry, Operation, SnapshotLogEntry, Summary
from pyiceberg.table.snapshots import Snapshot as IcebergSnapshot
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER

from sleeper_spark.models import Snapshot

# The snapshot summary key holding the sleeper version (equal to the snapshot id, said plainly).
SLEEPER_VERSION = "sleeper.version"
SLEEPER_OPERATION = "sleeper.operation"
NAME_MAPPING = "schema.name-mapping.default"
# How many earlier metadata files a metadata file lists (Iceberg's write.metadata.previous-versions-max).
METADATA_LOG_LENGTH = 100
_NO_DATA_CHANGE = ("compact", "schema", "properties", "repair")


def table_uuid(table_id: str) -> uuid.UUID:
    """The Iceberg table UUID of a sleeper table: derived from its id, so every publisher agrees."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"sleeper-spark:{table_id}")


def operation(snapshot: Snapshot) -> Operation:
    """What a sleeper version is in Iceberg's terms."""
    if snapshot.operation in _NO_DATA_CHANGE or (not snapshot.files_added and not snapshot.files_removed):
        return Operation.REPLACE
    if not snapshot.files_removed:
        return Operation.APPEND
    if not snapshot.files_added:
        return Operation.DELETE
    return Operation.OVERWRITE


def iceberg_snapshot(snapshot: Snapshot, manifest_list: str, schema_id: int, parent: int | None,
                     totals: tuple[int, int]) -> IcebergSnapshot:
    """The Iceberg snapshot of a sleeper version; ``totals`` are the version's live files and rows."""
    summary = Summary(
        operation(snapshot),
        **{
            SLEEPER_VERSION: str(snapshot.version),
            SLEEPER_OPERATION: snapshot.operation,
            "added-data-files": str(snapshot.files_added),
            "deleted-data-files": str(snapshot.files_removed),
            "added-records": str(snapshot.rows_added),
            "deleted-records": str(snapshot.rows_removed),
            "added-files-size": str(snapshot.bytes_added),
            "total-data-files": str(totals[0]),
            "total-records": str(totals[1]),
            "total-delete-files": "0",
            "total-position-deletes": "0",
            "total-equality-deletes": "0",
        },
    )
    return IcebergSnapshot(
        snapshot_id=snapshot.version, parent_snapshot_id=parent, sequence_number=snapshot.version,
        timestamp_ms=_millis(snapshot), manifest_list=manifest_list, summary=summary, schema_id=schema_id,
    )


def table_metadata(location: str, table_id: str, schemas: Sequence[Schema], last_column_id: int,
                   spec: PartitionSpec, snapshots: Sequence[IcebergSnapshot], properties: Mapping[str, str],
                   metadata_log: Sequence[MetadataLogEntry]) -> TableMetadataV2:
    """The metadata whose current snapshot is the last of ``snapshots`` (oldest first), under the
    last of ``schemas``."""
    current = snapshots[-1]
    return TableMetadataV2(
        location=location, table_uuid=table_uuid(table_id), last_updated_ms=current.timestamp_ms,
        last_column_id=last_column_id, schemas=list(schemas), current_schema_id=schemas[-1].schema_id,
        partition_specs=[spec], default_spec_id=spec.spec_id,
        last_partition_id=max([f.field_id for f in spec.fields], default=999),
        properties=dict(properties), current_snapshot_id=current.snapshot_id, snapshots=list(snapshots),
        snapshot_log=[SnapshotLogEntry(snapshot_id=s.snapshot_id, timestamp_ms=s.timestamp_ms) for s in snapshots],
        metadata_log=list(metadata_log)[-METADATA_LOG_LENGTH:], sort_orders=[UNSORTED_SORT_ORDER],
        default_sort_order_id=UNSORTED_SORT_ORDER.order_id,
        refs={MAIN_BRANCH: SnapshotRef(snapshot_id=current.snapshot_id, snapshot_ref_type=SnapshotRefType.BRANCH,
                                       min_snapshots_to_keep=None, max_snapshot_age_ms=None, max_ref_age_ms=None)},
        last_sequence_number=current.sequence_number,
    )


def _millis(snapshot: Snapshot) -> int:
    return int(snapshot.committed_at.timestamp() * 1000)

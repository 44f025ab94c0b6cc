"""The Iceberg table metadata (the JSON document) of a published version.

Sleeper version ``v`` is Iceberg snapshot ``v``, with sequence number ``v``: the mapping is the
identity, so it never changes, whoever publishes and however often. Every version still in the
log is a snapshot, including schema and property changes (operation ``replace``: no data
changed), so that every version reads the same in another engine.
"""

from __future__ import annotations

import re
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
_METADATA_FILE = re.compile(r"/v(\d+)\.metadata\.json$")


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
    last of ``schemas``. Built without pydantic's validation, which would check every snapshot
    again for every version; tests/iceberg/test_publishing_costs.py checks it equals the validated one."""
    current = snapshots[-1]
    assert current.sequence_number is not None
    return TableMetadataV2.model_construct(
        location=location, table_uuid=table_uuid(table_id), last_updated_ms=current.timestamp_ms,
        last_column_id=last_column_id, schemas=list(schemas), current_schema_id=schemas[-1].schema_id,
        partition_specs=[spec], default_spec_id=spec.spec_id,
        last_partition_id=max([f.field_id for f in spec.fields], default=999),
        properties=dict(properties), current_snapshot_id=current.snapshot_id, snapshots=list(snapshots),
        snapshot_log=[SnapshotLogEntry(snapshot_id=s.snapshot_id, timestamp_ms=s.timestamp_ms) for s in snapshots],
        metadata_log=list(metadata_log)[-METADATA_LOG_LENGTH:], sort_orders=[UNSORTED_SORT_ORDER],
        default_sort_order_id=UNSORTED_SORT_ORDER.order_id,
        refs=_main_branch(current.snapshot_id),
        last_sequence_number=current.sequence_number,
    )


def metadata_json(metadata: TableMetadataV2) -> bytes:
    return metadata.model_dump_json(by_alias=True, exclude_none=True).encode()


def metadata_at(newest: TableMetadataV2, version: int) -> TableMetadataV2 | None:
    """The metadata of ``version`` as publishing it would have made it, from a newer version's
    (``newest``): its snapshots up to ``version``, the schemas up to the one ``version`` used, the
    same properties, and the metadata files logged before it. None if ``newest`` has no snapshot
    ``version`` (it was expired, or is older than the first version published)."""
    current = next((s for s in newest.snapshots if s.snapshot_id == version), None)
    if current is None:
        return None
    schema_id = current.schema_id if current.schema_id is not None else newest.current_schema_id
    schemas = [s for s in newest.schemas if s.schema_id <= schema_id]
    earlier_files = [e for e in newest.metadata_log if _metadata_version(e.metadata_file) < version]
    derived: TableMetadataV2 = newest.model_copy(update={
        "last_updated_ms": current.timestamp_ms, "last_column_id": max(s.highest_field_id for s in schemas),
        "schemas": schemas, "current_schema_id": schema_id, "current_snapshot_id": version,
        "snapshots": [s for s in newest.snapshots if s.snapshot_id <= version],
        "snapshot_log": [e for e in newest.snapshot_log if e.snapshot_id <= version],
        "metadata_log": earlier_files, "refs": _main_branch(version),
        "last_sequence_number": current.sequence_number,
    })
    return derived


def _main_branch(snapshot_id: int) -> dict[str, SnapshotRef]:
    return {MAIN_BRANCH: SnapshotRef(snapshot_id=snapshot_id, snapshot_ref_type=SnapshotRefType.BRANCH,
                                     min_snapshots_to_keep=None, max_snapshot_age_ms=None, max_ref_age_ms=None)}


def _metadata_version(path: str) -> int:
    found = _METADATA_FILE.search(path)
    return int(found.group(1)) if found else 0


def _millis(snapshot: Snapshot) -> int:
    return int(snapshot.committed_at.timestamp() * 1000)

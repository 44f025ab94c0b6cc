"""One published version after another: what each sleeper version adds to the Iceberg metadata.

Manifests are grouped by the version that added their files: the files version ``k`` added (and
that are still live) are in one manifest, named ``manifest-<k>-at-<r>.avro`` where ``r`` is the
version that wrote it. An append writes one manifest and reuses every other; a version that
removes files rewrites only the manifests holding them (their live files as ``EXISTING``, the
removed ones as ``DELETED``). The first published version (the *base*) puts all its files in one
manifest. So publishing costs what the commit changed, not the size of the table; only the
metadata JSON, which lists every snapshot, grows with the number of versions.

This module is pure: it says what to write. :mod:`sleeper_spark.iceberg.publisher` writes it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.manifest import ManifestEntry, ManifestEntryStatus, ManifestFile
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import TableMetadataV2
from pyiceberg.table.snapshots import MetadataLogEntry
from pyiceberg.table.snapshots import Snapshot as IcebergSnapshot
from pyiceberg.types import NestedField

from sleeper_spark.errors import IcebergPublishError
from sleeper_spark.iceberg.avro_files import manifest_bytes, manifest_list_bytes
from sleeper_spark.iceberg.entries import EntryBuilder, partition_spec
from sleeper_spark.iceberg.metadata import NAME_MAPPING, iceberg_snapshot, table_metadata
from sleeper_spark.iceberg.schema import FieldIds, iceberg_schema, name_mapping_json
from sleeper_spark.layout import iceberg_manifest_key, iceberg_manifest_list_key, iceberg_metadata_key
from sleeper_spark.state import TableState

# The metadata property naming the first published version, whose manifest holds older files too.
BASE_VERSION = "sleeper.base-version"
# The metadata property naming the oldest version not expired (see sleeper_spark.iceberg.expiry).
EXPIRED_BEFORE = "sleeper.expired-before"
_MANIFEST_NAME = re.compile(r"manifest-(\d+)-at-(\d+)\.avro$")


def group_of(manifest: ManifestFile) -> int:
    """The version whose files a manifest holds, from its name."""
    found = _MANIFEST_NAME.search(manifest.manifest_path)
    if found is None:
        raise IcebergPublishError(f"{manifest.manifest_path} is not a manifest this package wrote; rebuild the "
                                  "Iceberg metadata with `sleeper-spark iceberg sync --rebuild`")
    return int(found.group(1))


@dataclass(frozen=True)
class Published:
    """A published version, with what the next one builds on."""

    state: TableState
    metadata: TableMetadataV2
    ids: FieldIds
    manifests: Mapping[int, ManifestFile]  # group (the version that added the files) -> its manifest
    base: int  # the first published version: its manifest holds the files added before it too
    location: str  # the table's URI

    @property
    def version(self) -> int:
        return self.state.version


@dataclass
class Files:
    """What publishing one version writes, table-relative key -> bytes, in the order to write them."""

    objects: dict[str, bytes] = field(default_factory=dict)


def first_version(state: TableState, location: str, table_id: str, files: Files, expired_before: int = 0
                  ) -> Published:
    """Publishes ``state`` as the base: one manifest holding all its files."""
    schema, ids, last_id = iceberg_schema(state.schema, 0, {}, 0)
    spec = partition_spec(state.partition_by, ids)
    manifests: dict[int, ManifestFile] = {}
    rows = state.files.table()
    if rows.num_rows:
        builder = EntryBuilder(location, state.schema, ids, state.partition_by)
        entries = builder.entries(rows, ManifestEntryStatus.ADDED, state.version, state.version)
        manifests[state.version] = _manifest(files, location, spec, schema, state.version, state.version, entries)
    metadata = _metadata(state, location, table_id, [schema], last_id, spec, (), manifests, files, (), state.version,
                         expired_before)
    return Published(state, metadata, ids, manifests, state.version, location)


def next_version(last: Published, state: TableState, table_id: str, files: Files) -> Published:
    """Publishes ``state`` (at ``last.version + 1``) on top of ``last``."""
    version, location = state.version, last.location
    schemas = list(last.metadata.schemas)
    ids, last_id = last.ids, last.metadata.last_column_id
    if state.schema != last.state.schema:
        schema, ids, last_id = iceberg_schema(state.schema, schemas[-1].schema_id + 1, last.ids, last_id)
        schemas.append(schema)
    schema, spec = schemas[-1], last.metadata.spec()
    builder = EntryBuilder(location, state.schema, ids, state.partition_by)
    manifests = {k: m for k, m in last.manifests.items() if m.has_added_files() or m.has_existing_files()}
    latest = state.latest
    assert latest is not None and latest.version == version
    new_rows = state.files.table()
    if latest.files_removed:
        old_rows = last.state.files.table()
        removed = old_rows.filter(pc.invert(pc.is_in(old_rows.column("path"), value_set=new_rows.column("path"))))
        added = new_rows.filter(pc.invert(pc.is_in(new_rows.column("path"), value_set=old_rows.column("path"))))
        keys = sorted(manifests)
        for group in sorted({_group(keys, v, last.base) for v in removed.column("added_version").to_pylist()}):
            # The files this version added start a group of their own.
            live = _in_group(new_rows, [*keys, version], group, last.base)
            gone = _in_group(removed, keys, group, last.base)
            entries = [*builder.entries(live, ManifestEntryStatus.EXISTING, version, last.base),
                       *builder.entries(gone, ManifestEntryStatus.DELETED, version, last.base)]
            manifests[group] = _manifest(files, location, spec, schema, group, version, entries)
    else:
        added = new_rows.filter(pc.equal(new_rows.column("added_version"), version))
    if added.num_rows:
        entries = list(builder.entries(added, ManifestEntryStatus.ADDED, version, last.base))
        manifests[version] = _manifest(files, location, spec, schema, version, version, entries)
    previous = MetadataLogEntry(metadata_file=f"{location}/{iceberg_metadata_key(last.version)}",
                                timestamp_ms=last.metadata.last_updated_ms)
    metadata = _metadata(state, location, table_id, schemas, last_id, spec, last.metadata.snapshots, manifests, files,
                         [*last.metadata.metadata_log, previous], last.base,
                         int(last.metadata.properties.get(EXPIRED_BEFORE, "0")))
    return Published(state, metadata, ids, manifests, last.base, location)


def _metadata(state: TableState, location: str, table_id: str, schemas: list[Schema], last_id: int,
              spec: PartitionSpec, earlier: list[IcebergSnapshot] | tuple[()], manifests: dict[int, ManifestFile],
              files: Files, metadata_log: list[MetadataLogEntry] | tuple[()], base: int,
              expired_before: int = 0) -> TableMetadataV2:
    latest = state.latest
    assert latest is not None
    version = state.version
    ordered = [manifests[k] for k in sorted(manifests)]
    list_key = iceberg_manifest_list_key(version)
    parent = earlier[-1].snapshot_id if earlier else None
    files.objects[list_key] = manifest_list_bytes(f"{location}/{list_key}", version, parent, version, ordered)
    for manifest in ordered:  # what the list writer assigned, so that the next list keeps it
        if manifest.sequence_number < 0:
            manifest.sequence_number = version
        if manifest.min_sequence_number < 0:
            manifest.min_sequence_number = version
    rows = pc.sum(state.files.table().column("row_count")).as_py() or 0
    totals = (len(state.files), rows)
    snapshot = iceberg_snapshot(latest, f"{location}/{list_key}", schemas[-1].schema_id, parent, totals)
    # The versions the state still holds (as a column: building every Snapshot would cost more).
    kept = {v for v in state.history.table().column("version").to_pylist() if v >= expired_before}
    snapshots = [s for s in earlier if s.snapshot_id in kept] + [snapshot]
    properties = {NAME_MAPPING: name_mapping_json(_every_field(schemas)), "sleeper.table": state.name,
                  BASE_VERSION: str(base), EXPIRED_BEFORE: str(expired_before)}
    metadata = table_metadata(location, table_id, schemas, last_id, spec, snapshots, properties, metadata_log)
    files.objects[iceberg_metadata_key(version)] = metadata.model_dump_json(by_alias=True, exclude_none=True).encode()
    return metadata


def _every_field(schemas: list[Schema]) -> Schema:
    """One schema with every field any of ``schemas`` has (names are never reused, so a name
    mapping over all of them reads the files of every version, including dropped columns)."""
    by_id: dict[int, NestedField] = {}
    for schema in schemas:
        by_id.update((f.field_id, f) for f in schema.fields)
    return Schema(*[by_id[i] for i in sorted(by_id)])


def _manifest(files: Files, location: str, spec: PartitionSpec, schema: Schema, group: int, writer: int,
              entries: object) -> ManifestFile:
    key = iceberg_manifest_key(group, writer)
    manifest, data = manifest_bytes(f"{location}/{key}", spec, schema, writer, entries)  # type: ignore[arg-type]
    files.objects[key] = data
    return manifest


def _group(keys: list[int], added_version: int | None, base: int) -> int:
    """The group (manifest) a file added at ``added_version`` is in: the newest group at or before it."""
    if added_version is None or added_version <= base or not keys:
        return base
    return max((k for k in keys if k <= added_version), default=base)


def _in_group(rows: pa.Table, keys: list[int], group: int, base: int) -> pa.Table:
    later = [k for k in keys if k > group]
    added = rows.column("added_version")
    mask = pc.less(added, later[0]) if later else pc.is_valid(added)
    mask = pc.or_kleene(pc.is_null(added), mask) if group == base else pc.and_(pc.greater_equal(added, group), mask)
    return rows.filter(pc.fill_null(mask, False))


ManifestEntries = list[ManifestEntry]

"""One published version after another: what each sleeper version adds to the Iceberg metadata.

Manifests are grouped by the version that added their files: manifest ``k`` holds the live files
added by versions ``k`` up to the next group's key, and is named ``manifest-<k>-at-<r>.avro``
where ``r`` is the version that wrote it. An append writes one manifest and reuses every other;
a version that removes files rewrites only the manifests holding them (their live files as
``EXISTING``, the removed ones as ``DELETED``). The first published version (the *base*) puts all
its files in one manifest. A rewritten manifest takes its data files back from the stored one
(decoding is several times quicker than building them again from the files table).

Manifests are merged so that a version lists at most :data:`MAX_MANIFESTS` (Iceberg's own
default for merging): a version that would list more merges one run of adjacent manifests
written before it into one, of their live files as ``EXISTING`` with their original snapshot and
sequence number. The run is the oldest of at least two, and at most :data:`MERGE_FANOUT`, of the
smallest *size class* (``floor(log(entries, MERGE_FANOUT))``). Merging a full run lifts its files
a class, and runs of small classes are merged first, so a file is rewritten about once a class
(``log`` of the table's size) and an append costs a small amount amortised: with small appends
the runs merged are of the newest, small manifests. Merging manifests this process wrote copies
their entries' data file records as encoded (:data:`KEEP_STORED_BELOW`); others are read back.

So publishing costs what the commit changed, not the size of the table; only the metadata JSON,
which lists every snapshot, grows with the number of versions.

This module is pure: it says what to write. :mod:`sleeper_spark.iceberg.publisher` writes it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.manifest import DataFile, ManifestEntry, ManifestEntryStatus, ManifestFile
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.metadata import TableMetadataV2
from pyiceberg.table.snapshots import MetadataLogEntry
from pyiceberg.table.snapshots import Snapshot as IcebergSnapshot
from pyiceberg.types import NestedField

from sleeper_spark.errors import IcebergPublishError
from sleeper_spark.iceberg.avro_files import StoredEntry, existing_manifest_bytes, manifest_bytes, manifest_list_bytes
from sleeper_spark.iceberg.entries import EntryBuilder, partition_spec
from sleeper_spark.iceberg.metadata import NAME_MAPPING, iceberg_snapshot, metadata_json, table_metadata
from sleeper_spark.iceberg.schema import FieldIds, iceberg_schema, name_mapping_json
from sleeper_spark.layout import iceberg_manifest_key, iceberg_manifest_list_key, iceberg_metadata_key
from sleeper_spark.state import TableState

# The metadata property naming the first published version, whose manifest holds older files too.
BASE_VERSION = "sleeper.base-version"
# The metadata property naming the oldest version not expired (see sleeper_spark.iceberg.expiry).
EXPIRED_BEFORE = "sleeper.expired-before"
_MANIFEST_NAME = re.compile(r"manifest-(\d+)-at-(\d+)\.avro$")
# A version that would list more manifests than this merges a run of them (Iceberg's own
# commit.manifest.min-count-to-merge is 100 too), of at most MERGE_FANOUT manifests.
MAX_MANIFESTS = 100
MERGE_FANOUT = 8
# Manifests of fewer entries than this keep their entries' records in memory (a few hundred bytes
# each), so that merging them encodes no data file again (the small ones are the ones merged),
# up to STORED_ENTRIES_KEPT entries in all (some 30 MB).
KEEP_STORED_BELOW = MERGE_FANOUT**4
STORED_ENTRIES_KEPT = 100_000
# The live data files of a stored manifest, by path (empty when it cannot be read).
DataFilesOf = Callable[[ManifestFile], Mapping[str, DataFile]]


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
    # Whether this version's metadata JSON was written (a long catch-up writes only its last one's).
    has_json: bool = True
    # The Avro record of each listed manifest, by path, for the next manifest list to repeat.
    records: Mapping[str, bytes] = field(default_factory=dict)
    # The entries of the small manifests this process wrote, by path, for merging them.
    stored: Mapping[str, Sequence[StoredEntry]] = field(default_factory=dict)

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
    stored: dict[str, Sequence[StoredEntry]] = {}
    rows = state.files.table()
    if rows.num_rows:
        builder = EntryBuilder(location, state.schema, ids, state.partition_by)
        writing = _Writing(files, location, spec, schema, state.version, state.version, builder, _nothing_read,
                           stored)
        entries = builder.entries(rows, ManifestEntryStatus.ADDED, state.version, state.version)
        manifests[state.version] = writing.manifest(state.version, entries)
    records: dict[str, bytes] = {}
    metadata = _metadata(state, location, table_id, [schema], last_id, spec, (), manifests, files, (), state.version,
                         expired_before, records)
    return Published(state, metadata, ids, manifests, state.version, location, records=records, stored=stored)


def next_version(last: Published, state: TableState, table_id: str, files: Files,
                 read: DataFilesOf | None = None, with_json: bool = True) -> Published:
    """Publishes ``state`` (at ``last.version + 1``) on top of ``last``; without its metadata JSON
    unless ``with_json`` (the metadata is built all the same: the next version builds on it).
    ``read`` gives the live data files of a stored manifest, for the manifests rewritten."""
    version, location = state.version, last.location
    schemas = list(last.metadata.schemas)
    ids, last_id = last.ids, last.metadata.last_column_id
    if state.schema != last.state.schema:
        schema, ids, last_id = iceberg_schema(state.schema, schemas[-1].schema_id + 1, last.ids, last_id)
        schemas.append(schema)
    builder = EntryBuilder(location, state.schema, ids, state.partition_by)
    manifests = {k: m for k, m in last.manifests.items() if m.has_added_files() or m.has_existing_files()}
    # A column added since: the entries stored lack its counts (see _recount).
    added_columns = set(state.schema.names) - set(last.state.schema.names)
    stored = {} if added_columns else {m.manifest_path: last.stored[m.manifest_path] for m in manifests.values()
                                       if m.manifest_path in last.stored}
    writing = _Writing(files, location, last.metadata.spec(), schemas[-1], version, last.base, builder,
                       read or _nothing_read, stored)
    latest = state.latest
    assert latest is not None and latest.version == version
    new_rows = state.files.table()
    if latest.files_removed:
        old_rows = last.state.files.table()
        removed = old_rows.filter(pc.invert(pc.is_in(old_rows.column("path"), value_set=new_rows.column("path"))))
        added = new_rows.filter(pc.invert(pc.is_in(new_rows.column("path"), value_set=old_rows.column("path"))))
        _rewrite_removals(writing, manifests, new_rows, removed)
    else:
        added = new_rows.filter(pc.equal(new_rows.column("added_version"), version))
    if added_columns:
        _recount(writing, manifests, new_rows)
    if added.num_rows:
        manifests[version] = writing.manifest(version, builder.entries(added, ManifestEntryStatus.ADDED, version,
                                                                       last.base))
    if len(manifests) > MAX_MANIFESTS:
        _merge(writing, manifests, new_rows)
    schema, spec = writing.schema, writing.spec
    # The metadata log names the metadata files written (one left out is derived when asked for).
    log = list(last.metadata.metadata_log)
    if last.has_json:
        log.append(MetadataLogEntry(metadata_file=f"{location}/{iceberg_metadata_key(last.version)}",
                                    timestamp_ms=last.metadata.last_updated_ms))
    records = {m.manifest_path: last.records[m.manifest_path] for m in manifests.values()
               if m.manifest_path in last.records}
    metadata = _metadata(state, location, table_id, schemas, last_id, spec, last.metadata.snapshots, manifests, files,
                         log, last.base, int(last.metadata.properties.get(EXPIRED_BEFORE, "0")), records, with_json)
    stored = {m.manifest_path: stored[m.manifest_path] for m in manifests.values() if m.manifest_path in stored}
    return Published(state, metadata, ids, manifests, last.base, location, with_json, records, stored)


def _metadata(state: TableState, location: str, table_id: str, schemas: list[Schema], last_id: int,
              spec: PartitionSpec, earlier: list[IcebergSnapshot] | tuple[()], manifests: dict[int, ManifestFile],
              files: Files, metadata_log: list[MetadataLogEntry] | tuple[()], base: int,
              expired_before: int, records: dict[str, bytes], with_json: bool = True) -> TableMetadataV2:
    latest = state.latest
    assert latest is not None
    version = state.version
    ordered = [manifests[k] for k in sorted(manifests)]
    list_key = iceberg_manifest_list_key(version)
    parent = earlier[-1].snapshot_id if earlier else None
    files.objects[list_key] = manifest_list_bytes(f"{location}/{list_key}", version, parent, version, ordered, records)
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
    if with_json:
        files.objects[iceberg_metadata_key(version)] = metadata_json(metadata)
    return metadata


def _every_field(schemas: list[Schema]) -> Schema:
    """One schema with every field any of ``schemas`` has (names are never reused, so a name
    mapping over all of them reads the files of every version, including dropped columns)."""
    by_id: dict[int, NestedField] = {}
    for schema in schemas:
        by_id.update((f.field_id, f) for f in schema.fields)
    return Schema(*[by_id[i] for i in sorted(by_id)])


@dataclass(frozen=True)
class _Writing:
    """What writing the manifests of one version needs."""

    files: Files
    location: str
    spec: PartitionSpec
    schema: Schema
    version: int
    base: int
    builder: EntryBuilder
    read: DataFilesOf
    stored: dict[str, Sequence[StoredEntry]]  # see Published.stored

    def manifest(self, group: int, entries: Iterable[ManifestEntry]) -> ManifestFile:
        key = iceberg_manifest_key(group, self.version)
        manifest, data, stored = manifest_bytes(f"{self.location}/{key}", self.spec, self.schema, self.version,
                                                entries)
        self.files.objects[key] = data
        if stored is not None:
            self._keep(manifest, stored)
        return manifest

    def _keep(self, manifest: ManifestFile, stored: Sequence[StoredEntry]) -> None:
        if len(stored) < KEEP_STORED_BELOW and sum(map(len, self.stored.values())) + len(stored) <= STORED_ENTRIES_KEPT:
            self.stored[manifest.manifest_path] = stored

    def merged(self, group: int, manifests: Sequence[ManifestFile], live: pa.Table) -> ManifestFile | None:
        """The manifest of ``manifests`` merged from their stored entries; None unless this
        process stored every one of them, and they are the ``live`` files exactly."""
        if not all(m.manifest_path in self.stored for m in manifests):
            return None
        entries = [e for m in manifests for e in self.stored[m.manifest_path]]
        if {e.path for e in entries} != {f"{self.location}/{p}" for p in live.column("path").to_pylist()} or \
                len(entries) != live.num_rows:
            return None
        key = iceberg_manifest_key(group, self.version)
        manifest, data = existing_manifest_bytes(f"{self.location}/{key}", self.spec, self.schema, self.version,
                                                 entries)
        self.files.objects[key] = data
        for merged in manifests:  # no longer listed: what they kept makes room
            del self.stored[merged.manifest_path]
        self._keep(manifest, entries)
        return manifest

    def known(self, manifests: Iterable[ManifestFile]) -> dict[str, DataFile]:
        """The data files of ``manifests`` as stored: the entries rewritten take them as they are."""
        known: dict[str, DataFile] = {}
        for manifest in manifests:
            known.update(self.read(manifest))
        return known


def _rewrite_removals(writing: _Writing, manifests: dict[int, ManifestFile], rows: pa.Table, removed: pa.Table
                      ) -> None:
    """Rewrites the manifests that hold a removed file: their live files ``EXISTING``, the removed
    ones ``DELETED``."""
    keys, version, base = sorted(manifests), writing.version, writing.base
    for group in sorted({_group(keys, v, base) for v in removed.column("added_version").to_pylist()}):
        known = writing.known([manifests[group]])
        # The files this version added start a group of their own.
        live = _in_group(rows, [*keys, version], group, base)
        gone = _in_group(removed, keys, group, base)
        entries = [*writing.builder.entries(live, ManifestEntryStatus.EXISTING, version, base, known),
                   *writing.builder.entries(gone, ManifestEntryStatus.DELETED, version, base, known)]
        manifests[group] = writing.manifest(group, entries)


def _recount(writing: _Writing, manifests: dict[int, ManifestFile], rows: pa.Table) -> None:
    """Rewrites the manifests not yet rewritten by this version, their live files ``EXISTING``:
    after a column is added, their entries lack its counts, which some readers take as "no
    nulls" (see :mod:`sleeper_spark.iceberg.counts`), though the files lack the column. Entries
    are built from the files table, as reading the manifests back would build them all again."""
    keys = sorted(manifests)
    for group in keys:
        if manifests[group].added_snapshot_id == writing.version:
            continue
        live = _in_group(rows, [*keys, writing.version], group, writing.base)
        if live.num_rows == 0:
            continue
        manifests[group] = writing.manifest(
            group, writing.builder.entries(live, ManifestEntryStatus.EXISTING, writing.version, writing.base))


def _merge(writing: _Writing, manifests: dict[int, ManifestFile], rows: pa.Table) -> None:
    """Merges one run of adjacent manifests written before this version into one, of their live
    files as ``EXISTING``: the oldest run of at least two of the smallest size class that has one
    (a class spans a factor of :data:`MERGE_FANOUT` in entries), at most MERGE_FANOUT long."""
    keys = sorted(manifests)
    classes = [None if manifests[k].added_snapshot_id == writing.version else _size_class(manifests[k]) for k in keys]
    for size in sorted({c for c in classes if c is not None}):
        run = _oldest_run(classes, size)
        if run is None:
            continue
        merged = keys[run[0]:run[1]]
        inputs = [manifests[k] for k in merged]
        for key in merged[1:]:
            del manifests[key]
        live = _in_group(rows, sorted({*manifests, writing.version}), merged[0], writing.base)
        manifest = writing.merged(merged[0], inputs, live)
        if manifest is None:
            entries = writing.builder.entries(live, ManifestEntryStatus.EXISTING, writing.version, writing.base,
                                              writing.known(inputs))
            manifest = writing.manifest(merged[0], entries)
        manifests[merged[0]] = manifest
        return


def _nothing_read(manifest: ManifestFile) -> Mapping[str, DataFile]:
    return {}


def _size_class(manifest: ManifestFile) -> int:
    """``floor(log(live entries, MERGE_FANOUT))``: merging manifests of one class makes a larger
    class once the run is MERGE_FANOUT long, so a file is rewritten about once a class."""
    entries, size = (manifest.added_files_count or 0) + (manifest.existing_files_count or 0), 0
    while entries >= MERGE_FANOUT:
        entries, size = entries // MERGE_FANOUT, size + 1
    return size


def _oldest_run(classes: list[int | None], size: int) -> tuple[int, int] | None:
    """The first run (start, end) of at least two adjacent ``size`` classes, at most MERGE_FANOUT long."""
    start = 0
    while start < len(classes):
        end = start
        while end < len(classes) and classes[end] == size and end - start < MERGE_FANOUT:
            end += 1
        if end - start >= 2:
            return start, end
        start = end if end > start else start + 1
    return None


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


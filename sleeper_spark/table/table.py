"""A table: reads, writes and maintenance on top of its log head."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from sleeper_spark.commit import CommitResult, GroupCommit, TableHead
from sleeper_spark.datafiles.writer import DataFileWriter
from sleeper_spark.errors import ConfigError, NoSnapshotsError, SnapshotNotFoundError
from sleeper_spark.log import TableEntry
from sleeper_spark.models import AddFiles, FileRef, Snapshot, TableSchema, TruncateReport, VacuumReport, VerifyReport
from sleeper_spark.models.clustering import may_be_due
from sleeper_spark.state import TableState
from sleeper_spark.state.file_columns import public_view, with_event_time
from sleeper_spark.storage import ObjectStore
from sleeper_spark.table import changes, reading, schema_changes
from sleeper_spark.table.arrow_writes import write_arrow
from sleeper_spark.table.behind_commits import BehindCommits
from sleeper_spark.table.extensions import is_spark_dataframe, maintenance_jobs, spark_bridge
from sleeper_spark.table.publishing import TablePublishing
from sleeper_spark.table.writes import (
    ReplacedFiles,
    build_write,
    check_partial_overwrite,
    check_write_args,
    commit_staged,
    settle_staged,
)

if TYPE_CHECKING:
    from sleeper_spark.table.catalog import Catalog

ArrowData = Any  # a pyarrow Table, RecordBatch or RecordBatchReader


class Table:
    """One table of a catalog. Cheap to keep: it caches its state and only reads the log tail."""

    def __init__(self, catalog: Catalog, entry: TableEntry, head: TableHead, store: ObjectStore,
                 group_commit: GroupCommit | None = None) -> None:
        self.catalog = catalog
        self.entry = entry
        self.head = head
        self.store = store
        self.group_commit = group_commit  # set when the catalog's group_commit setting is on
        self.publishing = TablePublishing(self)  # Iceberg and Delta, behind the commits
        self.iceberg = self.publishing.iceberg
        self.delta = self.publishing.delta
        # Automatic compaction (compaction.auto), behind the commits; flush() waits for it.
        self.auto_compaction = BehindCommits(f"sleeper-compact-{entry.name}",
                                             lambda state, since: maintenance_jobs().compact_behind(self, state, since))
        if head.after_commit is None:
            head.after_commit = self._after_commit

    def __repr__(self) -> str:
        return f"Table({self.name!r}, id={self.table_id})"

    def _after_commit(self, state: TableState) -> None:
        """What follows each commit of this table in this process, each behind it on a thread of its
        own: publishing, and automatic compaction (see sleeper_spark.maintenance.auto_compaction)."""
        self.publishing.after_commit(state)
        if may_be_due(state.properties, len(state.files)):  # most commits of a small table wake nothing
            self.auto_compaction.hand(state)

    @property
    def name(self) -> str:
        """The table's name in its catalog."""
        return self.entry.name

    @property
    def table_id(self) -> str:
        """The immutable id chosen at creation; the log is keyed by it, so a re-created table starts afresh."""
        return self.entry.table_id

    @property
    def root(self) -> str:
        """The table's folder relative to the warehouse."""
        return self.entry.root

    @property
    def location(self) -> str:
        """The table's folder as a URI or path, e.g. ``s3://bucket/warehouse/events``; file paths are relative to it."""
        return self.store.uri(self.root)

    # -- state and history ---------------------------------------------------------------

    def state(self, version: int | None = None) -> TableState:
        """The folded table state, current or at ``version``; :class:`SnapshotNotFoundError` if unreachable."""
        return self.head.state() if version is None else self.head.state_at(version)

    @property
    def schema(self) -> pa.Schema:
        """The table's current schema as Arrow."""
        return self.state().schema.to_arrow()

    @property
    def partition_by(self) -> tuple[str, ...]:
        """The partition columns, in path order."""
        return self.state().partition_by

    def latest(self) -> Snapshot:
        """The newest snapshot; :class:`NoSnapshotsError` if nothing was ever written."""
        latest = self.state().latest
        if latest is None:
            raise NoSnapshotsError(f"table {self.name!r} has no data snapshot yet; write to it first")
        return latest

    def history(self) -> list[Snapshot]:
        """Every snapshot still in the log, oldest first; ``[]`` for a new table."""
        return list(self.state().history)

    def snapshot(self, version: int) -> Snapshot:
        """The snapshot with this version; :class:`SnapshotNotFoundError` if there is none."""
        snapshot = self.head.snapshot_at(version) if version >= 1 else None
        if snapshot is not None:
            return snapshot
        raise SnapshotNotFoundError(f"table {self.name!r} has no snapshot with version {version}")

    def version_at(self, timestamp: datetime) -> int:
        """The version that was current at ``timestamp`` (time travel by time)."""
        if timestamp.tzinfo is None:
            timestamp = timestamp.replace(tzinfo=timezone.utc)
        current = self.state().history.version_at(timestamp)
        if current is None:
            raise SnapshotNotFoundError(f"table {self.name!r} had no snapshot at {timestamp.isoformat()}")
        return current

    def resolve_version(self, version: int | None = None, timestamp: datetime | None = None) -> int | None:
        """The version a read by ``version`` or ``timestamp`` means (``None``: the latest), checked to exist."""
        if version is not None and timestamp is not None:
            raise ConfigError("give a version or a timestamp to time travel, not both")
        if timestamp is not None:
            return self.version_at(timestamp)
        if version is not None:
            self.snapshot(version)
        return version

    def files(self, version: int | None = None) -> list[FileRef]:
        """The data files of the current version, or of ``version`` (built from :meth:`files_table`)."""
        return self.state(version).files.values()

    def files_table(self, version: int | None = None) -> pa.Table:
        """The live files of the current version, or of ``version``, as Arrow: one row a file.

        Columns: ``path`` (relative to the table root), ``size_bytes``, ``row_count``,
        ``checksum``, ``added_version`` (the version that added the file; null if unknown),
        ``partition.<column>`` (string, nullable; the value as in the path) for each partition
        column, ``min.<column>`` / ``max.<column>`` (the column's own type; null = unknown) for
        each column of an orderable type, ``null_count.<column>`` (int64; null = no statistics)
        for each column, and ``min_event_time`` / ``max_event_time`` (the bounds of the
        ``event_time_column``; null when the table has none). See
        :mod:`sleeper_spark.state.file_columns`.
        """
        state = self.state(version)
        return with_event_time(public_view(state.files.table()), state.event_time_column, state.schema)

    # -- writing -------------------------------------------------------------------------

    def write(self, data: Any, mode: str = "append", metadata: Mapping[str, str] | None = None,
              app_id: str | None = None, app_version: int | None = None, merge_schema: bool = False,
              replace_where: str | None = None, partition_overwrite_mode: str | None = None) -> Snapshot:
        """Appends or overwrites with a Spark DataFrame or Arrow data; one snapshot per call.

        ``merge_schema=True``: columns the data has and the table lacks become (nullable) table
        columns in the same commit; older files read them as nulls.

        An overwrite replaces the whole table, or part of it: ``partition_overwrite_mode="dynamic"``
        replaces only the partitions the data has rows in (the whole table when it has no
        partitions); ``replace_where`` (a Spark SQL condition over partition columns, Spark
        DataFrames only) replaces the partitions it holds for, and every written row must be in
        one of them, else ``ConfigError`` and nothing is committed.
        """
        checked = check_write_args(mode, metadata, app_id, app_version)
        partial = check_partial_overwrite(mode, replace_where, partition_overwrite_mode)
        if is_spark_dataframe(data):
            return spark_bridge().write(self, data, mode, checked, app_id, app_version, merge_schema, partial)
        if partial is not None and partial.replace_where is not None:
            raise ConfigError("replace_where is a Spark SQL condition and needs a Spark DataFrame to write; with "
                              "Arrow data use partition_overwrite_mode='dynamic', or delete_where then append; "
                              "nothing was written")
        return write_arrow(self, data, mode, checked, app_id, app_version, merge_schema, partial).snapshot

    def data_file_writer(self, state: TableState | None = None) -> DataFileWriter:
        state = state or self.head.known_state()
        return DataFileWriter(self.store, self.root, state.schema, state.partition_by, self.name)

    def commit_files(self, files: Sequence[FileRef], mode: str, metadata: dict[str, str], write_id: str,
                     app_id: str | None = None, app_version: int | None = None,
                     merge: TableSchema | None = None, replaced: ReplacedFiles | None = None) -> CommitResult:
        """Commits files staged by any writer as one snapshot (the end of every write path).

        ``merge``: the data's schema, for a write with ``merge_schema``; ``replaced``: what a
        partial overwrite removes from each state it is tried on (see ``build_write``).
        """
        state = self.head.known_state()
        build = build_write(files, mode, metadata, write_id, app_id, app_version, state.event_time_column, state,
                            merge, replaced)
        group = self.group_commit
        if group is not None and mode == "append" and merge is None:
            # An append's transaction does not depend on the state it follows: built once, it
            # may ride in any version, alone or with other writers' appends.
            append = build(state)
            assert isinstance(append, AddFiles)
            return settle_staged(self.store, self.root, files, lambda: group.commit(append))
        return commit_staged(self.head, self.store, self.root, files, build)

    # -- reading -------------------------------------------------------------------------

    def scan(self, version: int | None = None, columns: Sequence[str] | None = None,
             filter: pc.Expression | None = None) -> pa.Table:
        """Reads the table (at ``version``) into Arrow, skipping files the filter rules out."""
        state = self.state(version)
        return reading.scan(self.store, self.root, reading.planned_files(state, filter), state.schema, columns, filter)

    def changes(self, starting_version: int | None = None, ending_version: int | None = None, *,
                starting_timestamp: datetime | None = None, ending_timestamp: datetime | None = None) -> pa.Table:
        """The rows versions ``starting_version..ending_version`` (both included; None: the latest)
        inserted and deleted, read with pyarrow from only the files those versions added or removed.

        Columns: the table's (as the last version has them) and ``_change_type`` (``insert`` or
        ``delete``; an update is both), ``_commit_version``, ``_commit_timestamp``. Rows a rewrite
        only copied are not changes; compactions yield nothing. The timestamp forms select the
        versions committed in that time range instead. See :mod:`sleeper_spark.table.changes`.
        """
        plan = changes.plan_of(self, starting_version, ending_version, starting_timestamp, ending_timestamp)
        return changes.read_changes(self, plan)

    def read_changes(self, spark: Any, starting_version: int | None = None, ending_version: int | None = None, *,
                     starting_timestamp: datetime | None = None, ending_timestamp: datetime | None = None) -> Any:
        """The rows of :meth:`changes` as a Spark DataFrame, read with Spark's own Parquet reader
        (``_commit_timestamp`` a Spark timestamp). See :mod:`sleeper_spark.spark.changes`."""
        plan = changes.plan_of(self, starting_version, ending_version, starting_timestamp, ending_timestamp)
        return spark_bridge().changes(self, spark, plan)

    def read(self, spark: Any, version: int | None = None, timestamp: datetime | None = None) -> Any:
        """The table as a Spark DataFrame (at a version or a time)."""
        return spark_bridge().read(self, spark, version, timestamp)

    def create_temp_view(self, spark: Any, name: str | None = None, version: int | None = None) -> str:
        """Registers the table (at ``version``) as a temporary view for ``spark.sql``; returns its name.

        The default name is the table's, with every character but letters, digits and ``_``
        replaced by ``_`` (a view name is one SQL identifier).
        """
        view = name or re.sub(r"[^A-Za-z0-9_]", "_", self.name)
        self.read(spark, version=version).createOrReplaceTempView(view)
        return view

    def iceberg_metadata(self, version: int | None = None) -> str:
        """The URI of the Iceberg metadata JSON of ``version`` (default: the newest), for engines that
        read Iceberg (docs/interop.md); it is published first if missing, whether or not the table
        publishes after each commit. Needs ``sleeper-spark[iceberg]``."""
        return self.iceberg.metadata_location(version)

    def publish_iceberg(self, rebuild: bool = False) -> int:
        """Publishes every version not yet published as Iceberg metadata (``rebuild``: every version
        still in the log, afresh) and commits the newest to the catalog's ``iceberg_catalog`` if it
        names one; returns the newest published version."""
        return self.iceberg.publish(rebuild=rebuild)

    def delta_location(self) -> str:
        """The table's location, which Delta readers open (its ``_delta_log`` is beside the data;
        docs/interop.md); publishes what is not yet published first, whether or not the table
        publishes after each commit."""
        self.delta.publish()
        return self.location

    def publish_delta(self, rebuild: bool = False) -> int:
        """Publishes every version not yet published to the table's Delta log (``rebuild``: every
        version still in the log, afresh); returns the newest published version."""
        return self.delta.publish(rebuild=rebuild)

    def verify(self, version: int | None = None, deep: bool = False) -> VerifyReport:
        """Checks that every referenced file exists with its size and checksum.

        ``deep=True`` also reads each file and recomputes its row count, partition values and
        column statistics, and reports a file whose recorded ones do not hold for its rows
        (problem ``"stats"``): pruning by them would skip rows. ``repair_statistics`` rewrites
        such files.
        """
        state = self.state(version)
        return reading.verify_files(self.store, self.root, list(state.files.values()), state.version,
                                    deep_schema=state.schema if deep else None)

    # -- changing rows -------------------------------------------------------------------

    def merge(self, source: Any, condition: str) -> Any:
        """``MERGE INTO`` this table from a Spark DataFrame: returns a builder; add ``when_...`` clauses,
        then ``.execute()`` commits one snapshot (operation ``"merge"``).

        ``condition`` and the clauses are Spark SQL over the aliases ``target`` and ``source``.
        Only files that may hold a matching key are read, only those whose rows change are
        rewritten. Two source rows matching one target row raise ``MergeCardinalityError``.
        """
        return spark_bridge().merge(self, source, condition)

    def update(self, spark: Any, set: Mapping[str, str], where: str | None = None) -> Snapshot:
        """``UPDATE``: ``set`` maps columns to Spark SQL expressions, applied to the rows ``where``
        (Spark SQL; None: every row) holds for. One snapshot, operation ``"update"``; only files
        with such rows are rewritten."""
        return spark_bridge().update(self, spark, set, where)

    # -- schema changes ------------------------------------------------------------------

    def add_columns(self, fields: Any) -> Snapshot:
        """Adds nullable columns after the existing ones (a ``pyarrow.Schema``, a list of
        ``pyarrow.Field`` or a Spark ``StructType``); older files read them as nulls.

        One snapshot, operation ``"schema"``; no file is rewritten. ``SchemaMismatchError`` for a
        name the table has, or had and dropped, or a non-nullable column.
        """
        return schema_changes.add_columns(self, fields)

    def widen_column(self, name: str, new_type: Any) -> Snapshot:
        """Widens a column: int8 -> int16 -> int32 -> int64, float32 -> float64, decimal(p, s) ->
        decimal(p', s) with p' > p; older files' values are cast as they are read."""
        return schema_changes.widen_column(self, name, new_type)

    def drop_column(self, name: str) -> Snapshot:
        """Removes a column from the schema: reads no longer show it, and older files keep its data.
        The name cannot be used again (the old files' values would come back)."""
        return schema_changes.drop_column(self, name)

    def set_properties(self, set: Mapping[str, str] | None = None, unset: Sequence[str] = ()) -> Snapshot:
        """Sets and removes table properties in one snapshot (operation ``"properties"``, no rows);
        ``t.state().properties`` holds them."""
        return schema_changes.set_properties(self, dict(set or {}), tuple(unset))

    def set_clustering(self, columns: Sequence[str] | None) -> Snapshot:
        """Clusters the table by ``columns`` (up to four) from its next compaction on; ``[]`` or None
        unclusters it. One snapshot, operation ``"properties"``; no file is rewritten."""
        return schema_changes.set_clustering(self, columns)

    # -- maintenance ---------------------------------------------------------------------

    def record_lost_transaction(self, number: int, reason: str = "damaged log entry") -> Snapshot:
        """Replaces log entry ``number``, which cannot be decoded, with a record that it was lost.

        The way out when a damaged entry blocks every read of the versions after it and no
        backup of it exists. What that transaction did is gone (the files it added stay on the
        store until vacuum); the history shows a ``repair`` snapshot at its version whose
        metadata names it. Refused for an entry that decodes.
        """
        return self.head.repair(number, reason)

    def create_state_snapshot(self) -> int:
        """Writes the current state as a state snapshot and moves the pointer to it; returns its number."""
        return self.head.create_state_snapshot()

    def compact(self, spark: Any = None, target_file_bytes: int = 128 * 2**20, where: Any = None) -> Snapshot | None:
        """Rewrites small files of each partition into files near ``target_file_bytes``; on a clustered
        table (:meth:`set_clustering`), lays out the files not yet clustered along the clustering curve."""
        return maintenance_jobs().compact(self, spark, target_file_bytes, where)

    def delete_where(self, spark: Any, predicate: Any) -> Snapshot:
        """Deletes the rows ``predicate`` is TRUE for (NULL and FALSE keep a row); one snapshot, operation
        ``"delete"``.

        A ``str`` is a Spark SQL condition (``DELETE FROM ... WHERE``; needs ``spark``): one over
        partition columns only drops the files of the partitions it holds for without reading a
        data file; any other reads the files it may select, dropping those it deletes every row
        of and rewriting those it deletes some rows of. A ``pyarrow.compute.Expression`` drops
        whole files where statistics prove every row matches, else rewrites (``spark`` may be None).
        """
        if isinstance(predicate, str):
            return spark_bridge().delete(self, spark, predicate)
        return maintenance_jobs().delete_where(self, spark, predicate)

    def restore(self, version: int) -> Snapshot:
        """A new snapshot whose files are exactly those of ``version``; nothing is copied.

        Operation ``"restore"``, metadata ``{"restored_version": "<version>"}``. Writes that land
        meanwhile are undone too. ``StorageError`` (and nothing committed) when vacuum has
        removed files of that version; ``SnapshotNotFoundError`` for a version the table never had.
        """
        if isinstance(version, bool) or not isinstance(version, int):
            raise ConfigError(f"restore takes a version number, not {version!r}")
        return maintenance_jobs().restore(self, version)

    def repair_statistics(self, spark: Any = None) -> Snapshot | None:
        """Rewrites the files whose recorded statistics ``verify(deep=True)`` finds false, in one
        ``compact`` snapshot (metadata ``{"repair": "statistics"}``); None when every file's hold."""
        return maintenance_jobs().repair_statistics(self, spark)

    def vacuum(self, older_than: timedelta = timedelta(hours=24), dry_run: bool = False) -> VacuumReport:
        """Deletes files no retained version needs and that are older than ``older_than``."""
        return maintenance_jobs().vacuum(self, older_than, dry_run)

    def truncate_log(self, keep_versions_after: timedelta | int = timedelta(hours=24), safety_margin: int = 10,
                     dry_run: bool = False) -> TruncateReport:
        """Deletes log transactions that a state snapshot covers and no version in the time-travel
        window needs (``keep_versions_after``: a ``timedelta``, or the first version to keep); the
        same as ``sleeper-spark truncate``. Versions below the cut can no longer be read."""
        return maintenance_jobs().truncate_log(self, keep_versions_after, safety_margin, dry_run)

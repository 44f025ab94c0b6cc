"""A table's data files as Iceberg manifest entries, built from the facts the log holds.

No data file is read: the path, size, row count, partition values and column statistics of each
file are in the table state's files table (:mod:`sleeper_spark.state.file_columns`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat, ManifestEntry, ManifestEntryStatus
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.transforms import IdentityTransform
from pyiceberg.typedef import Record

from sleeper_spark.errors import IcebergPublishError
from sleeper_spark.iceberg.bounds import MetricsEncoder, days_since_epoch, micros_since_epoch
from sleeper_spark.models import TableSchema
from sleeper_spark.state.file_columns import FileLayout

# Iceberg numbers partition fields from 1000 on, apart from the schema's field ids.
FIRST_PARTITION_FIELD_ID = 1000
_NONE_KNOWN: Mapping[str, DataFile] = {}


def partition_spec(partition_by: Sequence[str], ids: dict[str, int]) -> PartitionSpec:
    """Sleeper's partition columns as Iceberg identity partitions (spec 0: they never change)."""
    return PartitionSpec(*[
        PartitionField(source_id=ids[name], field_id=FIRST_PARTITION_FIELD_ID + i, transform=IdentityTransform(),
                       name=name)
        for i, name in enumerate(partition_by)
    ], spec_id=0)


class EntryBuilder:
    """Manifest entries for rows of a table state's files table (one row a file)."""

    def __init__(self, location: str, schema: TableSchema, ids: dict[str, int], partition_by: Sequence[str]) -> None:
        self._location = location.rstrip("/")
        self._schema = schema
        self._layout = FileLayout(schema, tuple(partition_by))
        self._partition_by = tuple(partition_by)
        self._metrics = MetricsEncoder(schema, ids, partition_by)

    def entries(self, rows: pa.Table, status: ManifestEntryStatus, snapshot_id: int, base: int,
                known: Mapping[str, DataFile] = _NONE_KNOWN) -> Iterator[ManifestEntry]:
        """``rows`` as entries of ``status``. An ``ADDED`` or ``DELETED`` entry belongs to
        ``snapshot_id``; an ``EXISTING`` one keeps the snapshot that added its file: the version in
        ``added_version``, or ``base`` (the first published version) for a file added before it.
        ``known`` holds data files already built, by path (read back from the manifest being
        rewritten: a file's facts never change), which are taken as they are when they count
        every column of this schema (one built under an older schema, or by a version that
        published fewer counts, is built again)."""
        if rows.num_rows == 0:
            return
        paths = [f"{self._location}/{path}" for path in rows.column("path").to_pylist()]
        counted = self._metrics.counted
        known = {path: data_file for path in paths if (data_file := known.get(path)) is not None
                 and counted.issubset(data_file.value_counts or ())}
        missing = [i for i, path in enumerate(paths) if path not in known]
        built = dict(zip([paths[i] for i in missing], self._data_files(rows.take(missing)), strict=True)) \
            if missing else {}
        added = rows.column("added_version").to_pylist()
        for i, path in enumerate(paths):
            data_file = known[path] if path in known else built[path]
            origin = base if added[i] is None else max(added[i], base)
            if status == ManifestEntryStatus.ADDED:
                yield ManifestEntry.from_args(status=status, snapshot_id=snapshot_id, sequence_number=None,
                                              file_sequence_number=None, data_file=data_file)
            else:
                owner = origin if status == ManifestEntryStatus.EXISTING else snapshot_id
                yield ManifestEntry.from_args(status=status, snapshot_id=owner, sequence_number=origin,
                                              file_sequence_number=origin, data_file=data_file)

    def _data_files(self, rows: pa.Table) -> list[DataFile]:
        rows = self._layout_rows(rows)
        partitions = self._partitions(rows)
        data_files = []
        for i, ref in enumerate(self._layout.file_refs(rows)):
            metrics = self._metrics.metrics(ref.column_stats, ref.row_count, ref.partition)
            data_files.append(DataFile.from_args(
                content=DataFileContent.DATA, file_path=f"{self._location}/{ref.path}", file_format=FileFormat.PARQUET,
                partition=partitions[i], record_count=ref.row_count, file_size_in_bytes=ref.size_bytes,
                value_counts=metrics.value_counts, null_value_counts=metrics.null_value_counts,
                nan_value_counts=metrics.nan_value_counts,
                lower_bounds=metrics.lower_bounds, upper_bounds=metrics.upper_bounds,
            ))
        return data_files

    def _layout_rows(self, rows: pa.Table) -> pa.Table:
        # Rows of an older state (removed files) may lack a column added since: conform them.
        conformed = [self._layout.conformed(batch) for batch in rows.to_batches()]
        return pa.Table.from_batches(conformed, schema=self._layout.arrow) if conformed else rows

    def _partitions(self, rows: pa.Table) -> list[Record]:
        columns = [_partition_values(rows.column(f"partition.{name}"), self._schema.field(name).type.name,
                                     self._layout.schema.to_arrow().field(name).type, name)
                   for name in self._partition_by]
        return [Record(*values) for values in zip(*columns, strict=True)] if columns else \
            [Record() for _ in range(rows.num_rows)]


def _partition_values(texts: pa.ChunkedArray, type_name: str, arrow_type: pa.DataType, column: str) -> list[Any]:
    """Partition values as recorded in the log (text) in Iceberg's representation of their type."""
    try:
        values = texts.to_pylist() if type_name == "string" else texts.cast(arrow_type).to_pylist()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
        raise IcebergPublishError(f"partition column {column!r}: a value does not read as {type_name} ({error}); "
                                  "the table cannot be published as Iceberg") from None
    return [_internal(value) for value in values]


def _internal(value: Any) -> Any:
    """A Python value as Iceberg's Avro files hold it: dates as days, timestamps as microseconds."""
    if isinstance(value, dt.datetime):
        return micros_since_epoch(value)
    if isinstance(value, dt.date):
        return days_since_epoch(value)
    return value

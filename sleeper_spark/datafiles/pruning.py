"""Skips data files that cannot hold rows matching a filter.

Each file gets a *guarantee*: an Arrow expression true for every row in it, built from its
partition values and its min/max statistics. Arrow's own expression simplifier then decides,
per file, whether the filter can be true under that guarantee — the same machinery
``pyarrow.dataset`` uses for Hive partitions — so no filter grammar is re-implemented here.
A column with some nulls gets no min/max guarantee (Arrow ignores disjunctions), which is
conservative: such files are read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs

from sleeper_spark.datafiles.stats import from_stat
from sleeper_spark.models import FileRef, TableSchema

_PRUNABLE = frozenset({"bool", "int8", "int16", "int32", "int64", "float32", "float64", "string", "date",
                       "timestamp", "decimal"})


def file_guarantee(file: FileRef, schema: TableSchema) -> pc.Expression:
    arrow_schema = schema.to_arrow()
    terms: list[pc.Expression] = []
    for column, value in file.partition.items():
        if column not in arrow_schema.names:
            continue
        field = pc.field(column)
        if value is None:
            terms.append(field.is_null())
        else:
            terms.append(field == _typed(value, arrow_schema.field(column).type))
    for column, stats in file.column_stats.items():
        if column in file.partition or column not in arrow_schema.names:
            continue
        type_ = schema.field(column).type
        if type_.name not in _PRUNABLE:
            continue
        field = pc.field(column)
        if stats.null_count == file.row_count and file.row_count > 0:
            terms.append(field.is_null())
            continue
        low, high = from_stat(stats.min, type_), from_stat(stats.max, type_)
        if stats.null_count or low is None or high is None:
            continue
        arrow_type = arrow_schema.field(column).type
        terms.append(field >= pa.scalar(low, arrow_type))
        terms.append(field <= pa.scalar(high, arrow_type))
    guarantee = pc.scalar(True)
    for term in terms:
        guarantee = guarantee & term
    return guarantee


def prune_files(files: Sequence[FileRef], schema: TableSchema, filter: pc.Expression | None) -> list[FileRef]:
    """The files that may hold rows matching ``filter`` (all of them when there is none)."""
    if filter is None or not files:
        return list(files)
    # Paths are placeholders: fragments are only simplified against their guarantees, never opened.
    dataset = ds.FileSystemDataset.from_paths(
        [f"/{index}" for index in range(len(files))],
        schema=schema.to_arrow(),
        format=ds.ParquetFileFormat(),
        filesystem=pafs.LocalFileSystem(),
        partitions=[file_guarantee(f, schema) for f in files],
    )
    kept = [int(fragment.path[1:]) for fragment in dataset.get_fragments(filter=filter)]
    return [files[index] for index in kept]


def _typed(value: str, arrow_type: pa.DataType) -> Any:
    """A partition value string back as a scalar of the column's type."""
    if pa.types.is_boolean(arrow_type):
        return pa.scalar(value == "true", arrow_type)
    return pa.scalar(value, pa.string()).cast(arrow_type)

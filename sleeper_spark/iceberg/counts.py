"""A data file's value, null and NaN counts as Iceberg metrics, published only where exact.

Some readers take a column missing from a data file's counts as holding no nulls (DuckDB before
1.5 prunes the file for ``IS NULL``, and for ``IS NOT NULL`` on a partition column), so every
count that is known exactly is published, for every top-level column:

* a partition column: its value is the file's partition value, so its nulls are none or every
  row (its values are not in the file; readers take them from the partition);
* a column the file lacks (the files table has no null count for it: every writer records one
  for each column of the schema it writes, so only a column added since lacks it): null in
  every row;
* any other column: the null count the log holds; a null count above the row count is a false
  stat, and the column gets no counts at all (readers would take it as all null).

A top-level column's value count is the file's row count (Iceberg counts nulls as values).
Nested columns are counted by their leaves, whose counts the log does not hold: only the leaves
of a struct that is null in every row (missing, or all null), through structs only, are known
(null in every row); list and map leaves are left out. The log records no NaN counts: a float
column gets one (zero) only where it is null in every row.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from sleeper_spark.models import ColumnStats, TableSchema
from sleeper_spark.models.schema import DataType

_FLOATS = ("float32", "float64")
_NESTED = ("list", "struct", "map")


@dataclass(frozen=True)
class FileCounts:
    """The counts of one Iceberg data file, keyed by field id."""

    value_counts: dict[int, int]
    null_value_counts: dict[int, int]
    nan_value_counts: dict[int, int]


@dataclass(frozen=True)
class _Leaf:
    field_id: int
    is_float: bool


@dataclass(frozen=True)
class _Column:
    name: str
    field_id: int
    is_float: bool
    partition: bool
    leaves: tuple[_Leaf, ...]  # of a struct column: its leaves through structs only; else empty
    nested: bool


class CountsEncoder:
    """Iceberg counts of data files of one schema (``ids`` maps field paths to field ids)."""

    def __init__(self, schema: TableSchema, ids: Mapping[str, int], partition_by: Sequence[str]) -> None:
        self._columns = [
            _Column(f.name, ids[f.name], f.type.name in _FLOATS, f.name in partition_by,
                    tuple(_struct_leaves(f.type, f.name, ids)), f.type.name in _NESTED)
            for f in schema.fields if f.name in ids
        ]
        # The ids every file of this schema is counted by, but for a file with a false stat.
        self.expected = frozenset(c.field_id for c in self._columns if not c.nested)

    def counts(self, stats: Mapping[str, ColumnStats], row_count: int,
               partition: Mapping[str, str | None]) -> FileCounts:
        """The counts of a file with ``row_count`` rows, these column statistics and partition values."""
        counts = FileCounts({}, {}, {})
        for column in self._columns:
            if column.partition:
                nulls = row_count if partition.get(column.name) is None else 0
            else:
                stat = stats.get(column.name)
                nulls = row_count if stat is None else stat.null_count
            if nulls > row_count:
                continue
            if column.nested:
                if nulls == row_count:  # the struct is null in every row, and so is each of its leaves
                    for leaf in column.leaves:
                        _count(counts, leaf.field_id, row_count, row_count, leaf.is_float)
                continue
            _count(counts, column.field_id, row_count, nulls, column.is_float)
        return counts


def _count(counts: FileCounts, field_id: int, values: int, nulls: int, is_float: bool) -> None:
    counts.value_counts[field_id] = values
    counts.null_value_counts[field_id] = nulls
    if is_float and nulls == values:  # no value at all, so no NaN
        counts.nan_value_counts[field_id] = 0


def _struct_leaves(data_type: DataType, path: str, ids: Mapping[str, int]) -> Iterator[_Leaf]:
    """The primitive fields below a struct, through structs only (a list's or map's leaves have
    one value per element, not per row)."""
    if data_type.name != "struct":
        return
    for child in data_type.fields or ():
        child_path = f"{path}.{child.name}"
        if child.type.name == "struct":
            yield from _struct_leaves(child.type, child_path, ids)
        elif child.type.name not in _NESTED and child_path in ids:
            yield _Leaf(ids[child_path], child.type.name in _FLOATS)

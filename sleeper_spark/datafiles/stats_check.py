"""Whether a file's recorded facts still describe its rows: the check behind ``verify(deep=True)``.

Pruning trusts a file's FileRef: a partition value is taken as the value of every row, the
min/max as bounds of every non-null, non-NaN value, the null count as exact. A FileRef that
promises less than the rows hold makes reads and deletes skip rows silently, so each promise is
recomputed here from the rows, the way the writers compute it
(:class:`~sleeper_spark.datafiles.stats.StatsAccumulator`), and compared. Bounds that are wider
than the rows, or unknown, promise nothing false and pass.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from sleeper_spark.datafiles.stats import StatsAccumulator, partition_value_to_string
from sleeper_spark.models import ColumnStats, FileRef, TableSchema
from sleeper_spark.models.stat_values import from_stat


def stats_mismatches(file: FileRef, rows: pa.Table, schema: TableSchema) -> list[str]:
    """What ``file`` records that ``rows`` (its data, in the table's schema) contradicts; [] if nothing."""
    found: list[str] = []
    if file.row_count != rows.num_rows:
        found.append(f"row count {file.row_count} recorded, {rows.num_rows} in the data")
    present = set(rows.column_names)  # each call of column_names builds a list of them all
    for column, value in file.partition.items():
        if column in present:
            held = sorted({str(partition_value_to_string(v)) for v in pc.unique(rows.column(column)).to_pylist()})
            if held != [str(value)]:
                found.append(f"partition {column}={value!r} recorded, the data holds {held[:5]}")
    checked = [name for name in file.column_stats if name in present]
    actual = StatsAccumulator(rows.select(checked).schema)
    actual.update(rows.select(checked))
    for name, computed in actual.result().items():
        found += _column_mismatches(name, file.column_stats[name], computed, schema)
    return found


def _column_mismatches(name: str, recorded: ColumnStats, actual: ColumnStats, schema: TableSchema) -> list[str]:
    type_ = schema.field(name).type  # the rows are in the table's schema, so every column is in it
    found = []
    if recorded.null_count != actual.null_count:
        found.append(f"{name}: null count {recorded.null_count} recorded, {actual.null_count} in the data")
    low, high = _value(recorded.min, type_), _value(recorded.max, type_)
    true_low, true_high = _value(actual.min, type_), _value(actual.max, type_)
    if low is not None and true_low is not None and low > true_low:
        found.append(f"{name}: min {recorded.min!r} recorded, the data holds {actual.min!r}")
    if high is not None and true_high is not None and high < true_high:
        found.append(f"{name}: max {recorded.max!r} recorded, the data holds {actual.max!r}")
    return found


def _value(stored: Any, type_: Any) -> Any:
    return None if stored is None else from_stat(stored, type_)

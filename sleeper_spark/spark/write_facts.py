"""FileRefs from the facts Spark's executors report about the files they wrote.

Each file of a helper's native write is written by the jar's ``FactsOutputWriter``, which counts
its rows, keeps each column's null count, min and max as the rows go by, and, once the file is
closed, reads it back in the same task for its size and SHA-256. The facts reach the driver
through an accumulator (Spark applies the updates of each successful task once), one JSON object
a file::

    {"name": "part-….parquet", "dir": "__sleeper_partition=…" or "", "rows": 10,
     "size": 1234 or null, "sha256": "…" or null,
     "columns": {"c": {"nulls": 0, "min": "<text>" or null, "max": "<text>" or null}, …}}

Bounds come as text (see the jar's ``ColumnFacts``) and are turned here into the values the
Python writer's :class:`~sleeper_spark.datafiles.stats.StatsAccumulator` would have computed, so
that statistics mean the same whichever writer made a file. A file reported without size and
checksum (a committer that publishes files only when the job commits) is the exception the
driver reads itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyarrow as pa

from sleeper_spark.datafiles.stats import partition_value_to_string
from sleeper_spark.errors import SchemaMismatchError
from sleeper_spark.models import ColumnStats, DataType, FileRef, TableSchema
from sleeper_spark.models.stat_values import to_stat

_INTEGERS = frozenset({"int8", "int16", "int32", "int64"})


@dataclass(frozen=True)
class FileFacts:
    """What a task reported about one file it wrote and committed."""

    path: str  # relative to the table root
    rows: int
    size: int | None
    sha256: str | None
    columns: dict[str, dict[str, Any]]

    @property
    def described(self) -> bool:
        """Whether the task could read the file back (else the driver must, for size and checksum)."""
        return self.size is not None and self.sha256 is not None


def parse_facts(lines: str, write_dir: str) -> Iterator[FileFacts]:
    """The facts of a write whose files are under ``write_dir`` (relative to the table root), one
    file at a time: the caller makes each FileRef before the next line is parsed, so that what is
    alive at once (and what Python's garbage collector walks) stays small."""
    for line in lines.splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        folder = f"{write_dir}/{record['dir']}" if record["dir"] else write_dir
        yield FileFacts(path=f"{folder}/{record['name']}", rows=int(record["rows"]), size=record["size"],
                        sha256=record["sha256"], columns=record["columns"])


class FileRefs:
    """Makes the FileRefs of one table's files from their tasks' facts."""

    def __init__(self, schema: TableSchema, partition_by: Iterable[str], table: str) -> None:
        self._columns = [(field.name, _stored_form(field.type)) for field in schema.fields]
        self._required = [field.name for field in schema.fields if not field.nullable]
        self._partition_by = tuple(partition_by)
        self._table = table

    def of(self, facts: FileFacts) -> FileRef:
        """The FileRef of a file its task described fully (see :attr:`FileFacts.described`)."""
        assert facts.size is not None and facts.sha256 is not None
        stats = {name: _column_stats(facts.columns[name], stored) for name, stored in self._columns}
        for name in self._required:
            if stats[name].null_count:
                raise SchemaMismatchError(
                    f"column {name!r} of table {self._table!r} is not nullable, but the data holds nulls; "
                    "nothing was written"
                )
        partition = {column: _partition_value(stats[column], facts.rows, column) for column in self._partition_by}
        # The statistics are models already, which pydantic does not validate again.
        return FileRef(path=facts.path, partition=partition, size_bytes=facts.size, row_count=facts.rows,
                       checksum=f"sha256:{facts.sha256}", column_stats=stats)


def _column_stats(reported: dict[str, Any], stored: Callable[[str], Any]) -> ColumnStats:
    low, high = reported.get("min"), reported.get("max")
    return ColumnStats(min=None if low is None else stored(low), max=None if high is None else stored(high),
                       null_count=int(reported["nulls"]))


def _stored_form(type_: DataType) -> Callable[[str], Any]:
    """How a bound reported as text becomes its stored form (see :func:`to_stat`) for ``type_``:
    the value pyarrow would give for the column's type, in ``to_stat``'s form."""
    name = type_.name
    if name == "bool":
        return lambda text: text == "true"
    if name in _INTEGERS:
        return int
    if name in ("float32", "float64"):
        return float
    if name == "string":
        return str
    if name == "date":
        return lambda text: to_stat(pa.scalar(int(text), pa.date32()).as_py())
    if name == "timestamp":  # microseconds, whatever the column's unit
        unit = pa.timestamp("us", tz=type_.tz)
        return lambda text: to_stat(pa.scalar(int(text), unit).as_py())
    if name == "decimal":
        return lambda text: to_stat(Decimal(text))
    return lambda text: None


def _partition_value(stats: ColumnStats, rows: int, column: str) -> str | None:
    """The one value a file of one partition holds in ``column``, as FileRef.partition records it."""
    if stats.null_count == rows:
        return None
    if stats.null_count or stats.min is None or stats.min != stats.max:
        raise SchemaMismatchError(f"a file Spark wrote for one partition holds several values of {column!r}")
    # The stored form of a statistic (an ISO string for a date) prints as the partition value does.
    return partition_value_to_string(stats.min)

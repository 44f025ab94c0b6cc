"""A table's layout properties: its clustering columns and how Spark writes spread its rows.

``clustering.columns`` holds a JSON list of column names (a name may hold a comma). It lives in
the log like any property: set at creation (``cluster_by=``), changed by ``t.set_clustering`` or
``ALTER TABLE ... CLUSTER BY``, and changing it rewrites nothing: the next compaction lays the
files out along the new columns. A property, not a new kind of transaction, so a reader of an
older release still reads the table.

A clustering compaction records the columns it clustered by in its snapshot's metadata (the
same two keys, ``clustering.columns`` and ``clustering.curve``); the files it added are the
clustered *runs* the next compaction leaves alone (:mod:`sleeper_spark.maintenance.clustering`).

``write.distribution`` says how a Spark write hands its rows to the tasks that write the files
(:mod:`sleeper_spark.spark.native.write_distribution`): ``none``, as they come (each task writes a
file for each partition value it holds); ``partition``, rows of one partition value to one task,
so a write makes about one file per partition value; ``clustered``, as ``partition`` and each
task's rows in curve order over the clustering columns, so new files are clustered from the start.

``compaction.auto`` (with ``compaction.auto.min_files`` and ``compaction.target_file_bytes``)
turns on automatic compaction (:mod:`sleeper_spark.maintenance.auto_compaction`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sleeper_spark.errors import ConfigError, SchemaMismatchError
from sleeper_spark.models.schema import TableSchema

CLUSTERING_COLUMNS = "clustering.columns"
CLUSTERING_CURVE = "clustering.curve"
CURVE = "hilbert"  # ADR 0015: Hilbert over Z-order
_UNORDERED_TYPES = frozenset({"list", "struct", "map"})
# Each added column thins the others' skipping (a file's box widens along every one of them);
# Delta's liquid clustering stops at four too.
MAX_CLUSTERING_COLUMNS = 4
WRITE_DISTRIBUTION = "write.distribution"
WRITE_DISTRIBUTIONS = ("none", "partition", "clustered")
AUTO_COMPACTION = "compaction.auto"
AUTO_COMPACTION_MIN_FILES = "compaction.auto.min_files"
COMPACTION_TARGET_FILE_BYTES = "compaction.target_file_bytes"
# A partition is compacted once it holds more small files than this: low enough that a table
# appended to in small batches keeps about this many live files per partition.
DEFAULT_AUTO_COMPACTION_MIN_FILES = 16


def clustering_columns(properties: Mapping[str, str]) -> tuple[str, ...]:
    """The clustering columns the properties name; empty for an unclustered table, and for a value
    this library did not write (treated as unclustered rather than failing reads)."""
    text = properties.get(CLUSTERING_COLUMNS)
    return (parse_clustering(text) or ()) if text else ()


def parse_clustering(text: str) -> tuple[str, ...] | None:
    """The column names a ``clustering.columns`` value lists, or None if it is not a JSON list of names."""
    try:
        columns = json.loads(text)
    except ValueError:
        return None
    if not isinstance(columns, list) or not all(isinstance(c, str) for c in columns):
        return None
    return tuple(columns)


def clustering_value(columns: Sequence[str]) -> str:
    """The property's stored text for ``columns``."""
    return json.dumps(list(columns), separators=(",", ":"))


def check_clustering(table: str, schema: TableSchema, partition_by: Sequence[str],
                     columns: Sequence[str]) -> tuple[str, ...]:
    """``columns`` as a tuple if they can cluster this table, else :class:`SchemaMismatchError`."""
    if isinstance(columns, str):
        raise SchemaMismatchError(f"table {table!r}: clustering columns are a list of names, e.g. [{columns!r}], "
                                  f"not the string {columns!r}")
    chosen = tuple(columns)
    for column in chosen:
        if column not in schema.names:
            raise SchemaMismatchError(f"table {table!r}: clustering column {column!r} is not in the schema "
                                      f"{list(schema.names)}")
        if column in partition_by:
            raise SchemaMismatchError(
                f"table {table!r}: {column!r} is a partition column; every file already holds one value of it, "
                "so clustering by it changes nothing: cluster by other columns")
        type_name = schema.field(column).type.name
        if type_name in _UNORDERED_TYPES:
            raise SchemaMismatchError(
                f"table {table!r}: cannot cluster by {column!r} of type {type_name}: its values have no order; "
                "cluster by a number, string, date, timestamp, decimal, boolean or binary column")
    if len(chosen) > MAX_CLUSTERING_COLUMNS:
        raise SchemaMismatchError(f"table {table!r}: at most {MAX_CLUSTERING_COLUMNS} clustering columns, not "
                                  f"{len(chosen)}: keep the columns queries filter on most")
    if len(set(chosen)) != len(chosen):
        raise SchemaMismatchError(f"table {table!r}: clustering columns repeat: {list(chosen)}")
    return chosen


def write_distribution(properties: Mapping[str, str]) -> str:
    """The table's ``write.distribution``: ``none`` when unset, and for a value this library did not
    write (a write never fails on it; setting one is checked by :func:`check_write_distribution`)."""
    value = properties.get(WRITE_DISTRIBUTION, "none").strip().lower()
    return value if value in WRITE_DISTRIBUTIONS else "none"


def check_write_distribution(table: str, properties: Mapping[str, str]) -> None:
    """:class:`ConfigError` when ``properties`` set ``write.distribution`` to a value it cannot take."""
    value = properties.get(WRITE_DISTRIBUTION)
    if value is not None and value.strip().lower() not in WRITE_DISTRIBUTIONS:
        raise ConfigError(f"table {table!r}: {WRITE_DISTRIBUTION} is one of {', '.join(WRITE_DISTRIBUTIONS)}, not "
                          f"{value!r}; e.g. t.set_properties({{'{WRITE_DISTRIBUTION}': 'partition'}})")


@dataclass(frozen=True)
class AutoCompaction:
    """A table's automatic compaction settings: compact a partition holding more than ``min_files``
    files under half of ``target_file_bytes``."""

    min_files: int
    target_file_bytes: int


def may_be_due(properties: Mapping[str, str], live_files: int) -> bool:
    """Whether a table of ``live_files`` files may hold a partition automatic compaction is due
    for: never while the whole table holds no more than ``min_files`` files."""
    settings = auto_compaction(properties, 1)
    return settings is not None and live_files > settings.min_files


def auto_compaction(properties: Mapping[str, str], default_target: int) -> AutoCompaction | None:
    """The settings when ``compaction.auto`` is true, else None. A number this library did not
    write takes its default (setting one is checked by :func:`check_auto_compaction`)."""
    if properties.get(AUTO_COMPACTION, "false").strip().lower() != "true":
        return None
    return AutoCompaction(_positive(properties.get(AUTO_COMPACTION_MIN_FILES)) or DEFAULT_AUTO_COMPACTION_MIN_FILES,
                          _positive(properties.get(COMPACTION_TARGET_FILE_BYTES)) or default_target)


def check_auto_compaction(table: str, properties: Mapping[str, str]) -> None:
    """:class:`ConfigError` when ``properties`` set a compaction property to a value it cannot take."""
    flag = properties.get(AUTO_COMPACTION)
    if flag is not None and flag.strip().lower() not in ("true", "false"):
        raise ConfigError(f"table {table!r}: {AUTO_COMPACTION} is true or false, not {flag!r}")
    for key in (AUTO_COMPACTION_MIN_FILES, COMPACTION_TARGET_FILE_BYTES):
        value = properties.get(key)
        if value is not None and _positive(value) is None:
            raise ConfigError(f"table {table!r}: {key} is a positive whole number, not {value!r}")


def _positive(text: str | None) -> int | None:
    try:
        value = int(text.strip()) if text is not None else 0
    except ValueError:
        return None
    return value if value > 0 else None

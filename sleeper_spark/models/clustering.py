"""A table's clustering columns: stored as one table property, checked against the schema.

``clustering.columns`` holds a JSON list of column names (a name may hold a comma). It lives in
the log like any property: set at creation (``cluster_by=``), changed by ``t.set_clustering`` or
``ALTER TABLE ... CLUSTER BY``, and changing it rewrites nothing: the next compaction lays the
files out along the new columns. A property, not a new kind of transaction, so a reader of an
older release still reads the table.

A clustering compaction records the columns it clustered by in its snapshot's metadata (the
same two keys, ``clustering.columns`` and ``clustering.curve``); the files it added are the
clustered *runs* the next compaction leaves alone (:mod:`sleeper_spark.maintenance.clustering`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from sleeper_spark.errors import SchemaMismatchError
from sleeper_spark.models.schema import TableSchema

CLUSTERING_COLUMNS = "clustering.columns"
CLUSTERING_CURVE = "clustering.curve"
CURVE = "hilbert"  # ADR 0015: Hilbert over Z-order
_UNORDERED_TYPES = frozenset({"list", "struct", "map"})
# Each added column thins the others' skipping (a file's box widens along every one of them);
# Delta's liquid clustering stops at four too.
MAX_CLUSTERING_COLUMNS = 4


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

"""A Delta checkpoint: one Parquet file holding a version's whole state, and ``_last_checkpoint``.

A reader opening a version reads the newest checkpoint at or below it and the commit files after
it, so with a checkpoint every :data:`CHECKPOINT_INTERVAL` versions opening the newest version
reads at most that many JSON files. The checkpoint holds the protocol, the metadata and an
``add`` for every live file, ordered by path; no ``remove`` tombstones (only Delta's own VACUUM
reads them, and sleeper's vacuum is the one that deletes this table's files).

The ``add`` rows stay Arrow from end to end, so a publisher continues a checkpoint from an
earlier one (:func:`read_checkpoint`) by dropping the rows of removed files and appending those
of added ones, not by building a row for every live file again.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sleeper_spark.delta.actions import Action, adds, commit_times, created, delta_path
from sleeper_spark.state import TableState

# Delta's own default interval (delta.checkpointInterval).
CHECKPOINT_INTERVAL = 10

_STRINGS = pa.map_(pa.string(), pa.string())
_SCHEMA = pa.schema([
    ("txn", pa.struct([("appId", pa.string()), ("version", pa.int64()), ("lastUpdated", pa.int64())])),
    ("add", pa.struct([("path", pa.string()), ("partitionValues", _STRINGS), ("size", pa.int64()),
                       ("modificationTime", pa.int64()), ("dataChange", pa.bool_()), ("stats", pa.string()),
                       ("tags", _STRINGS)])),
    ("remove", pa.struct([("path", pa.string()), ("deletionTimestamp", pa.int64()), ("dataChange", pa.bool_()),
                          ("extendedFileMetadata", pa.bool_()), ("partitionValues", _STRINGS),
                          ("size", pa.int64())])),
    ("metaData", pa.struct([("id", pa.string()), ("name", pa.string()), ("description", pa.string()),
                            ("format", pa.struct([("provider", pa.string()), ("options", _STRINGS)])),
                            ("schemaString", pa.string()), ("partitionColumns", pa.list_(pa.string())),
                            ("configuration", _STRINGS), ("createdTime", pa.int64())])),
    ("protocol", pa.struct([("minReaderVersion", pa.int32()), ("minWriterVersion", pa.int32()),
                            ("readerFeatures", pa.list_(pa.string())), ("writerFeatures", pa.list_(pa.string()))])),
])
_ADD = _SCHEMA.field("add").type
_MAPS = {"partitionValues", "tags", "options", "configuration"}


@dataclass(frozen=True)
class Checkpoint:
    """A checkpoint's contents: its protocol and metaData actions, and its ``add`` rows as Arrow."""

    head: list[Action]
    adds: pa.Array

    @property
    def size(self) -> int:
        """The number of actions (rows), as ``_last_checkpoint`` states it."""
        return len(self.head) + len(self.adds)

    def add_paths(self) -> pa.Array:
        return pc.struct_field(self.adds, "path")

    def actions(self) -> list[Action]:
        return [*self.head, *({"add": _without_maps(row)} for row in self.adds.to_pylist())]


def checkpoint_of(state: TableState, created_at: dt.datetime, previous: Checkpoint | None = None) -> Checkpoint:
    """The checkpoint of ``state``. Given ``previous``, a checkpoint of another version, the rows of
    the files both hold are taken from it if the two have the same schema and partitioning (which
    is all an ``add`` row depends on besides the file), and only the others are built."""
    head = created(state, created_at)
    files = state.files.table()
    times = commit_times(state)
    if previous is None or _shape(previous.head) != _shape(head):
        return Checkpoint(head, add_rows(adds(state, files, times, data_change=False)))
    paths = pa.array([delta_path(path) for path in files.column("path").to_pylist()], pa.string())
    old = previous.add_paths()
    kept = previous.adds.filter(pc.is_in(old, value_set=paths))
    new = files.filter(pc.invert(pc.is_in(paths, value_set=old)))
    return Checkpoint(head, pa.concat_arrays([kept, add_rows(adds(state, new, times, data_change=False))]))


def add_rows(actions: list[Action]) -> pa.Array:
    """``add`` actions as the Arrow rows of a checkpoint's ``add`` column."""
    return pa.array([_with_maps(action["add"]) for action in actions], type=_ADD)


def checkpoint_bytes(checkpoint: Checkpoint) -> bytes:
    """The Parquet file of ``checkpoint``: the protocol and metaData rows, then the adds ordered by path
    (so that a checkpoint continued from an earlier one and one built afresh are the same file)."""
    adds = checkpoint.adds.take(pc.sort_indices(checkpoint.add_paths()))
    columns: dict[str, pa.Array] = {}
    for name in _SCHEMA.names:
        kind = _SCHEMA.field(name).type
        head = pa.array([_with_maps(action[name]) if name in action else None for action in checkpoint.head],
                        type=kind)
        columns[name] = pa.concat_arrays([head, adds] if name == "add" else [head, pa.nulls(len(adds), kind)])
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table(columns, schema=_SCHEMA), sink, compression="snappy")
    data: bytes = sink.getvalue().to_pybytes()
    return data


def read_checkpoint(data: bytes) -> Checkpoint:
    """A checkpoint file as this module writes it (tombstone and txn rows, which it never writes, are not read)."""
    table = pq.read_table(pa.BufferReader(data), columns=["protocol", "metaData", "add"])
    head: list[Action] = []
    for kind in ("protocol", "metaData"):
        head.extend({kind: _without_maps(value)} for value in table.column(kind).to_pylist() if value is not None)
    adds = table.column("add").combine_chunks()
    return Checkpoint(head, adds.filter(pc.is_valid(adds)).cast(_ADD))


def _shape(head: list[Action]) -> list[Any]:
    return [(a["metaData"]["schemaString"], a["metaData"]["partitionColumns"]) for a in head if "metaData" in a]


def last_checkpoint_json(version: int, size: int) -> bytes:
    return json.dumps({"version": version, "size": size}).encode()


def _with_maps(body: dict[str, Any]) -> dict[str, Any]:
    """A JSON action as a Parquet row: its maps as lists of pairs, as pyarrow takes them."""
    return {key: (list(value.items()) if key in _MAPS and value is not None
                  else _with_maps(value) if isinstance(value, dict) else value)
            for key, value in body.items()}


def _without_maps(body: dict[str, Any]) -> dict[str, Any]:
    """A Parquet row as the JSON action it was: maps as objects, absent fields left out."""
    return {key: (dict(value) if key in _MAPS else _without_maps(value) if isinstance(value, dict) else value)
            for key, value in body.items() if value is not None}

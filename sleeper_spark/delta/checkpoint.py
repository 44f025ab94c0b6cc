"""A Delta checkpoint: one Parquet file holding a version's whole state, and ``_last_checkpoint``.

A reader opening a version reads the newest checkpoint at or below it and the commit files after
it, so with a checkpoint every :data:`CHECKPOINT_INTERVAL` versions opening the newest version
reads at most that many JSON files. The checkpoint holds the protocol, the metadata and an
``add`` for every live file; no ``remove`` tombstones (only Delta's own VACUUM reads them, and
sleeper's vacuum is the one that deletes this table's files).
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from sleeper_spark.delta.actions import Action

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
_MAPS = {"partitionValues", "tags", "options", "configuration"}


def checkpoint_bytes(actions: list[Action]) -> bytes:
    """The Parquet checkpoint of ``actions`` (protocol, metaData and add actions), one row each."""
    columns: dict[str, list[Any]] = {name: [None] * len(actions) for name in _SCHEMA.names}
    for row, action in enumerate(actions):
        (kind, body), = action.items()
        columns[kind][row] = _with_maps(body)
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table(columns, schema=_SCHEMA), sink, compression="snappy")
    data: bytes = sink.getvalue().to_pybytes()
    return data


def checkpoint_actions(data: bytes) -> list[Action]:
    """The protocol and metaData actions of a checkpoint (what a publisher continuing from it needs)."""
    table = pq.read_table(pa.BufferReader(data), columns=["protocol", "metaData"])
    found: list[Action] = []
    for kind in ("protocol", "metaData"):
        found.extend({kind: _without_maps(value)} for value in table.column(kind).to_pylist() if value is not None)
    return found


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

"""A TableState as one Parquet file.

One row per item — ``kind`` ``"file"`` (an active FileRef, ``key`` its path) or ``"snapshot"``
(a history entry) — with the item as JSON, plus a small JSON header in the file's key-value
metadata. JSON keeps the stored form the same as the log's (golden-tested); Parquet's zstd pages
keep it compact; and loading parses only the header, since the state keeps items as text.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pydantic import ValidationError

from sleeper_spark.errors import CorruptLogError
from sleeper_spark.models import TableSchema
from sleeper_spark.state import TableState
from sleeper_spark.state.collections import FileMap, SnapshotLog

FORMAT_VERSION = 1
_HEADER_KEY = b"sleeper.state"
_ROWS = pa.schema([("kind", pa.string()), ("key", pa.string()), ("item", pa.string())])


def encode_state(state: TableState) -> bytes:
    header: dict[str, Any] = {
        "format_version": FORMAT_VERSION,
        "table_id": state.table_id,
        "name": state.name,
        "version": state.version,
        "schema": state.schema.model_dump(mode="json", exclude_none=True),
        "partition_by": list(state.partition_by),
        "event_time_column": state.event_time_column,
        "properties": state.properties,
        "app_versions": state.app_versions,
    }
    files = list(state.files.raw_items())
    history = state.history.raw()
    table = pa.table(
        {
            "kind": ["file"] * len(files) + ["snapshot"] * len(history),
            "key": [path for path, _ in files] + [None] * len(history),
            "item": [item for _, item in files] + history,
        },
        schema=_ROWS,
    )
    table = table.replace_schema_metadata({_HEADER_KEY: json.dumps(header).encode()})
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue()


def decode_state(data: bytes, where: str) -> TableState:
    """Items stay JSON text (see :mod:`sleeper_spark.state.collections`); only the header is parsed."""
    try:
        table = pq.read_table(pa.BufferReader(data))
        header = json.loads(table.schema.metadata[_HEADER_KEY])
        if header["format_version"] != FORMAT_VERSION:
            raise ValueError(f"unknown state snapshot format {header['format_version']}")
        is_file = pc.equal(table.column("kind"), "file")
        files = table.filter(is_file)
        history = table.filter(pc.invert(is_file))
        return TableState(
            table_id=header["table_id"],
            name=header["name"],
            schema=TableSchema.model_validate(header["schema"]),
            partition_by=tuple(header["partition_by"]),
            event_time_column=header["event_time_column"],
            properties=dict(header["properties"]),
            files=FileMap(dict(zip(files.column("key").to_pylist(), files.column("item").to_pylist(), strict=True))),
            history=SnapshotLog(history.column("item").to_pylist()),
            app_versions={k: int(v) for k, v in header["app_versions"].items()},
            version=int(header["version"]),
        )
    except (pa.ArrowException, ValidationError, ValueError, KeyError, TypeError) as error:
        raise CorruptLogError(f"state snapshot {where} cannot be decoded: {str(error).splitlines()[0]}") from None

"""A TableState as one Parquet file.

One row per item — ``kind`` ``"file"`` (an active FileRef) or ``"snapshot"`` (a history
entry) — with the item as JSON, plus a small JSON header in the file's key-value metadata.
JSON keeps the stored form the same as the log's (golden-tested); Parquet's zstd pages keep it
compact, and decoding runs as one batched pydantic validation per kind.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import TypeAdapter, ValidationError

from sleeper_spark.errors import CorruptLogError
from sleeper_spark.models import FileRef, Snapshot, TableSchema
from sleeper_spark.state import TableState

FORMAT_VERSION = 1
_HEADER_KEY = b"sleeper.state"
_FILES = TypeAdapter(list[FileRef])
_SNAPSHOTS = TypeAdapter(list[Snapshot])
_ROWS = pa.schema([("kind", pa.string()), ("item", pa.string())])


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
    kinds = ["file"] * len(state.files) + ["snapshot"] * len(state.history)
    items = [f.model_dump_json(exclude_none=True) for f in state.files.values()]
    items += [s.model_dump_json(exclude_none=True) for s in state.history]
    table = pa.table({"kind": kinds, "item": items}, schema=_ROWS)
    table = table.replace_schema_metadata({_HEADER_KEY: json.dumps(header).encode()})
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue()


def decode_state(data: bytes, where: str) -> TableState:
    try:
        table = pq.read_table(pa.BufferReader(data))
        header = json.loads(table.schema.metadata[_HEADER_KEY])
        if header["format_version"] != FORMAT_VERSION:
            raise ValueError(f"unknown state snapshot format {header['format_version']}")
        kinds = table.column("kind").to_pylist()
        items = table.column("item").to_pylist()
        pairs = list(zip(kinds, items, strict=True))
        files = _FILES.validate_json(_array(item for kind, item in pairs if kind == "file"))
        history = _SNAPSHOTS.validate_json(_array(item for kind, item in pairs if kind == "snapshot"))
        return TableState(
            table_id=header["table_id"],
            name=header["name"],
            schema=TableSchema.model_validate(header["schema"]),
            partition_by=tuple(header["partition_by"]),
            event_time_column=header["event_time_column"],
            properties=dict(header["properties"]),
            files={f.path: f for f in files},
            history=history,
            app_versions={k: int(v) for k, v in header["app_versions"].items()},
            version=int(header["version"]),
        )
    except (pa.ArrowException, ValidationError, ValueError, KeyError, TypeError) as error:
        raise CorruptLogError(f"state snapshot {where} cannot be decoded: {str(error).splitlines()[0]}") from None


def _array(items: Any) -> str:
    return "[" + ",".join(items) + "]"

"""A TableState as one file: the stored form of state snapshots.

Format 2 (written now) holds the state's two Arrow tables as they are in memory, so a cold
open maps them in without a per-file step::

    b"SLSTATE2"                       8 bytes, the format's magic
    length of the files part          8 bytes, unsigned little-endian
    files part                        an Arrow IPC file: the files table (see
                                      sleeper_spark.state.file_columns); its schema metadata
                                      holds the JSON header under b"sleeper.state"
    history part                      an Arrow IPC file: the history table (see
                                      sleeper_spark.state.history)

Buffers are zstd-compressed: state snapshots travel over the network from S3, and the
decompression is cheaper than the bytes it saves.

Format 1 (written before) is a Parquet file with one JSON item per row (``kind`` ``"file"`` or
``"snapshot"``) and the header in its key-value metadata. It still opens, at the cost of
parsing every item; the next state snapshot is written in format 2.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pydantic import ValidationError

from sleeper_spark.errors import CorruptLogError
from sleeper_spark.models import FileRef, Snapshot, TableSchema
from sleeper_spark.state import FileLayout, FileSet, SnapshotLog, TableState
from sleeper_spark.storage.arrow_buffers import arrow_owned, arrow_reader

log = logging.getLogger(__name__)

FORMAT_VERSION = 2
MAGIC = b"SLSTATE2"
_HEADER_KEY = b"sleeper.state"
_PARQUET_MAGIC = b"PAR1"
_OPTIONS = pa.ipc.IpcWriteOptions(compression="zstd")


def encode_state(state: TableState) -> bytes:
    files = state.files.table().replace_schema_metadata({_HEADER_KEY: json.dumps(_header(state)).encode()})
    files_part = _ipc_file(files)
    return MAGIC + len(files_part).to_bytes(8, "little") + files_part + _ipc_file(state.history.table())


def decode_state(data: bytes, where: str) -> TableState:
    """The state stored in ``data`` (format 2, or the older format 1)."""
    try:
        if data[: len(MAGIC)] == MAGIC:
            return _decode_v2(data)
        if data[:4] == _PARQUET_MAGIC:
            return _decode_v1(data, where)
        raise ValueError("not a state snapshot of any known format (no known magic bytes)")
    except (pa.ArrowException, ValidationError, ValueError, KeyError, TypeError) as error:
        raise CorruptLogError(f"state snapshot {where} cannot be decoded: {str(error).splitlines()[0]}") from None


def _header(state: TableState) -> dict[str, Any]:
    return {
        "format_version": FORMAT_VERSION,
        "table_id": state.table_id,
        "name": state.name,
        "version": state.version,
        "schema": state.schema.model_dump(mode="json", exclude_none=True),
        "partition_by": list(state.partition_by),
        "event_time_column": state.event_time_column,
        "properties": dict(state.properties),
        "app_versions": dict(state.app_versions),
    }


def _ipc_file(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema, options=_OPTIONS) as writer:
        writer.write_table(table)
    data: bytes = sink.getvalue().to_pybytes()
    return data


def _read_ipc(buffer: pa.Buffer) -> pa.Table:
    return pa.ipc.open_file(buffer).read_all()


def _decode_v2(data: bytes) -> TableState:
    buffer = arrow_owned(data)
    start = len(MAGIC) + 8
    files_length = int.from_bytes(data[len(MAGIC): start], "little")
    files = _read_ipc(buffer.slice(start, files_length))
    history = _read_ipc(buffer.slice(start + files_length))
    header = json.loads((files.schema.metadata or {})[_HEADER_KEY])
    if header["format_version"] != FORMAT_VERSION:
        raise ValueError(f"header says format {header['format_version']}, the magic says {FORMAT_VERSION}")
    state = _from_header(header)
    return _with(state, FileSet.of_table(state.layout, files.replace_schema_metadata(None)),
                 SnapshotLog.of_table(history))


def _from_header(header: dict[str, Any]) -> TableState:
    return TableState(
        table_id=header["table_id"],
        name=header["name"],
        schema=TableSchema.model_validate(header["schema"]),
        partition_by=tuple(header["partition_by"]),
        event_time_column=header["event_time_column"],
        properties=dict(header["properties"]),
        app_versions={k: int(v) for k, v in header["app_versions"].items()},
        version=int(header["version"]),
    )


def _with(state: TableState, files: FileSet, history: SnapshotLog) -> TableState:
    return TableState(
        table_id=state.table_id, name=state.name, schema=state.schema, partition_by=state.partition_by,
        event_time_column=state.event_time_column, properties=state.properties, files=files, history=history,
        app_versions=state.app_versions, version=state.version,
    )


def _decode_v1(data: bytes, where: str) -> TableState:
    """Format 1: JSON items in Parquet rows. Parses every item, so it is slow for big tables."""
    table = pq.read_table(arrow_reader(data))
    header = json.loads(table.schema.metadata[_HEADER_KEY])
    if header["format_version"] != 1:
        raise ValueError(f"unknown state snapshot format {header['format_version']}")
    log.warning("state snapshot %s is in the old format 1; it is read item by item. Run "
                "table.create_state_snapshot() to write one in format %d", where, FORMAT_VERSION)
    is_file = pc.equal(table.column("kind"), "file")
    files = [FileRef.model_validate_json(item) for item in table.filter(is_file).column("item").to_pylist()]
    snapshots = [Snapshot.model_validate_json(item)
                 for item in table.filter(pc.invert(is_file)).column("item").to_pylist()]
    state = _from_header(header)
    # Format 1 did not record which version added a file: unknown (null).
    return _with(state, FileSet.of(FileLayout(state.schema, state.partition_by), files, None),
                 SnapshotLog.of(snapshots))

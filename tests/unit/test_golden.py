"""Golden files pin the stored form of every transaction type and of the state snapshot.

A change that alters a stored byte fails here: stored data outlives code. To accept a deliberate
change of format (with a migration), run with ``SLEEPER_UPDATE_GOLDEN=1`` and review the diff.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper_spark.log.state_codec import decode_state, encode_state
from sleeper_spark.models import (
    AddFiles,
    ColumnStats,
    CreateTable,
    DataType,
    Field,
    FileRef,
    ReplaceFiles,
    SetProperties,
    SetSchema,
    TableSchema,
    Transaction,
    decode_transaction,
    encode_transaction,
)
from sleeper_spark.state import fold

GOLDEN = Path(__file__).parents[1] / "golden"
AT = datetime(2024, 5, 17, 12, 30, 0, tzinfo=timezone.utc)
SCHEMA = TableSchema(fields=(
    Field(name="day", type=DataType(name="date"), nullable=False),
    Field(name="id", type=DataType(name="int64")),
    Field(name="at", type=DataType(name="timestamp", unit="us", tz="UTC")),
    Field(name="price", type=DataType(name="decimal", precision=10, scale=2)),
    Field(name="tags", type=DataType(name="list", element=Field(name="element", type=DataType(name="string")))),
))
FILE = FileRef(
    path="data/day=2024-05-17/0f8fad5bd9cb469fa16570867728950e.parquet",
    partition={"day": "2024-05-17"},
    size_bytes=4096,
    row_count=100,
    checksum="sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    column_stats={"id": ColumnStats(min=1, max=100, null_count=0),
                  "at": ColumnStats(min="2024-05-17T00:00:00+00:00", max="2024-05-17T23:59:59+00:00", null_count=2)},
)
COMMON = {"committed_at": AT, "metadata": {"job": "nightly"}}

EXAMPLES: dict[str, Transaction] = {
    "create_table": CreateTable(snapshot_id="s1", operation="create", write_id="w1", table_id="3f2c", name="events",
                                schema_=SCHEMA, partition_by=("day",), properties={"owner": "data"},
                                event_time_column="at", **COMMON),  # type: ignore[arg-type]
    "add_files": AddFiles(snapshot_id="s2", operation="append", write_id="w2", files=(FILE,), app_id="ingest",
                          app_version=7, min_event_time=AT, max_event_time=AT, **COMMON),  # type: ignore[arg-type]
    "replace_files": ReplaceFiles(snapshot_id="s3", parent_id="s2", operation="compact", write_id="w3",
                                  removed=(FILE.path,), added=(FILE.model_copy(update={"path": "data/x.parquet"}),),
                                  **COMMON),  # type: ignore[arg-type]
    "set_schema": SetSchema(snapshot_id="s4", parent_id="s3", operation="set-schema", write_id="w4",
                            schema_=TableSchema(fields=(*SCHEMA.fields, Field(name="note", type=DataType(name="string")))),
                            **COMMON),  # type: ignore[arg-type]
    "set_properties": SetProperties(snapshot_id="s5", parent_id="s4", operation="set-properties", write_id="w5",
                                    set={"retention": "7d"}, unset=("owner",), **COMMON),  # type: ignore[arg-type]
}


def _check(name: str, actual: str) -> None:
    path = GOLDEN / name
    if os.environ.get("SLEEPER_UPDATE_GOLDEN"):
        path.write_text(actual)
    assert path.exists(), f"golden file {path} is missing; run with SLEEPER_UPDATE_GOLDEN=1 once"
    assert actual == path.read_text(), f"the stored form of {name} changed"


@pytest.mark.parametrize("type_tag", sorted(EXAMPLES))
def test_each_transaction_type_keeps_its_stored_form(type_tag: str) -> None:
    txn = EXAMPLES[type_tag]
    assert txn.type == type_tag
    stored = json.dumps(json.loads(encode_transaction(txn)), indent=2, sort_keys=True) + "\n"
    _check(f"{type_tag}.json", stored)
    assert decode_transaction((GOLDEN / f"{type_tag}.json").read_text()) == txn


def test_the_state_snapshot_keeps_its_stored_form() -> None:
    state = fold([(1, EXAMPLES["create_table"]), (2, EXAMPLES["add_files"]), (3, EXAMPLES["replace_files"])])
    encoded = encode_state(state)
    table = pq.read_table(pa.BufferReader(encoded))
    header = json.loads(table.schema.metadata[b"sleeper.state"])
    rows = [{"kind": k, "key": key, "item": json.loads(i)} for k, key, i in zip(
        table.column("kind").to_pylist(), table.column("key").to_pylist(), table.column("item").to_pylist(), strict=True)]
    _check("state_snapshot.json", json.dumps({"header": header, "rows": rows}, indent=2, sort_keys=True) + "\n")
    assert decode_state(encoded, "golden") == state

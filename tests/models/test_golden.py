"""Golden files pin the stored form of every transaction type and of the state snapshot.

A change that alters a stored byte fails here: stored data outlives code. To accept a deliberate
change of format (with a migration), run with ``SLEEPER_UPDATE_GOLDEN=1`` and review the diff.
"""

from __future__ import annotations

import json
from datetime import date, datetime, timezone
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper_spark.errors import CorruptLogError
from sleeper_spark.log.codec import TransactionCodec
from sleeper_spark.log.state_codec import MAGIC, decode_state, encode_state
from sleeper_spark.models import (
    AddFiles,
    AppendGroup,
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
from sleeper_spark.models.pending import PendingBatch
from sleeper_spark.models.spill import SpillPointer
from sleeper_spark.state import TableState, apply, fold
from sleeper_spark.storage import LocalObjectStore
from tests.models.golden import GOLDEN, check_golden

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
    # A group commit: the proposer's own ids, each member a whole append of its own writer.
    "append_group": AppendGroup(
        snapshot_id="s6", parent_id="s5", operation="append", write_id="w6", committed_at=AT,
        members=(EXAMPLES_MEMBER := AddFiles(snapshot_id="m1", operation="append", write_id="wm1", files=(FILE,),
                                             app_id="ingest", app_version=8, committed_at=AT,
                                             metadata={"writer": "a"}),
                 AddFiles(snapshot_id="m2", operation="append", write_id="wm2",
                          files=(FILE.model_copy(update={"path": "data/y.parquet"}),), committed_at=AT))),
}


@pytest.mark.parametrize("type_tag", sorted(EXAMPLES))
def test_each_transaction_type_keeps_its_stored_form(type_tag: str) -> None:
    txn = EXAMPLES[type_tag]
    assert txn.type == type_tag
    stored = json.dumps(json.loads(encode_transaction(txn)), indent=2, sort_keys=True) + "\n"
    check_golden(f"{type_tag}.json", stored)
    assert decode_transaction((GOLDEN / f"{type_tag}.json").read_text()) == txn


def test_a_write_that_merges_its_schema_keeps_its_stored_form() -> None:
    # A merge_schema write carries the schema it sets; without one the field is left out, so
    # every transaction written before it existed decodes unchanged (the test above)
    merged = TableSchema(fields=(*SCHEMA.fields, Field(name="note", type=DataType(name="string"))))
    txn = EXAMPLES["add_files"].model_copy(update={"schema_": merged})
    stored = json.dumps(json.loads(encode_transaction(txn)), indent=2, sort_keys=True) + "\n"
    check_golden("add_files_merging_schema.json", stored)
    assert decode_transaction((GOLDEN / "add_files_merging_schema.json").read_text()) == txn
    assert "schema" not in json.loads(encode_transaction(EXAMPLES["add_files"]))


def test_a_pending_record_keeps_its_stored_form() -> None:
    # What a writer records for others to commit (group commit): read by other processes and versions
    record = PendingBatch(recorded_at=AT, after=41, members=(EXAMPLES_MEMBER,))
    stored = json.dumps(json.loads(record.encode()), indent=2, sort_keys=True) + "\n"
    check_golden("pending_batch.json", stored)
    assert PendingBatch.decode((GOLDEN / "pending_batch.json").read_bytes()) == record


def test_a_log_entry_of_a_newer_type_says_to_upgrade(tmp_path: Path) -> None:
    # Given a log entry of a transaction type this version does not know
    codec = TransactionCodec(LocalObjectStore(tmp_path), "t", "events")
    newer = json.dumps({"type": "append_batch_v9", "snapshot_id": "s"}).encode()
    # Then decoding it says a newer version wrote it, not that it is damaged
    with pytest.raises(CorruptLogError, match=r"newer version wrote it\. Upgrade") as raised:
        codec.decode(9, newer)
    assert "repair" not in str(raised.value).replace("do not repair it", "")


def test_a_state_snapshot_made_before_group_commit_still_opens() -> None:
    # Given the bytes of a state snapshot whose history has no members column
    state = _golden_state()
    stored = _without_history_column(encode_state(state), "members")
    # Then it decodes to the same state, every snapshot with no members
    decoded = decode_state(stored, "older")
    assert decoded == state and all(s.members == () for s in decoded.history)


def _plain(value: object) -> object:
    """A cell as JSON: dates, times and decimals as their ISO/str form."""
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    return value


def _described(table: pa.Table) -> dict[str, object]:
    return {"columns": [f"{f.name}: {f.type}" for f in table.schema],
            "rows": [{k: _plain(v) for k, v in row.items()} for row in table.to_pylist()]}


def _without_history_column(encoded: bytes, column: str) -> bytes:
    """A state snapshot's bytes as a version before ``column`` existed in its history wrote them."""
    files_length = int.from_bytes(encoded[8:16], "little")
    history = pa.ipc.open_file(pa.py_buffer(encoded[16 + files_length:])).read_all()
    sink = pa.BufferOutputStream()
    older = history.drop_columns([column])
    with pa.ipc.new_file(sink, older.schema) as writer:
        writer.write_table(older)
    return encoded[:16 + files_length] + sink.getvalue().to_pybytes()


def _golden_state() -> TableState:
    return fold([(1, EXAMPLES["create_table"]), (2, EXAMPLES["add_files"]), (3, EXAMPLES["replace_files"])])


def _golden_state_with_group() -> TableState:
    """The golden state and one version of a group commit, for the stored form of its members."""
    return apply(EXAMPLES["append_group"], _golden_state())


def test_the_state_snapshot_keeps_its_stored_form() -> None:
    # Given a state with a file, a replaced file, two history entries and a group commit's version
    state = _golden_state_with_group()
    # When it is encoded
    encoded = encode_state(state)
    # Then its two Arrow tables and header keep their layout and values
    assert encoded[:8] == MAGIC
    files_length = int.from_bytes(encoded[8:16], "little")
    files = pa.ipc.open_file(pa.py_buffer(encoded[16:16 + files_length])).read_all()
    history = pa.ipc.open_file(pa.py_buffer(encoded[16 + files_length:])).read_all()
    header = json.loads(files.schema.metadata[b"sleeper.state"])
    described = {"header": header, "files": _described(files.replace_schema_metadata(None)),
                 "history": _described(history)}
    check_golden("state_snapshot_v2.json", json.dumps(described, indent=2, sort_keys=True) + "\n")
    assert decode_state(encoded, "golden") == state


def test_a_state_snapshot_made_before_operation_metrics_still_opens() -> None:
    # Given the bytes of a state snapshot whose history has no operation_metrics column
    state = _golden_state()
    stored = _without_history_column(encode_state(state), "operation_metrics")
    # Then it decodes to the same state, every snapshot without metrics
    decoded = decode_state(stored, "older")
    assert decoded == state and all(s.operation_metrics == {} for s in decoded.history)


def test_a_format_1_state_snapshot_still_opens() -> None:
    # Given the bytes a format-1 writer made (JSON items in Parquet rows), rebuilt from its golden file
    stored = json.loads((GOLDEN / "state_snapshot_v1.json").read_text())
    rows = pa.table({"kind": [r["kind"] for r in stored["rows"]], "key": [r["key"] for r in stored["rows"]],
                     "item": [json.dumps(r["item"]) for r in stored["rows"]]})
    rows = rows.replace_schema_metadata({b"sleeper.state": json.dumps(stored["header"]).encode()})
    sink = pa.BufferOutputStream()
    pq.write_table(rows, sink)
    # When it is decoded
    restored = decode_state(sink.getvalue().to_pybytes(), "format 1")
    # Then it is the same state, except that it cannot say which version added each file
    expected = _golden_state()
    assert restored.files.values() == expected.files.values()
    assert list(restored.history) == list(expected.history)
    assert (restored.version, restored.app_versions, restored.properties) == (
        expected.version, expected.app_versions, expected.properties)
    assert restored.files.table().column("added_version").to_pylist() == [None]


def test_bytes_of_no_known_format_are_reported_as_a_damaged_state_snapshot() -> None:
    with pytest.raises(CorruptLogError, match="no known magic"):
        decode_state(b"something else entirely", "somewhere")


def test_the_spill_pointer_keeps_its_stored_form() -> None:
    # Given the entry that stands in for a spilled body
    pointer = SpillPointer(body="_log/bodies/ab12.json", checksum="sha256:ab12", parent_id="s2", committed_at=AT)
    # When it is encoded, Then its bytes are the released ones, and they read back as the same pointer
    stored = pointer.encode()
    check_golden("spill_pointer.json", stored.decode() + "\n")
    assert SpillPointer.decode((GOLDEN / "spill_pointer.json").read_bytes()) == pointer
    # Both forms released writers used are recognised; a transaction is not
    assert SpillPointer.is_pointer(stored)
    assert SpillPointer.is_pointer(json.dumps(json.loads(stored), separators=(",", ":")).encode())
    assert not SpillPointer.is_pointer(encode_transaction(EXAMPLES["add_files"]))

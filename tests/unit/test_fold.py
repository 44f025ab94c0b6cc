"""The fold: loading from any state snapshot plus the tail equals a full replay."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sleeper_spark.errors import CommitConflictError, CorruptLogError, SchemaMismatchError
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
)
from sleeper_spark.state import TableState, apply, fold, validate

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
SCHEMA = TableSchema(fields=(Field(name="day", type=DataType(name="string")), Field(name="x", type=DataType(name="int64"))))


def common(n: int) -> dict[str, object]:
    return {"snapshot_id": f"s{n}", "committed_at": T0 + timedelta(seconds=n), "write_id": f"w{n}"}


def create() -> CreateTable:
    return CreateTable(operation="create", table_id="t", name="events", schema_=SCHEMA, partition_by=("day",),
                       **common(1))  # type: ignore[arg-type]


def file(name: str, rows: int) -> FileRef:
    return FileRef(path=f"data/day=a/{name}.parquet", partition={"day": "a"}, size_bytes=100 + rows, row_count=rows,
                   checksum="sha256:00", column_stats={"x": ColumnStats(min=0, max=rows, null_count=0)})


# An operation is drawn as data, then turned into a valid transaction against the current state.
operations = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(1, 3), st.integers(1, 50)),
        st.tuples(st.just("replace"), st.integers(0, 3), st.integers(0, 2)),
        st.tuples(st.just("props"), st.sampled_from(["a", "b"]), st.booleans()),
        st.tuples(st.just("column"), st.integers(0, 0), st.integers(0, 0)),
        st.tuples(st.just("app"), st.sampled_from(["ingest", "backfill"]), st.integers(0, 20)),
    ),
    max_size=40,
)


def to_transactions(ops: list[tuple[object, ...]]) -> list[tuple[int, Transaction]]:
    state = fold([(1, create())])
    numbered: list[tuple[int, Transaction]] = [(1, create())]
    for index, op in enumerate(ops):
        n = state.version + 1
        kind = op[0]
        txn: Transaction
        if kind == "append":
            txn = AddFiles(operation="append", files=tuple(file(f"f{n}-{i}", int(op[2])) for i in range(int(op[1]))),
                           **common(n))  # type: ignore[arg-type]
        elif kind == "replace":
            removed = tuple(list(state.files)[: int(op[1])])
            txn = ReplaceFiles(operation="compact", removed=removed,
                               added=tuple(file(f"r{n}-{i}", 5) for i in range(int(op[2]))),
                               **common(n))  # type: ignore[arg-type]
        elif kind == "props":
            txn = SetProperties(operation="set-properties", set={str(op[1]): str(index)} if op[2] else {},
                                unset=() if op[2] else (str(op[1]),), **common(n))  # type: ignore[arg-type]
        elif kind == "column":
            new = Field(name=f"c{n}", type=DataType(name="int64"), nullable=True)
            txn = SetSchema(operation="set-schema", schema_=TableSchema(fields=(*state.schema.fields, new)),
                            **common(n))  # type: ignore[arg-type]
        else:
            txn = AddFiles(operation="append", files=(), app_id=str(op[1]), app_version=int(op[2]),
                           **common(n))  # type: ignore[arg-type]
        validate(txn, state)
        apply(txn, state)
        numbered.append((n, txn))
    return numbered


@settings(max_examples=60, deadline=None)
@given(operations, st.data())
def test_state_snapshot_plus_tail_equals_full_replay(ops: list[tuple[object, ...]], data: st.DataObject) -> None:
    # Given any sequence of valid transactions
    numbered = to_transactions(ops)
    full = fold(numbered)
    # When the state at a random point is stored as a state snapshot and the tail folded onto it
    cut = data.draw(st.integers(1, len(numbered)))
    prefix = fold(numbered[:cut])
    restored = decode_state(encode_state(prefix), "test")
    # Then the result equals the full replay, field by field
    assert restored == prefix
    assert fold(numbered[cut:], restored) == full


def test_history_links_each_snapshot_to_its_predecessor_by_the_transactions_parent() -> None:
    numbered = to_transactions([("append", 1, 1), ("append", 2, 2)])
    state = fold(numbered)
    assert [s.version for s in state.history] == [2, 3]
    assert state.history[1].rows_added == 4 and state.history[1].files_added == 2


def test_a_gap_in_the_log_is_reported_as_corruption() -> None:
    numbered = to_transactions([("append", 1, 1), ("append", 1, 1)])
    with pytest.raises(CorruptLogError, match="gap"):
        fold([numbered[0], numbered[2]])


def test_a_log_not_starting_with_create_table_is_corrupt() -> None:
    numbered = to_transactions([("append", 1, 1)])
    with pytest.raises(CorruptLogError):
        fold(numbered[1:])


def test_replacing_a_file_that_is_gone_conflicts() -> None:
    state: TableState = fold(to_transactions([("append", 1, 1)]))
    txn = ReplaceFiles(operation="compact", removed=("data/day=a/nope.parquet",), added=(), **common(3))  # type: ignore[arg-type]
    with pytest.raises(CommitConflictError):
        validate(txn, state)


def test_a_schema_change_may_only_add_nullable_columns() -> None:
    state = fold([(1, create())])
    dropped = SetSchema(operation="set-schema", schema_=TableSchema(fields=SCHEMA.fields[:1]), **common(2))  # type: ignore[arg-type]
    required = SetSchema(operation="set-schema", schema_=TableSchema(
        fields=(*SCHEMA.fields, Field(name="y", type=DataType(name="int64"), nullable=False))), **common(2))  # type: ignore[arg-type]
    for txn in (dropped, required):
        with pytest.raises(SchemaMismatchError):
            validate(txn, state)


def test_app_versions_keep_the_highest() -> None:
    state = fold(to_transactions([("app", "ingest", 5), ("app", "ingest", 2)]))
    assert state.app_versions == {"ingest": 5}

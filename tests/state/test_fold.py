"""The fold: loading from any state snapshot plus the tail equals a full replay."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sleeper_spark.errors import CommitConflictError, CorruptLogError, SchemaMismatchError
from sleeper_spark.log import InMemoryLogBackend
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
from sleeper_spark.state import TableState, apply, collections, fold, history, validate
from tests.fixtures.catalogs import EVENTS_SCHEMA, events, memory_catalog

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
        state = apply(txn, state)
        numbered.append((n, txn))
    return numbered


@settings(max_examples=60, deadline=None)
@given(operations, st.data())
def test_state_snapshot_plus_tail_equals_full_replay(ops: list[tuple[object, ...]], data: st.DataObject) -> None:
    # Given any sequence of valid transactions
    numbered = to_transactions(ops)
    full = fold(numbered)
    # When the state at a random point is stored as a state snapshot and the tail folded onto it
    # (with tiny tails, so that both sides hold Arrow batches as well as objects)
    cut = data.draw(st.integers(1, len(numbered)))
    with patch.object(collections, "TAIL_FILES", 4), patch.object(history, "TAIL_SNAPSHOTS", 3):
        prefix = fold(numbered[:cut])
        restored = decode_state(encode_state(prefix), "test")
        resumed = fold(numbered[cut:], restored)
    # Then the result equals the full replay, field by field
    assert restored == prefix
    assert resumed == full and resumed.files.values() == full.files.values()


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


def test_a_schema_change_must_leave_every_old_file_readable() -> None:
    state = fold([(1, create())])

    def change(*fields: Field) -> SetSchema:
        return SetSchema(operation="schema", schema_=TableSchema(fields=fields), **common(2))  # type: ignore[arg-type]

    day, x = SCHEMA.fields
    refused = [change(x),  # drops the partition column
               change(day, x, Field(name="y", type=DataType(name="int64"), nullable=False)),  # a required new column
               change(x, day),  # reorders
               change(day, Field(name="x", type=DataType(name="string")))]  # not a widening
    for txn in refused:
        with pytest.raises(SchemaMismatchError):
            validate(txn, state)
    # Dropping x is allowed; then its name is retired
    dropped = change(day)
    validate(dropped, state)
    after = fold([(2, dropped)], state)
    assert after.schema.names == ["day"] and after.files.layout.schema == after.schema
    with pytest.raises(SchemaMismatchError, match="was dropped earlier"):
        validate(SetSchema(operation="schema", schema_=SCHEMA, **common(3)), after)  # type: ignore[arg-type]


def test_app_versions_keep_the_highest() -> None:
    state = fold(to_transactions([("app", "ingest", 5), ("app", "ingest", 2)]))
    assert state.app_versions == {"ingest": 5}


# -- the columnar fold against a plain reference model -------------------------------------


def varied_file(name: str, rows: int) -> FileRef:
    """Files with and without statistics, with nulls, and with null partition values."""
    stats: dict[str, ColumnStats] = {}
    if rows % 3:
        stats["x"] = ColumnStats(min=-rows, max=rows, null_count=rows % 2)
    if rows % 4 == 1:
        stats["day"] = ColumnStats(min=None, max=None, null_count=rows)
    day = None if rows % 5 == 0 else f"d{rows % 7}"
    return FileRef(path=f"data/day={day}/{name}.parquet", partition={"day": day}, size_bytes=10 * rows,
                   row_count=rows, checksum=f"sha256:{rows:02x}", column_stats=stats)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["append", "replace", "app"]), st.integers(0, 4), st.integers(1, 40)),
                max_size=30))
def test_the_columnar_fold_agrees_with_a_dict_of_files(ops: list[tuple[str, int, int]]) -> None:
    # Given a reference model: files by path (in commit order) with the version that added each
    model: dict[str, tuple[FileRef, int]] = {}
    app_versions: dict[str, int] = {}
    numbered: list[tuple[int, Transaction]] = [(1, create())]
    for kind, count, rows in ops:
        n = len(numbered) + 1
        parent = f"s{n - 1}" if n > 2 and rows % 4 else (None if rows % 8 else "elsewhere")
        txn: Transaction
        if kind == "replace":
            removed = tuple(list(model)[:count])
            added = tuple(varied_file(f"r{n}-{i}", rows + i) for i in range(count % 3))
            txn = ReplaceFiles(operation="compact", removed=removed, added=added, parent_id=parent,
                               **common(n))  # type: ignore[arg-type]
            for path in removed:
                del model[path]
        else:
            added = tuple(varied_file(f"f{n}-{i}", rows + i) for i in range(count))
            app = {"app_id": "ingest", "app_version": rows} if kind == "app" else {}
            txn = AddFiles(operation="append", files=added, parent_id=parent, **app, **common(n))  # type: ignore[arg-type]
            if kind == "app":
                app_versions["ingest"] = max(rows, app_versions.get("ingest", rows))
        model.update({f.path: (f, n) for f in added})
        numbered.append((n, txn))
    # When the log is folded, with tiny tails so that files and history go through Arrow batches,
    # their merges and their filtering as much as through the tails
    with patch.object(collections, "TAIL_FILES", 3), patch.object(history, "TAIL_SNAPSHOTS", 2):
        state = fold(numbered)
        restored = decode_state(encode_state(state), "test")
    # Then the state holds exactly the model's files, in order, with the versions that added them
    assert state.files.values() == [f for f, _ in model.values()]
    assert state.files.table().column("added_version").to_pylist() == [v for _, v in model.values()]
    assert len(state.files) == len(model) and all(path in state.files for path in model)
    assert state.files.present(["data/day=x/none.parquet", *model]) == list(model)
    assert dict(state.app_versions) == app_versions
    assert [s.version for s in state.history] == [n for n, _ in numbered[1:]]
    assert [s.files_added for s in state.history] == [
        len(t.files) if isinstance(t, AddFiles) else len(t.added) for _, t in numbered[1:]  # type: ignore[union-attr]
    ]
    assert [s.parent_id for s in state.history] == [t.parent_id for _, t in numbered[1:]]
    assert restored == state and restored.files.values() == state.files.values()


def test_apply_leaves_the_state_it_was_given_unchanged() -> None:
    # Given a state, and copies of what a reader sees in it
    state = fold(to_transactions([("append", 2, 3), ("app", "ingest", 4)]))
    files, history, version, apps = state.files.values(), list(state.history), state.version, dict(state.app_versions)
    # When transactions of every kind are applied to it
    later = state
    for number, txn in to_transactions([("append", 2, 3), ("app", "ingest", 4), ("replace", 2, 1), ("props", "a", True),
                                        ("column", 0, 0), ("app", "backfill", 9)])[3:]:
        later = apply(txn.model_copy(update={"snapshot_id": f"n{number}"}), later)
    # Then the new state has moved on and the old one reads exactly as before
    assert later.version == version + 4 and later.files.values() != files
    assert state.files.values() == files and list(state.history) == history
    assert state.version == version and dict(state.app_versions) == apps and dict(state.properties) == {}
    assert state.schema == SCHEMA
    with pytest.raises(TypeError, match="never changed"):
        state.app_versions["ingest"] = 99  # type: ignore[index]


def test_a_state_handed_out_before_a_commit_is_unchanged_after_it(memory_backend: InMemoryLogBackend) -> None:
    # Given a table shared by two threads: a reader holding the current state
    table = memory_catalog(memory_backend).create_table("events", EVENTS_SCHEMA, partition_by=["day"])
    table.write(events(0, 0), app_id="ingest", app_version=1)
    held = table.state()
    files, history, apps = held.files.values(), list(held.history), dict(held.app_versions)
    version, table_files = held.version, held.files.table()
    # When another thread commits an append, an app's write and an overwrite through the same head
    def commit() -> None:
        table.write(events(1, 0))
        table.write(events(2, 0), app_id="ingest", app_version=2)
        table.write(events(3, 0), mode="overwrite")

    worker = threading.Thread(target=commit)
    worker.start()
    worker.join()
    # Then the held state still reads exactly as it did, while the table has moved on
    assert table.state().version == version + 3
    assert held.version == version and held.files.values() == files and list(held.history) == history
    assert dict(held.app_versions) == apps and held.files.table().equals(table_files)

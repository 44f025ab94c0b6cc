"""The rule a merge, update or delete commits under: what it read must still stand (table/isolation.py)."""

from __future__ import annotations

from datetime import datetime, timezone

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import sleeper_spark as ss
from sleeper_spark.log import InMemoryLogBackend
from sleeper_spark.models import FileRef, ReplaceFiles
from sleeper_spark.state import apply
from sleeper_spark.table.isolation import ReadSet, check_unchanged
from tests.fixtures.catalogs import memory_catalog

SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.string())])
T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def rows(ids: range, part: str = "a") -> pa.Table:
    return pa.table({"id": list(ids), "part": [part] * len(ids)}, schema=SCHEMA)


@pytest.fixture
def table(local_catalog: ss.Catalog) -> ss.Table:
    table = local_catalog.create_table("t", SCHEMA, partition_by=["part"])
    table.write(rows(range(0, 10)))
    table.write(rows(range(10, 20)))
    table.write(rows(range(0, 10), part="b"))
    return table


def read_of(table: ss.Table, rows_read: pc.Expression | None) -> ReadSet:
    state = table.state()
    return ReadSet(state.version, frozenset(f.path for f in table.files() if f.partition["part"] == "a"), rows_read)


def test_nothing_changed_or_appends_elsewhere_commit(table: ss.Table) -> None:
    read = read_of(table, (pc.field("part") == "a") & (pc.field("id") < 20))
    check_unchanged(read, table.state(), "merge")
    table.write(rows(range(50, 60)))  # partition a, but outside the ids read
    table.write(rows(range(0, 5), part="b"))  # ids read, but another partition
    check_unchanged(read, table.state(), "merge")


@pytest.mark.parametrize(("change", "message"), [
    (lambda t: t.write(rows(range(15, 16))), "added file"),  # an append into the key range read
    (lambda t: t.compact(), "were removed or rewritten"),  # a compaction of the files read
    (lambda t: t.delete_where(None, pc.field("id") == 3), "were removed or rewritten"),
    (lambda t: t.write(rows(range(0, 1), part="c"), mode="overwrite"), "were removed or rewritten"),
])
def test_a_change_to_what_was_read_is_a_conflict(table: ss.Table, change: object, message: str) -> None:
    read = read_of(table, (pc.field("part") == "a") & (pc.field("id") < 20))
    change(table)  # type: ignore[operator]
    with pytest.raises(ss.CommitConflictError, match=message):
        check_unchanged(read, table.state(), "merge")


def test_without_a_row_filter_any_append_is_a_conflict(table: ss.Table) -> None:
    read = read_of(table, None)
    table.write(rows(range(1000, 1001), part="z"))
    with pytest.raises(ss.CommitConflictError, match="added file"):
        check_unchanged(read, table.state(), "update")


def test_a_delete_racing_an_append_conflicts_only_where_it_read(memory_backend: InMemoryLogBackend) -> None:
    # Given a table with rows in partitions a and b, and a rival writer on the same in-memory log
    table = memory_catalog(memory_backend).create_table("t", SCHEMA, partition_by=["part"])
    table.write(rows(range(0, 10)))
    table.write(rows(range(0, 10), part="b"))
    rival = memory_catalog(memory_backend).table("t")
    log = memory_backend.logs[table.table_id]

    # When the rival appends into partition b while a delete of partition a's id 3 commits
    log.at_start_of_next_append(lambda: rival.write(rows(range(3, 4), part="b")))
    table.delete_where(None, (pc.field("part") == "a") & (pc.field("id") == 3))

    # Then both land: the append cannot hold a row the delete read
    assert sorted(r["id"] for r in table.scan().to_pylist() if r["part"] == "b") == sorted([*range(10), 3])
    assert 3 not in [r["id"] for r in table.scan().to_pylist() if r["part"] == "a"]

    # When the rival appends a row the next delete would have deleted, while it commits
    log.at_start_of_next_append(lambda: rival.write(rows(range(4, 5))))
    with pytest.raises(ss.CommitConflictError, match="added file"):
        table.delete_where(None, (pc.field("part") == "a") & (pc.field("id") == 4))

    # Then the delete committed nothing and both rows with id 4 in partition a are there
    assert [r["id"] for r in table.scan().to_pylist() if r["part"] == "a"].count(4) == 2


@pytest.mark.parametrize("tail", [1, 300, 700])
def test_the_files_added_since_a_version_are_those_the_whole_table_says(local_catalog: ss.Catalog,
                                                                        tail: int) -> None:
    # Given a state of many one-file commits, some files since removed (runs, then a tail)
    state = local_catalog.create_table("t", SCHEMA).state()
    for i in range(tail + 20):
        file = FileRef(path=f"data/f{i}.parquet", partition={}, size_bytes=10, row_count=1, checksum="sha256:00")
        removed = (f"data/f{i - 5}.parquet",) if i % 7 == 0 and i >= 5 else ()
        state = apply(ReplaceFiles(snapshot_id=f"s{i}", committed_at=T0, operation="merge", write_id=f"w{i}",
                                   removed=removed, added=(file,)), state)

    # Then for every version, the walk from the newest files finds what filtering every file finds
    whole = state.files.table()
    for version in (1, 2, state.version - tail // 2, state.version - 1, state.version):
        expected = whole.filter(pc.greater(whole.column("added_version"), version)).column("path").to_pylist()
        assert state.files.added_since(version).column("path").to_pylist() == expected

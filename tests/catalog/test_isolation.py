"""The rule a merge, update or delete commits under: what it read must still stand (table/isolation.py)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import sleeper_spark as ss
from sleeper_spark.table.isolation import ReadSet, check_unchanged

SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.string())])


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

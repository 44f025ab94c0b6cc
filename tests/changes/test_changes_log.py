"""A table's changes read with pyarrow (sleeper_spark/table/changes.py), no Spark: what each kind
of version yields, the multiset difference of a rewrite's rows, and the ranges the log can and
cannot answer."""

from __future__ import annotations

import math
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import sleeper_spark as ss
from sleeper_spark.commit import utc_now
from sleeper_spark.log import InMemoryLogBackend
from sleeper_spark.maintenance import truncate_log
from sleeper_spark.models import AppendGroup
from sleeper_spark.table.changes import net_rows, plan_between, plan_changes, read_changes
from tests.fixtures.catalogs import EVENTS_SCHEMA, events, leave_pending, memory_catalog

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string()), ("value", pa.float64())])
# Truncation never cuts transactions younger than ten minutes; the truncation test looks from later on.
LATER = utc_now() + timedelta(hours=1)


def rows(*values: tuple[Any, ...]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, v, strict=True)) for v in values], SCHEMA)


def new_table(tmp_path: Path, partition_by: tuple[str, ...] = ("day",)) -> ss.Table:
    return ss.Catalog.local(str(tmp_path / "wh")).create_table("db.t", SCHEMA, partition_by=list(partition_by))


def changed(table: ss.Table, first: int, last: int | None = None) -> Counter[tuple[Any, ...]]:
    """The change rows of ``first..last`` as a multiset of (row values..., type, version)."""
    data = table.changes(first, last)
    names = [n for n in data.column_names if n != "_commit_timestamp"]
    return Counter(tuple(r[n] for n in names) for r in data.to_pylist())


def test_appends_are_inserts_with_their_version_and_commit_time(tmp_path: Path) -> None:
    table = new_table(tmp_path)
    first = table.write(rows((1, "a", 1.0), (2, "b", None)))
    second = table.write(rows((1, "a", 1.0)))  # the same row again: a second insert
    data = table.changes(2)
    assert changed(table, 2) == Counter({(1, "a", 1.0, "insert", 2): 1, (2, "b", None, "insert", 2): 1,
                                         (1, "a", 1.0, "insert", 3): 1})
    assert data.schema.names == [*SCHEMA.names, "_change_type", "_commit_version", "_commit_timestamp"]
    assert data.schema.field("_commit_timestamp").type == pa.timestamp("us", tz="UTC")
    stamps = dict(zip(data.column("_commit_version").to_pylist(), data.column("_commit_timestamp").to_pylist(),
                      strict=True))
    assert (stamps[2], stamps[3]) == (first.committed_at, second.committed_at)
    # The table's creation (version 1) changes no row
    assert table.changes(1, 1).num_rows == 0 and changed(table, 1) == changed(table, 2)


def test_a_group_commit_is_an_insert_of_every_member(tmp_path: Path, memory_backend: InMemoryLogBackend) -> None:
    # Given two writers that each lose their solo attempts, record their appends and die, and a
    # writer that commits what they left pending in one group version
    table = memory_catalog(memory_backend, group_commit=True).create_table("events", EVENTS_SCHEMA)
    table.write(events(0, 0))
    leave_pending(memory_backend, "events", [events(1, 0, rows=3), events(2, 0, rows=4)],
                  lambda writer, attempt: events(11 + writer, attempt, rows=1))
    assert table.group_commit is not None
    group = table.group_commit.commit_pending()
    assert group is not None and len(group.members) == 2
    entry = memory_backend.logs[table.table_id].read_one(group.version)
    assert entry is not None and isinstance(table.head.codec.decode(group.version, entry.body), AppendGroup)
    # Then the group version's changes are every member's rows, as inserts of that version
    data = table.changes(group.version, group.version)
    assert set(data.column("_change_type").to_pylist()) == {"insert"}
    assert set(data.column("_commit_version").to_pylist()) == {group.version}
    assert Counter(data.column("writer").to_pylist()) == Counter({1: 3, 2: 4})


def test_an_overwrite_yields_only_the_rows_it_changed(tmp_path: Path) -> None:
    # Given rows in two partitions, then an overwrite that keeps one row, changes one and drops one
    table = new_table(tmp_path)
    table.write(rows((1, "a", 1.0), (2, "a", 2.0), (3, "b", 3.0)))
    over = table.write(rows((1, "a", 1.0), (2, "a", 20.0), (4, "c", None)), mode="overwrite")
    # Then the kept row is no change; the changed one is a delete and an insert
    assert changed(table, over.version) == Counter({
        (2, "a", 2.0, "delete", 3): 1, (3, "b", 3.0, "delete", 3): 1,
        (2, "a", 20.0, "insert", 3): 1, (4, "c", None, "insert", 3): 1})
    # And over the whole range, the net is the table as it is
    assert changed(table, 2) - Counter({(2, "a", 2.0, "delete", 3): 1, (3, "b", 3.0, "delete", 3): 1}) == Counter({
        (1, "a", 1.0, "insert", 2): 1, (2, "a", 2.0, "insert", 2): 1, (3, "b", 3.0, "insert", 2): 1,
        (2, "a", 20.0, "insert", 3): 1, (4, "c", None, "insert", 3): 1})


def test_an_overwrite_of_an_empty_table_is_all_inserts(tmp_path: Path) -> None:
    table = new_table(tmp_path)
    over = table.write(rows((1, "a", 1.0), (1, "a", 1.0)), mode="overwrite")
    plan = plan_changes(table, over.version, over.version)
    assert [(c.operation, c.compared, len(c.inserted)) for c in plan.versions] == [("overwrite", False, 1)]
    assert changed(table, over.version) == Counter({(1, "a", 1.0, "insert", over.version): 2})


def test_a_restore_yields_the_difference_it_makes(tmp_path: Path) -> None:
    table = new_table(tmp_path)
    table.write(rows((1, "a", 1.0), (2, "b", 2.0)))
    table.write(rows((3, "a", 3.0)))
    table.write(rows((1, "a", 1.0), (5, "b", 5.0)), mode="overwrite")
    restored = table.restore(3)
    assert restored.operation == "restore"
    assert changed(table, restored.version) == Counter({
        (5, "b", 5.0, "delete", 5): 1, (2, "b", 2.0, "insert", 5): 1, (3, "a", 3.0, "insert", 5): 1})


def test_a_file_removed_then_restored_then_removed_again_in_one_range(tmp_path: Path) -> None:
    # Given a file that version 3 removes, the restore of version 4 brings back and version 5 removes again
    table = new_table(tmp_path, partition_by=())
    table.write(rows((1, "a", 1.0)))
    table.write(rows((2, "a", 2.0)), mode="overwrite")
    table.restore(2)
    table.write(rows((3, "a", 3.0)), mode="overwrite")
    # Then every range starting at the first removal reads that file's rows at each step
    assert changed(table, 3, 5) == Counter({
        (1, "a", 1.0, "delete", 3): 1, (2, "a", 2.0, "insert", 3): 1, (2, "a", 2.0, "delete", 4): 1,
        (1, "a", 1.0, "insert", 4): 1, (1, "a", 1.0, "delete", 5): 1, (3, "a", 3.0, "insert", 5): 1})
    assert changed(table, 2, 5) == changed(table, 3, 5) + Counter({(1, "a", 1.0, "insert", 2): 1})


def test_a_compaction_yields_nothing(tmp_path: Path) -> None:
    table = new_table(tmp_path)
    for i in range(4):
        table.write(rows((i, "a", float(i))))
    compacted = table.compact()
    assert compacted is not None and compacted.operation == "compact" and compacted.files_removed == 4
    assert plan_changes(table, compacted.version).empty
    assert table.changes(compacted.version).num_rows == 0
    # And an overwrite after it compares against the compacted file: the kept rows are no change
    over = table.write(rows((0, "a", 0.0), (1, "a", 1.0), (2, "a", 2.0)), mode="overwrite")
    assert changed(table, compacted.version) == Counter({(3, "a", 3.0, "delete", over.version): 1})


def test_a_column_added_mid_range_reads_null_in_older_rows(tmp_path: Path) -> None:
    table = new_table(tmp_path)
    table.write(rows((1, "a", 1.0)))
    schema_change = table.add_columns([pa.field("note", pa.string())])
    table.write(pa.table({"id": [2], "day": ["b"], "value": [2.0], "note": ["new"]},
                         schema=pa.schema([*SCHEMA, pa.field("note", pa.string())])))
    assert plan_changes(table, schema_change.version, schema_change.version).empty
    data = table.changes(2)
    assert data.schema.names[:4] == ["id", "day", "value", "note"]
    assert sorted((r["id"], r["note"], r["_commit_version"]) for r in data.to_pylist()) == [(1, None, 2), (2, "new", 4)]
    # And a range that ends before the column existed reads the schema of its last version
    assert table.changes(2, 2).schema.names[:3] == SCHEMA.names and "note" not in table.changes(2, 2).schema.names


def pairs(data: pa.Table) -> Counter[str]:
    """Rows as text that tells -0.0 from 0.0 and matches NaN with NaN."""
    return Counter(repr(tuple(_float_text(v) for v in row.values())) for row in data.to_pylist())


def _float_text(value: Any) -> Any:
    if isinstance(value, float):
        return "nan" if math.isnan(value) else repr(value)  # repr(-0.0) is '-0.0'
    return value


def test_net_rows_counts_duplicates_nulls_nan_and_the_sign_of_zero() -> None:
    schema = pa.schema([("k", pa.string()), ("x", pa.float64()), ("f", pa.float32())])
    removed = pa.table({"k": ["a", "a", "a", None, "n", "z", "z"],
                        "x": [1.0, 1.0, 1.0, None, math.nan, 0.0, 0.0],
                        "f": [1.0, 1.0, 1.0, None, math.nan, 0.0, -0.0]}, schema=schema)
    added = pa.table({"k": ["a", None, None, "n", "z", "z", "b"],
                      "x": [1.0, None, None, math.nan, -0.0, 0.0, 2.0],
                      "f": [1.0, None, None, math.nan, 0.0, -0.0, None]}, schema=schema)
    deleted, inserted = net_rows(removed, added)
    # Two of three copies of ("a", 1, 1) are gone, a second null row came, the NaN row is kept,
    # and ("z", 0.0, 0.0) became ("z", -0.0, 0.0): a change, though the values compare equal
    assert pairs(deleted) == pairs(pa.table({"k": ["a", "a", "z"], "x": [1.0, 1.0, 0.0], "f": [1.0, 1.0, 0.0]},
                                            schema=schema))
    assert pairs(inserted) == pairs(pa.table({"k": [None, "z", "b"], "x": [None, -0.0, 2.0], "f": [None, 0.0, None]},
                                             schema=schema))
    signs = [math.copysign(1.0, v) for v in inserted.column("x").to_pylist() if v == 0.0]
    assert signs == [-1.0]
    # And either side empty is returned as it is
    assert net_rows(removed, added.slice(0, 0)) == (removed, added.slice(0, 0))


def test_net_rows_compares_nested_values() -> None:
    schema = pa.schema([("id", pa.int64()), ("s", pa.struct([("a", pa.int64()), ("b", pa.string())])),
                        ("l", pa.list_(pa.float64()))])
    removed = pa.Table.from_pylist([
        {"id": 1, "s": {"a": 1, "b": "x"}, "l": [1.0, 2.0]},
        {"id": 2, "s": {"a": 2, "b": None}, "l": None},
        {"id": 3, "s": None, "l": [0.0]},
    ], schema)
    added = pa.Table.from_pylist([
        {"id": 1, "s": {"a": 1, "b": "x"}, "l": [1.0, 2.0]},  # copied
        {"id": 2, "s": {"a": 2, "b": "y"}, "l": None},  # a field inside the struct changed
        {"id": 3, "s": None, "l": [-0.0]},  # the sign of a list element changed
    ], schema)
    deleted, inserted = net_rows(removed, added)
    assert deleted.column("id").to_pylist() == [2, 3] and inserted.column("id").to_pylist() == [2, 3]
    assert inserted.to_pylist()[0]["s"] == {"a": 2, "b": "y"}
    assert math.copysign(1.0, inserted.to_pylist()[1]["l"][0]) == -1.0


def test_a_value_from_zero_to_negative_zero_is_a_change_in_a_table(tmp_path: Path) -> None:
    table = new_table(tmp_path)
    table.write(rows((1, "a", 0.0), (2, "a", math.nan)))
    over = table.write(rows((1, "a", -0.0), (2, "a", math.nan)), mode="overwrite")
    data = table.changes(over.version)
    assert data.column("_change_type").to_pylist() == ["delete", "insert"]
    assert [math.copysign(1.0, v) for v in data.column("value").to_pylist()] == [1.0, -1.0]


def test_nested_columns_come_through_a_rewrite(tmp_path: Path) -> None:
    schema = pa.schema([("id", pa.int64()), ("tags", pa.list_(pa.string())),
                        ("point", pa.struct([("x", pa.float64()), ("y", pa.float64())]))])
    table = ss.Catalog.local(str(tmp_path / "wh")).create_table("nested", schema)
    table.write(pa.Table.from_pylist([{"id": 1, "tags": ["a"], "point": {"x": 1.0, "y": 2.0}},
                                      {"id": 2, "tags": None, "point": None}], schema))
    over = table.write(pa.Table.from_pylist([{"id": 1, "tags": ["a"], "point": {"x": 1.0, "y": 2.0}},
                                             {"id": 2, "tags": ["b", None], "point": {"x": None, "y": 0.0}}],
                                            schema), mode="overwrite")
    got = sorted((r["_change_type"], r["id"], r["tags"], r["point"]) for r in table.changes(over.version).to_pylist())
    assert got == [("delete", 2, None, None), ("insert", 2, ["b", None], {"x": None, "y": 0.0})]


def test_ranges_past_the_latest_or_backwards(tmp_path: Path) -> None:
    table = new_table(tmp_path)
    table.write(rows((1, "a", 1.0)))
    table.write(rows((2, "a", 2.0)))
    # A start after the latest version: no rows, with the columns a read would have
    empty = table.changes(4)
    assert empty.num_rows == 0 and empty.schema.names[-3:] == ["_change_type", "_commit_version", "_commit_timestamp"]
    with pytest.raises(ss.ConfigError, match="empty range"):
        table.changes(3, 2)
    with pytest.raises(ss.SnapshotNotFoundError, match="no version 4 yet"):
        table.changes(2, 4)
    with pytest.raises(ss.ConfigError, match="versions start at 1"):
        table.changes(0)
    with pytest.raises(ss.ConfigError, match="starting_version"):
        table.changes()
    assert changed(table, 3, 3) == Counter({(2, "a", 2.0, "insert", 3): 1})


def test_a_truncated_log_names_the_oldest_version_it_holds(tmp_path: Path) -> None:
    table = new_table(tmp_path)
    for i in range(6):
        table.write(rows((i, "a", float(i))))
    table.create_state_snapshot()  # at version 7
    table.write(rows((0, "a", 0.0), (9, "a", 9.0)), mode="overwrite")  # version 8
    report = truncate_log(table, now=LATER, keep_versions_after=timedelta(0), safety_margin=0)
    assert report.first_transaction == 8
    with pytest.raises(ss.SnapshotNotFoundError, match=r"version 3 is no longer in the log .*the oldest it holds is 8"):
        table.changes(3)
    with pytest.raises(ss.SnapshotNotFoundError, match="oldest it holds is 8"):
        table.changes(7, 8)
    # And the oldest version it holds compares its removed files through the state snapshot below it
    fresh = ss.Catalog.local(str(tmp_path / "wh")).table("db.t")
    assert changed(fresh, 8) == Counter({(9, "a", 9.0, "insert", 8): 1, **{(i, "a", float(i), "delete", 8): 1
                                                                          for i in range(1, 6)}})


def test_a_removed_file_vacuum_deleted_says_so(tmp_path: Path) -> None:
    table = new_table(tmp_path)
    table.write(rows((1, "a", 1.0)))
    over = table.write(rows((2, "a", 2.0)), mode="overwrite")
    assert table.vacuum(older_than=timedelta(0)).data_files_deleted == 1
    with pytest.raises(ss.SnapshotNotFoundError, match=f"version {over.version} .*vacuum"):
        table.changes(over.version)
    # The appends of a range need only their own files, which are still there
    later = table.write(rows((3, "b", 3.0)))
    assert changed(table, later.version) == Counter({(3, "b", 3.0, "insert", later.version): 1})


def test_timestamp_ranges_select_the_versions_committed_in_them(tmp_path: Path) -> None:
    table = new_table(tmp_path)
    snapshots = [table.write(rows((i, "a", float(i)))) for i in range(4)]  # versions 2..5
    times = [s.committed_at for s in snapshots]
    got = table.changes(starting_timestamp=times[1], ending_timestamp=times[2])
    assert sorted(set(got.column("_commit_version").to_pylist())) == [3, 4]
    assert sorted(set(table.changes(starting_timestamp=times[2]).column("_commit_version").to_pylist())) == [4, 5]
    # A naive datetime is UTC
    naive = times[3].astimezone(timezone.utc).replace(tzinfo=None)
    naive_plan = plan_between(table, naive, None)
    assert (naive_plan.first, naive_plan.last, [c.version for c in naive_plan.versions]) == (5, 5, [5])
    # Exclusive ends and a time after every commit
    assert plan_between(table, times[1], times[2], starting_inclusive=False, ending_inclusive=False).empty
    after = times[3] + timedelta(seconds=1)
    assert table.changes(starting_timestamp=after).num_rows == 0
    assert table.changes(starting_timestamp=datetime(2000, 1, 1, tzinfo=timezone.utc)).num_rows == 4
    with pytest.raises(ss.ConfigError, match="not both"):
        table.changes(2, starting_timestamp=times[0])


def test_the_plan_reads_only_the_files_of_versions_that_changed_rows(tmp_path: Path) -> None:
    table = new_table(tmp_path)
    table.write(rows((1, "a", 1.0), (2, "b", 2.0)))  # a file per partition
    table.set_properties({"owner": "x"})
    over = table.write(rows((3, "a", 3.0)), mode="overwrite", partition_overwrite_mode="dynamic")
    plan = plan_changes(table, 2)
    assert [(c.version, c.operation) for c in plan.versions] == [(2, "append"), (4, "overwrite")]
    assert len(plan.versions[0].inserted) == 2
    assert (len(plan.versions[1].removed), len(plan.versions[1].added)) == (over.files_removed, over.files_added) == (1, 1)
    assert plan.versions[1].removed[0].partition == {"day": "a"}
    assert read_changes(table, plan).num_rows == 4  # 2 inserts, then a delete and an insert

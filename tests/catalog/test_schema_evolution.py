"""Schema evolution: add, widen and drop columns, and writes that merge their schema, on every catalog kind.

Each read is checked against the rows as they were written (the truth), not against another
read path of ours; the Spark read paths are in tests/spark/test_schema_evolution_spark.py.
"""

from __future__ import annotations

import decimal

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import sleeper_spark as ss
from sleeper_spark.log import InMemoryLogBackend
from sleeper_spark.models import TableSchema
from sleeper_spark.models.schema_evolution import DROPPED_COLUMNS, check_evolution
from sleeper_spark.table.reading import planned_files
from tests.fixtures.catalogs import memory_catalog

SCHEMA = pa.schema([("day", pa.string()), ("id", pa.int32()), ("name", pa.string()), ("score", pa.float32()),
                    ("price", pa.decimal128(5, 2))])


def first_rows() -> pa.Table:
    return pa.table({"day": ["d1", "d1", "d2"], "id": pa.array([1, 2, 3], pa.int32()), "name": ["a", "b", "c"],
                     "score": pa.array([0.5, -1.5, 2.0], pa.float32()),
                     "price": pa.array([decimal.Decimal("1.25"), None, decimal.Decimal("-999.99")],
                                       pa.decimal128(5, 2))}, schema=SCHEMA)


def rows(table: ss.Table, version: int | None = None, **scan: object) -> list[dict[str, object]]:
    return sorted(table.scan(version=version, **scan).to_pylist(), key=lambda r: r["id"])  # type: ignore[arg-type]


def test_add_widen_and_drop_keep_every_row_readable(catalog: ss.Catalog) -> None:
    # Given a table with rows written under its first schema
    table = catalog.create_table("t", SCHEMA, partition_by=["day"])
    table.write(first_rows())

    # When a column is added, three are widened and one is dropped, with writes in between
    added = table.add_columns([pa.field("tag", pa.string())])
    table.write(pa.table({"day": ["d2"], "id": pa.array([4], pa.int32()), "name": ["d"],
                          "score": pa.array([4.5], pa.float32()),
                          "price": pa.array([decimal.Decimal("4.00")], pa.decimal128(5, 2)), "tag": ["t4"]}))
    table.widen_column("id", pa.int64())
    table.widen_column("score", "float64")
    table.widen_column("price", pa.decimal128(12, 2))
    dropped = table.drop_column("name")
    table.write(pa.table({"day": ["d3"], "id": [2**40], "score": [1e300],
                          "price": pa.array([decimal.Decimal("1234567890.12")], pa.decimal128(12, 2)),
                          "tag": ["t5"]}))

    # Then every row reads under the newest schema: nulls where a file lacked a column, values cast
    assert table.schema == pa.schema([("day", pa.string()), ("id", pa.int64()), ("score", pa.float64()),
                                      ("price", pa.decimal128(12, 2)), ("tag", pa.string())])
    assert rows(table) == [
        {"day": "d1", "id": 1, "score": 0.5, "price": decimal.Decimal("1.25"), "tag": None},
        {"day": "d1", "id": 2, "score": -1.5, "price": None, "tag": None},
        {"day": "d2", "id": 3, "score": 2.0, "price": decimal.Decimal("-999.99"), "tag": None},
        {"day": "d2", "id": 4, "score": 4.5, "price": decimal.Decimal("4.00"), "tag": "t4"},
        {"day": "d3", "id": 2**40, "score": 1e300, "price": decimal.Decimal("1234567890.12"), "tag": "t5"},
    ]
    # And each schema change is a snapshot of its own, with no rows, saying what it did
    history = table.history()
    assert [s.operation for s in history] == ["append", "schema", "append", "schema", "schema", "schema", "schema",
                                              "append"]
    assert (added.metadata, added.rows_added, added.files_added) == ({"added": "tag"}, 0, 0)
    assert dropped.metadata == {"dropped": "name"}
    assert history[3].metadata == {"widened": "id", "type": "int64"}
    # And time travel shows each version's schema and rows as they were
    assert table.state(added.version - 1).schema == TableSchema.from_arrow(SCHEMA)
    assert rows(table, version=added.version - 1) == sorted(first_rows().to_pylist(), key=lambda r: r["id"])
    assert "name" in table.scan(version=dropped.version - 1).column_names
    assert table.state().properties[DROPPED_COLUMNS] == '["name"]'
    assert table.verify().ok


def test_filters_on_evolved_columns_prune_and_match_the_rows(catalog: ss.Catalog) -> None:
    table = catalog.create_table("t", SCHEMA, partition_by=["day"])
    table.write(first_rows())
    table.add_columns(pa.schema([("tag", pa.string())]))
    table.widen_column("id", pa.int64())
    table.write(pa.table({"day": ["d9"], "id": [2**40], "name": ["z"], "score": pa.array([9.0], pa.float32()),
                          "price": pa.array([None], pa.decimal128(5, 2)), "tag": ["new"]}))
    state = table.state()

    # A file written before a column was added is all null in it: its statistics say so, and a
    # condition on the column skips it, while IS NULL keeps it
    old_files = [f for f in table.files_table().to_pylist() if f["partition.day"] != "d9"]
    assert old_files and all(f["null_count.tag"] == f["row_count"] for f in old_files)
    assert len(planned_files(state, pc.field("tag") == "new")) == 1
    assert [r["id"] for r in rows(table, filter=pc.field("tag") == "new")] == [2**40]
    assert [r["id"] for r in rows(table, filter=pc.field("tag").is_null())] == [1, 2, 3]
    # A widened column's old statistics still bound its values
    assert [r["id"] for r in rows(table, filter=pc.field("id") > 2**31)] == [2**40]
    assert [r["id"] for r in rows(table, filter=pc.field("id") <= 2)] == [1, 2]


@pytest.mark.parametrize(("change", "message"), [
    (lambda t: t.add_columns([pa.field("name", pa.string())]), "has a column 'name' already"),
    (lambda t: t.add_columns([pa.field("n", pa.int64(), nullable=False)]), "new column 'n' must be nullable"),
    (lambda t: t.widen_column("score", pa.int64()), "column 'score' cannot change from float to int64"),
    (lambda t: t.widen_column("id", pa.int16()), "column 'id' cannot change from int32 to int16"),
    (lambda t: t.widen_column("price", pa.decimal128(12, 3)), "cannot change from decimal128(5, 2)"),
    (lambda t: t.widen_column("day", pa.int64()), "partition or event-time column and keeps its type"),
    (lambda t: t.drop_column("day"), "partition or event-time column and cannot be dropped"),
    (lambda t: t.drop_column("nope"), "has no column 'nope'"),
    (lambda t: t.widen_column("id", "no-such-type"), "names no type"),
    (lambda t: t.widen_column("id", pa.int32()), "is int32 already"),
])
def test_a_change_that_would_break_old_files_is_refused(local_catalog: ss.Catalog, change: object,
                                                         message: str) -> None:
    table = local_catalog.create_table("t", SCHEMA, partition_by=["day"])
    table.write(first_rows())

    with pytest.raises(ss.SchemaMismatchError, match=message.replace("(", r"\(").replace(")", r"\)")):
        change(table)  # type: ignore[operator]

    assert table.latest().version == 2 and table.state().schema == TableSchema.from_arrow(SCHEMA)


def test_a_dropped_name_is_never_used_again(local_catalog: ss.Catalog) -> None:
    # Given a column dropped while old files still hold its values
    table = local_catalog.create_table("t", SCHEMA)
    table.write(first_rows())
    table.drop_column("name")

    # Then neither add_columns nor a merge_schema write may bring the name back
    with pytest.raises(ss.SchemaMismatchError, match="was dropped earlier"):
        table.add_columns([pa.field("name", pa.string())])
    comeback = first_rows().drop_columns(["name"]).append_column("name", pa.array(["x"] * 3))
    with pytest.raises(ss.SchemaMismatchError, match="was dropped earlier"):
        table.write(comeback, merge_schema=True)
    assert "name" not in table.scan().column_names
    assert len(table.files()) == 1  # the refused write's files were deleted


def test_a_merge_schema_write_adds_its_columns_in_its_own_commit(catalog: ss.Catalog) -> None:
    table = catalog.create_table("t", pa.schema([("id", pa.int64())]))
    table.write(pa.table({"id": [1, 2]}))
    wider = pa.table({"id": [3], "label": ["c"], "weight": [0.5]})

    with pytest.raises(ss.SchemaMismatchError, match="columns not in the table: 'label', 'weight'"):
        table.write(wider)
    snapshot = catalog.write(wider, "t", merge_schema=True)
    # The data may lack nullable columns when merging: they are written as nulls
    table.write(pa.table({"id": [4], "label": ["d"]}), merge_schema=True)

    assert (snapshot.operation, snapshot.version, snapshot.rows_added) == ("append", 3, 1)
    assert [s.operation for s in table.history()] == ["append", "append", "append"]
    assert table.state(2).schema.names == ["id"] and table.state(3).schema.names == ["id", "label", "weight"]
    assert rows(table) == [{"id": 1, "label": None, "weight": None}, {"id": 2, "label": None, "weight": None},
                           {"id": 3, "label": "c", "weight": 0.5}, {"id": 4, "label": "d", "weight": None}]
    with pytest.raises(ss.SchemaMismatchError, match="column 'label' is int64, the table has string"):
        table.write(pa.table({"id": [5], "label": [5]}), merge_schema=True)


def test_a_write_staged_before_a_schema_change_still_commits(memory_backend: InMemoryLogBackend) -> None:
    # Given files staged under the first schema, then a column added and another widened
    table = memory_catalog(memory_backend).create_table("t", SCHEMA)
    staged = table.data_file_writer().write_all([first_rows()])
    rival = memory_catalog(memory_backend).table("t")
    rival.add_columns([pa.field("tag", pa.string())])
    rival.widen_column("id", pa.int64())

    # When the staged files commit after both changes
    table.commit_files(staged, "append", {}, "w1")

    # Then they fit: they read as the new schema, the new column null
    assert [r["tag"] for r in rows(table)] == [None, None, None]
    assert [r["id"] for r in rows(table)] == [1, 2, 3] and table.schema.field("id").type == pa.int64()


def test_racing_merge_schema_writes_that_disagree_fail_the_loser_cleanly(memory_backend: InMemoryLogBackend) -> None:
    # Given a merge_schema write whose commit meets a rival's change giving its new column another type
    table = memory_catalog(memory_backend).create_table("t", pa.schema([("id", pa.int64())]))
    rival = memory_catalog(memory_backend).table("t")
    memory_backend.logs[table.table_id].at_start_of_next_append(
        lambda: rival.add_columns([pa.field("label", pa.int64())]))

    with pytest.raises(ss.SchemaMismatchError, match="column 'label' is string, the table has int64"):
        table.write(pa.table({"id": [1], "label": ["a"]}), merge_schema=True)

    assert table.state().schema.field("label").type.name == "int64" and table.files() == []
    assert not [o for o in memory_backend.store.list("t/") if o.key.endswith(".parquet")]  # staged file deleted


def test_an_evolved_state_survives_a_state_snapshot(local_catalog: ss.Catalog) -> None:
    table = local_catalog.create_table("t", SCHEMA)
    table.write(first_rows())
    table.add_columns([pa.field("tag", pa.string())])
    table.widen_column("id", pa.int64())
    table.drop_column("name")
    table.create_state_snapshot()

    reopened = ss.Catalog.local(local_catalog.config.warehouse).table("t")

    assert reopened.state() == table.state()
    assert rows(reopened) == rows(table)
    with pytest.raises(ss.SchemaMismatchError, match="was dropped earlier"):
        reopened.add_columns([pa.field("name", pa.string())])


def test_compaction_rewrites_old_files_under_the_new_schema(local_catalog: ss.Catalog) -> None:
    table = local_catalog.create_table("t", SCHEMA)
    table.write(first_rows())
    table.add_columns([pa.field("tag", pa.string())])
    table.widen_column("score", pa.float64())
    table.drop_column("name")
    table.write(pa.table({"day": ["d4"], "id": pa.array([4], pa.int32()), "score": [8.25],
                          "price": pa.array([None], pa.decimal128(5, 2)), "tag": ["x"]}))
    before = rows(table)

    table.compact()

    assert len(table.files()) == 1 and rows(table) == before
    assert table.verify(deep=True).ok


def test_the_rules_of_check_evolution() -> None:
    old = TableSchema.from_arrow(pa.schema([("a", pa.int8()), ("b", pa.float32()), ("c", pa.string())]))

    def new(*fields: pa.Field) -> TableSchema:
        return TableSchema.from_arrow(pa.schema(list(fields)))

    allowed = [new(pa.field("a", pa.int64()), pa.field("b", pa.float64()), pa.field("c", pa.string())),
               new(pa.field("a", pa.int8()), pa.field("c", pa.string()), pa.field("d", pa.int32())),
               new(pa.field("b", pa.float32()))]
    for schema in allowed:
        check_evolution(old, schema, "t")
    refused = [new(pa.field("b", pa.float32()), pa.field("a", pa.int8())),  # reordered
               new(pa.field("d", pa.int8()), pa.field("a", pa.int8())),  # a new column before an old one
               new(pa.field("a", pa.int8()), pa.field("b", pa.float32()), pa.field("c", pa.binary()))]
    for schema in refused:
        with pytest.raises(ss.SchemaMismatchError):
            check_evolution(old, schema, "t")
    with pytest.raises(ss.SchemaMismatchError, match="was dropped earlier"):
        check_evolution(old, new(pa.field("a", pa.int8()), pa.field("z", pa.int8())), "t", dropped=("z",))

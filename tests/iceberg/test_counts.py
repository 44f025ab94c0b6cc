"""Every data file's entry counts the values and nulls of every top-level column: readers that take a
missing count as "no nulls" (DuckDB before 1.5) would otherwise skip files for ``IS NULL``."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.manifest import DataFile, ManifestEntryStatus
from pyiceberg.table import StaticTable

import sleeper_spark as ss
from sleeper_spark.iceberg.counts import CountsEncoder
from sleeper_spark.iceberg.entries import EntryBuilder
from sleeper_spark.models import ColumnStats
from sleeper_spark.models.schema import DataType, Field, TableSchema

ROWS = pa.schema([("id", pa.int64()), ("day", pa.string()), ("v", pa.float64())])
INT = DataType(name="int32")
FLOAT = DataType(name="float64")


def entries_by_file(metadata: str) -> dict[str, tuple[dict[str, int], dict[str, int]]]:
    """Each live data file of the metadata's current snapshot (by file name): its value and null
    counts by column name."""
    static = StaticTable.from_metadata(metadata)
    names = {f.field_id: f.name for f in static.schema().fields}
    snapshot = static.current_snapshot()
    assert snapshot is not None
    found = {}
    for manifest in snapshot.manifests(PyArrowFileIO()):
        for entry in manifest.fetch_manifest_entry(PyArrowFileIO()):
            data_file = entry.data_file
            found[data_file.file_path.rsplit("/", 1)[1]] = (
                {names[k]: v for k, v in data_file.value_counts.items()},
                {names[k]: v for k, v in data_file.null_value_counts.items()})
    return found


def test_every_top_level_column_is_counted_by_its_rule(tmp_path: Path) -> None:
    # Given a table partitioned by day: a file of null days, one of day "a" with null values,
    # then a column added and a file that has it
    table = ss.Catalog.local(str(tmp_path / "wh"), iceberg_publish=True).create_table(
        "t", ROWS, partition_by=["day"])
    table.write(pa.table({"id": [1, 2, 3, 4, 5], "day": [None, None, "a", "a", "a"], "v": [1.0, None, None, 2.0, None]},
                         schema=ROWS))
    table.add_columns(pa.schema([("note", pa.string())]))
    table.write(pa.table({"id": [6, 7], "day": ["a", "a"], "v": [0.5, 0.5], "note": ["x", None]}))
    assert table.publishing.flush(timeout=60)
    expected = {
        # rows, day nulls (by its partition value), v nulls (from the log), note nulls (lacked: every row)
        "null": ({"id": 2, "day": 2, "v": 2, "note": 2}, {"id": 0, "day": 2, "v": 1, "note": 2}),
        "old a": ({"id": 3, "day": 3, "v": 3, "note": 3}, {"id": 0, "day": 0, "v": 2, "note": 3}),
        "new a": ({"id": 2, "day": 2, "v": 2, "note": 2}, {"id": 0, "day": 0, "v": 0, "note": 1}),
    }
    newest = table.latest().version
    old = {f.path.rsplit("/", 1)[1]: f for f in table.files(version=newest - 1)}
    for published in ("incrementally", "rebuilt"):
        if published == "rebuilt":
            table.publish_iceberg(rebuild=True)
        # Then each file's entry counts every column, in the version that added the column too
        # (the manifests written before it are written again)
        for version, files in ((newest - 1, 2), (newest, 3)):
            found = entries_by_file(table.iceberg_metadata(version))
            assert len(found) == files, (published, version)
            for name, counts in found.items():
                key = "new a" if name not in old else ("null" if old[name].partition["day"] is None else "old a")
                assert counts == expected[key], (published, version, key)


def test_a_struct_null_in_every_row_counts_its_leaves_and_other_nested_columns_are_left_out() -> None:
    # Given a struct of an int and a struct of a float, a list of ints, and a float column
    inner = DataType(name="struct", fields=(Field(name="f", type=FLOAT),))
    struct = DataType(name="struct", fields=(Field(name="x", type=INT), Field(name="in", type=inner)))
    listed = DataType(name="list", element=Field(name="element", type=INT))
    schema = TableSchema(fields=(Field(name="s", type=struct), Field(name="l", type=listed), Field(name="g", type=FLOAT)))
    ids = {"s": 1, "s.x": 2, "s.in": 3, "s.in.f": 4, "l": 5, "l.element": 6, "g": 7}
    encoder = CountsEncoder(schema, ids, ())
    # Then a file lacking them all counts the struct's leaves and the float as null in every row
    # (so no NaN), and leaves the list out (its element counts are per element)
    lacking = encoder.counts({}, 6, {})
    assert lacking.value_counts == {2: 6, 4: 6, 7: 6} and lacking.null_value_counts == {2: 6, 4: 6, 7: 6}
    assert lacking.nan_value_counts == {4: 0, 7: 0}
    # And a file whose struct holds values has no struct counts (its leaves' nulls are unknown),
    # nor a NaN count for a float holding values (the log counts no NaNs)
    holding = encoder.counts({"s": ColumnStats(null_count=5), "l": ColumnStats(null_count=6),
                              "g": ColumnStats(min=1.0, max=2.0, null_count=1)}, 6, {})
    assert holding.value_counts == {7: 6} and holding.null_value_counts == {7: 1} and holding.nan_value_counts == {}


def test_a_false_null_count_gets_no_counts() -> None:
    encoder = CountsEncoder(TableSchema(fields=(Field(name="a", type=INT),)), {"a": 1}, ())
    assert encoder.counts({"a": ColumnStats(null_count=11)}, 10, {}).value_counts == {}


def test_a_data_file_read_back_without_every_count_is_built_again(tmp_path: Path) -> None:
    # Given a files table row, and its data file as a manifest written before counts were
    # published for every column holds it (no count for the partition column)
    table = ss.Catalog.local(str(tmp_path / "wh")).create_table("t", ROWS, partition_by=["day"])
    table.write(pa.table({"id": [1], "day": [None], "v": [None]}, schema=ROWS))
    rows = table.state().files.table()
    ids = {"id": 1, "day": 2, "v": 3}
    builder = EntryBuilder("file:///t", table.state().schema, ids, ("day",))
    fresh = next(builder.entries(rows, ManifestEntryStatus.EXISTING, 9, 1)).data_file
    path = fresh.file_path
    older = DataFile.from_args(file_path=path, record_count=1, value_counts={1: 1, 3: 1},
                               null_value_counts={1: 0, 3: 1})

    def built(known: DataFile) -> DataFile:
        return next(builder.entries(rows, ManifestEntryStatus.EXISTING, 9, 1, {path: known})).data_file

    # Then the older one is built again, with every count; a complete one is taken as it is
    assert built(older).value_counts == {1: 1, 2: 1, 3: 1} and built(older).null_value_counts == {1: 0, 2: 1, 3: 1}
    assert built(fresh) is fresh

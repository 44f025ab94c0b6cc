"""Pruning on the types and forms test_pruning.py leaves out: narrow ints and floats, zoned and
nanosecond timestamps, decimals, booleans; literals of another type than the column; IN lists with
nulls or many values; constant filters; files without statistics. Each check compares with the
rows: pyarrow's own filter over a file's real rows says whether the file had to be kept."""

from __future__ import annotations

import datetime as dt
import decimal
import math
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from sleeper_spark.datafiles.pruning import prune_files, prune_table
from sleeper_spark.datafiles.stats import StatsAccumulator, partition_value_to_string
from sleeper_spark.models import ColumnStats, FileRef, TableSchema
from sleeper_spark.state import FileLayout, FileSet

UTC = dt.timezone.utc
D = decimal.Decimal
ARROW = pa.schema([("i", pa.int32()), ("f", pa.float32()), ("t", pa.timestamp("us", "UTC")),
                   ("n", pa.timestamp("ns")), ("d", pa.decimal128(7, 2)), ("b", pa.bool_())])
SCHEMA = TableSchema.from_arrow(ARROW)
T0 = dt.datetime(2024, 3, 31, 0, 30, tzinfo=UTC)
N0 = 1_711_845_000_000_000_000  # T0 in nanoseconds, without a zone


def written(index: int, table: pa.Table, partition: dict[str, str | None] | None = None) -> FileRef:
    """The FileRef a writer records for a file of these rows."""
    stats = StatsAccumulator(table.schema)
    stats.update(table)
    return FileRef(path=f"f{index}", partition=partition or {}, size_bytes=1, row_count=table.num_rows,
                   checksum="sha256:00", column_stats=stats.result())


def files(*row_sets: Sequence[dict[str, object]]) -> list[tuple[FileRef, pa.Table]]:
    tables = [pa.Table.from_pylist(list(rows), schema=ARROW) for rows in row_sets]
    return [(written(i, table), table) for i, table in enumerate(tables)]


def kept(spec: list[tuple[FileRef, pa.Table]], filter: pc.Expression, schema: TableSchema = SCHEMA,
         partition_by: tuple[str, ...] = ()) -> list[str]:
    return [f.path for f in prune_files([ref for ref, _ in spec], schema, filter, partition_by)]


def needed(spec: list[tuple[FileRef, pa.Table]], filter: pc.Expression) -> list[str]:
    """The files with a row the filter matches, by pyarrow's evaluation of the real rows."""
    return [ref.path for ref, table in spec if table.filter(filter).num_rows]


def assert_safe(spec: list[tuple[FileRef, pa.Table]], filter: pc.Expression) -> list[str]:
    paths = kept(spec, filter)
    assert set(needed(spec, filter)) <= set(paths), f"{filter} skipped a file with a matching row"
    return paths


# -- literals of another type than the column ---------------------------------------------

ROW = {"i": None, "f": None, "t": None, "n": None, "d": None, "b": None}
VALUES = {
    "i": [-3, 0, 3, -2**31, 2**31 - 1],
    "f": [1.0, 0.1, -0.0, 16777216.0, math.nan, math.inf],
    "t": [T0 + dt.timedelta(hours=h) for h in (-2, 0, 2)],
    "n": [N0, N0 + 1, N0 + 999, N0 + 1000],
    "d": [D("1.00"), D("1.01"), D("-99999.99"), D("0.50")],
    "b": [True, False],
}
OTHER_LITERALS = {
    "i": [pa.scalar(2**40), pa.scalar(-2**40), pa.scalar(2.5), pa.scalar(3.0), pa.scalar(1, pa.int8()),
          pa.scalar(2**31 - 1, pa.uint32())],
    "f": [pa.scalar(0.1), pa.scalar(1.00000001), pa.scalar(0.99999999), pa.scalar(16777217), pa.scalar(0),
          pa.scalar(0.10000000149011612)],
    "t": [pa.scalar(T0.astimezone(dt.timezone(dt.timedelta(hours=2))), pa.timestamp("us", "+02:00")),
          pa.scalar(T0 + dt.timedelta(microseconds=1), pa.timestamp("us", "UTC")).cast(pa.timestamp("ns", "UTC")),
          pa.scalar(int(T0.timestamp() * 1000) + 1, pa.timestamp("ms", "UTC")),
          pa.scalar(int(T0.timestamp() * 10**9) + 1, pa.timestamp("ns", "UTC"))],
    "n": [pa.scalar(N0 + 500, pa.timestamp("ns")), pa.scalar(N0 // 1000, pa.timestamp("us")),
          pa.scalar(N0 // 10**6 + 1, pa.timestamp("ms"))],
    "d": [pa.scalar(D("1.005"), pa.decimal128(4, 3)), pa.scalar(D("1.0"), pa.decimal128(2, 1)),
          pa.scalar(D("0.5"), pa.decimal128(38, 10)), pa.scalar(1), pa.scalar(1.005)],
    "b": [pa.scalar(True), pa.scalar(False), pa.scalar(1)],
}
COMPARE = [pc.equal, pc.not_equal, pc.less, pc.less_equal, pc.greater, pc.greater_equal]


@pytest.mark.parametrize("column", sorted(OTHER_LITERALS))
def test_a_literal_of_another_type_never_skips_a_matching_file(column: str) -> None:
    # Given a file per value, one of the smallest and largest value, and one of a value and a null
    values = VALUES[column]
    ordered = sorted(v for v in values if not (isinstance(v, float) and math.isnan(v)))
    spec = files(*([{**ROW, column: value}] for value in values),
                 [{**ROW, column: ordered[0]}, {**ROW, column: ordered[-1]}], [{**ROW, column: values[0]}, ROW])
    files_table = FileSet.of(FileLayout(SCHEMA, ()), [ref for ref, _ in spec], 1).table()
    for literal in OTHER_LITERALS[column]:
        for compare in COMPARE:
            comparison = compare(pc.field(column), literal)
            for filter in (comparison, ~comparison):
                # When pyarrow can evaluate the filter on the rows and the files are pruned
                try:
                    matching = needed(spec, filter)
                except (pa.ArrowException, TypeError):
                    continue
                # Then every file with a matching row is kept
                kept_paths = prune_table(files_table, SCHEMA, (), filter).column("path").to_pylist()
                assert set(matching) <= set(kept_paths), f"{filter} skipped a file with a matching row"


@pytest.mark.parametrize("column", sorted(set(OTHER_LITERALS) - {"n"}))
def test_a_literal_of_another_type_never_skips_a_matching_partition(column: str) -> None:
    # Given the column as the partition column, one file per value (nanoseconds are left out: a
    # partition value is written through a datetime, which holds microseconds)
    arrow = pa.schema([ARROW.field(column)])
    schema = TableSchema.from_arrow(arrow)
    spec = []
    for index, value in enumerate([*VALUES[column], None]):
        table = pa.Table.from_pylist([{column: value}], schema=arrow)
        spec.append((FileRef(path=f"f{index}", partition={column: partition_value_to_string(table[column][0].as_py())},
                             size_bytes=1, row_count=1, checksum="sha256:00"), table))
    files_table = FileSet.of(FileLayout(schema, (column,)), [ref for ref, _ in spec], 1).table()
    for literal in OTHER_LITERALS[column]:
        comparisons = [compare(pc.field(column), literal) for compare in COMPARE]
        comparisons.append(pc.field(column).isin(pa.array([literal])))
        for comparison in comparisons:
            for filter in (comparison, ~comparison):
                try:
                    matching = needed(spec, filter)
                except (pa.ArrowException, TypeError):
                    continue
                kept_paths = prune_table(files_table, schema, (column,), filter).column("path").to_pylist()
                assert set(matching) <= set(kept_paths), f"{filter} skipped a file with a matching row"


def test_a_float32_column_is_compared_with_a_double_literal_in_double() -> None:
    # Given a float32 file holding exactly 1.0, and doubles next to it that round to 1.0 in float32
    spec = files([{**ROW, "f": 1.0}])

    # Then comparisons that hold in double keep the file, and those that fail skip it
    assert assert_safe(spec, pc.field("f") < 1.00000001) == ["f0"]
    assert assert_safe(spec, pc.field("f") > 0.99999999) == ["f0"]
    assert assert_safe(spec, pc.field("f") > 1.00000001) == []
    assert assert_safe(spec, pc.field("f") == 1.00000001) == []


def test_an_int_literal_beyond_the_columns_range_still_prunes() -> None:
    spec = files([{**ROW, "i": 5}], [{**ROW, "i": 9}])

    assert assert_safe(spec, pc.field("i") > 2**40) == []
    assert assert_safe(spec, pc.field("i") < 2**40) == ["f0", "f1"]
    assert assert_safe(spec, pc.field("i") > -2**40) == ["f0", "f1"]
    assert assert_safe(spec, pc.field("i") == 2.5) == []
    assert assert_safe(spec, pc.field("i") >= 5.5) == ["f1"]


def test_zoned_timestamps_compare_as_instants_whatever_the_literals_zone() -> None:
    # Given files an hour apart, in UTC
    spec = files([{**ROW, "t": T0}], [{**ROW, "t": T0 + dt.timedelta(hours=1)}])
    paris_summer = dt.timezone(dt.timedelta(hours=2))

    # When the literal is the first instant written in UTC+02:00
    at_t0 = pa.scalar(T0.astimezone(paris_summer), pa.timestamp("us", "+02:00"))

    # Then only the file of that instant can match equality, and order follows the instants
    assert assert_safe(spec, pc.field("t") == at_t0) == ["f0"]
    assert assert_safe(spec, pc.field("t") > at_t0) == ["f1"]
    assert assert_safe(spec, pc.field("t") == pa.scalar(T0, pa.timestamp("ms", "UTC"))) == ["f0"]


def test_nanosecond_values_between_microseconds_are_found() -> None:
    # Given a file of nanosecond values inside one microsecond
    spec = files([{**ROW, "n": N0 + 100}, {**ROW, "n": N0 + 900}], [{**ROW, "n": N0 + 5000}])

    # Then a nanosecond in that microsecond keeps it, and ranges past it skip it
    assert assert_safe(spec, pc.field("n") == pa.scalar(N0 + 500, pa.timestamp("ns"))) == ["f0"]
    assert assert_safe(spec, pc.field("n") > pa.scalar(N0 + 1950, pa.timestamp("ns"))) == ["f1"]
    assert assert_safe(spec, pc.field("n") < pa.scalar(N0 + 4000, pa.timestamp("ns"))) == ["f0"]


def test_decimals_compare_by_value_across_scales() -> None:
    spec = files([{**ROW, "d": D("1.00")}], [{**ROW, "d": D("1.01")}])

    assert assert_safe(spec, pc.field("d") == pa.scalar(D("1.0"), pa.decimal128(2, 1))) == ["f0"]
    assert assert_safe(spec, pc.field("d") > pa.scalar(D("1.005"), pa.decimal128(4, 3))) == ["f1"]
    assert assert_safe(spec, pc.field("d").isin(pa.array([D("1.01"), D("7.00")], pa.decimal128(7, 2)))) == ["f1"]


def test_a_boolean_column_is_a_filter_and_a_comparison() -> None:
    spec = files([{**ROW, "b": True}], [{**ROW, "b": False}], [{**ROW, "b": None}], [{**ROW, "b": True},
                                                                                    {**ROW, "b": False}])

    assert assert_safe(spec, pc.field("b")) == ["f0", "f3"]
    assert assert_safe(spec, ~pc.field("b")) == ["f1", "f3"]
    assert assert_safe(spec, pc.field("b") == False) == ["f1", "f3"]  # noqa: E712
    assert assert_safe(spec, pc.field("b").is_null()) == ["f2"]


# -- null semantics, IN lists and constants ------------------------------------------------


def test_a_comparison_with_a_null_literal_matches_nothing() -> None:
    spec = files([{**ROW, "i": 1}], [{**ROW}])

    for compare in COMPARE:
        filter = compare(pc.field("i"), pa.scalar(None, pa.int32()))
        assert assert_safe(spec, filter) == []
        # and its negation is null too, so nothing matches either
        assert assert_safe(spec, ~filter) == []


def test_is_in_with_a_null_in_the_set_matches_null_rows_unless_told_to_skip_them() -> None:
    # Given a file of nulls only and a file of values
    spec = files([{**ROW}], [{**ROW, "i": 3}])
    with_null = pa.array([7, None], pa.int32())

    # Then a set holding null matches the nulls (the default), and never when nulls are skipped
    assert assert_safe(spec, pc.field("i").isin(with_null)) == ["f0"]
    skipping = pc.Expression._call("is_in", [pc.field("i")], pc.SetLookupOptions(with_null, skip_nulls=True))
    assert assert_safe(spec, skipping) == []
    assert assert_safe(spec, pc.field("i").isin(pa.array([3, None], pa.int32()))) == ["f0", "f1"]
    assert assert_safe(spec, ~pc.field("i").isin(with_null)) == ["f1"]


def test_a_long_in_list_is_checked_by_its_span() -> None:
    # Given files at 10, at 500 and at 2000, and a list of 100 values from 0 to 990
    spec = files([{**ROW, "i": 10}], [{**ROW, "i": 500}], [{**ROW, "i": 2000}])
    values = pa.array(range(0, 1000, 10), pa.int32())

    # Then the file beyond the span is skipped; files inside it are kept
    assert assert_safe(spec, pc.field("i").isin(values)) == ["f0", "f1"]


def test_a_short_in_list_is_checked_value_by_value() -> None:
    spec = files([{**ROW, "i": 1}, {**ROW, "i": 3}], [{**ROW, "i": 4}, {**ROW, "i": 9}], [{**ROW, "i": 2}])

    assert assert_safe(spec, pc.field("i").isin(pa.array([0, 10], pa.int32()))) == []
    assert assert_safe(spec, pc.field("i").isin(pa.array([2, 10], pa.int32()))) == ["f0", "f2"]
    assert assert_safe(spec, ~pc.field("i").isin(pa.array([2], pa.int32()))) == ["f0", "f1"]


def test_nan_counts_as_null_only_when_asked() -> None:
    # Given a float file of NaN only (no bounds, no nulls) and one of a number
    spec = files([{**ROW, "f": math.nan}], [{**ROW, "f": 1.0}])

    # Then is_null keeps neither, but is_null(nan_is_null) keeps the NaN file; NaN also matches !=
    assert assert_safe(spec, pc.field("f").is_null()) == []
    assert "f0" in assert_safe(spec, pc.field("f").is_null(nan_is_null=True))
    assert "f0" in assert_safe(spec, pc.field("f") != 1.0)
    assert "f1" not in assert_safe(spec, pc.field("f") == 2.0)


@pytest.mark.parametrize(("filter", "paths"), [
    (pc.scalar(True), ["f0", "f1"]), (pc.scalar(False), []), (pc.scalar(pa.scalar(None, pa.bool_())), []),
    (pc.scalar(True) & (pc.field("i") == 1), ["f0"]), (pc.scalar(False) | (pc.field("i") == 1), ["f0"]),
])
def test_constant_filters(filter: pc.Expression, paths: list[str]) -> None:
    spec = files([{**ROW, "i": 1}], [{**ROW, "i": 2}])

    assert assert_safe(spec, filter) == paths


def test_kleene_and_or_with_nulls() -> None:
    # Given one file of null i and non-null d, one of i=1 and null d
    one = D("1.00")
    spec = files([{**ROW, "d": one}], [{**ROW, "i": 1}])

    assert assert_safe(spec, (pc.field("i") == 1) | (pc.field("d") == one)) == ["f0", "f1"]
    assert assert_safe(spec, (pc.field("i") == 1) & (pc.field("d") == one)) == []
    # null AND false is false, null OR true is true: neither is null, so negations and is_null find them
    assert assert_safe(spec, ~((pc.field("i") == 1) & (pc.field("d") == D("2.00")))) == ["f0"]
    assert assert_safe(spec, ((pc.field("i") == 1) | (pc.field("d") == one)).is_null()) == []
    assert assert_safe(spec, ((pc.field("i") == 1) & (pc.field("d") == one)).is_null()) == ["f0", "f1"]


# -- files without statistics, partition columns -------------------------------------------


def test_files_without_statistics_are_kept_by_every_filter() -> None:
    # Given a file with no column stats (another writer) and one with null_count only
    bare = FileRef(path="bare", size_bytes=1, row_count=3, checksum="sha256:00")
    counted = FileRef(path="counted", size_bytes=1, row_count=3, checksum="sha256:00",
                      column_stats={"i": ColumnStats(null_count=0)})
    stated = written(2, pa.Table.from_pylist([{**ROW, "i": 1}], schema=ARROW))

    # Then no filter on i skips them, whereas a file with bounds is skipped
    for filter in [pc.field("i") == 99, pc.field("i").isin([98, 99]), pc.field("i") < -5, pc.field("i").is_valid()]:
        paths = [f.path for f in prune_files([bare, counted, stated], SCHEMA, filter, ())]
        assert paths[:2] == ["bare", "counted"], filter
    # and is_null skips only the file whose count says it has no nulls
    assert [f.path for f in prune_files([bare, counted, stated], SCHEMA, pc.field("i").is_null(), ())] == ["bare"]


def test_stats_that_cannot_be_read_in_the_columns_type_count_as_unknown() -> None:
    # Given a file whose int bounds were written as text by some other tool
    odd = FileRef(path="odd", size_bytes=1, row_count=1, checksum="sha256:00",
                  column_stats={"i": ColumnStats(min="one", max="nine", null_count=0)})

    assert prune_files([odd], SCHEMA, pc.field("i") == 99, ()) == [odd]


@pytest.mark.parametrize("arrow_type", [pa.int64(), pa.int16(), pa.date32(), pa.decimal128(5, 2), pa.float64(),
                                        pa.timestamp("us", "UTC")])
def test_partition_values_of_each_type_prune_like_their_rows(arrow_type: pa.DataType) -> None:
    # Given one file per partition value, rows holding that value, as a writer records them
    values = pa.array({
        "int64": [-10, 2, 10, None], "int16": [-10, 2, 10, None],
        "date32[day]": [dt.date(2024, 1, 9), dt.date(2024, 1, 10), dt.date(2023, 12, 31), None],
        "decimal128(5, 2)": [D("-0.50"), D("2.00"), D("10.25"), None], "double": [-0.0, 2.0, 10.5, None],
        "timestamp[us, tz=UTC]": [T0, T0 + dt.timedelta(seconds=1), T0 - dt.timedelta(days=400), None],
    }[str(arrow_type)], arrow_type)
    arrow = pa.schema([("p", arrow_type), ("i", pa.int32())])
    schema = TableSchema.from_arrow(arrow)
    spec = []
    for index, value in enumerate(values):
        table = pa.table({"p": pa.array([value.as_py()] * 2, arrow_type), "i": pa.array([1, 2], pa.int32())})
        ref = written(index, table.drop_columns(["p"]), {"p": partition_value_to_string(value.as_py())})
        spec.append((ref, table))
    files_table = FileSet.of(FileLayout(schema, ("p",)), [ref for ref, _ in spec], 1).table()

    # Then for each operator and each value, the files kept are exactly those with matching rows
    for value in values:
        if not value.is_valid:
            continue
        for compare in COMPARE:
            filter = compare(pc.field("p"), value)
            kept_paths = prune_table(files_table, schema, ("p",), filter).column("path").to_pylist()
            if pa.types.is_floating(arrow_type):  # a float compares loosely (NaN), never skipping a match
                assert set(needed(spec, filter)) <= set(kept_paths), filter
            else:
                assert kept_paths == needed(spec, filter), filter
        in_list = pc.field("p").isin(pa.array([value.as_py(), None], arrow_type))
        assert prune_table(files_table, schema, ("p",), in_list).column("path").to_pylist() == needed(spec, in_list)
    assert prune_table(files_table, schema, ("p",), pc.field("p").is_null()).column("path").to_pylist() == ["f3"]


def test_minus_zero_and_zero_are_one_float_partition_value() -> None:
    arrow = pa.schema([("p", pa.float64())])
    schema = TableSchema.from_arrow(arrow)
    minus_zero = FileRef(path="m", partition={"p": partition_value_to_string(-0.0)}, size_bytes=1, row_count=1,
                         checksum="sha256:00")

    assert prune_files([minus_zero], schema, pc.field("p") == 0.0, ("p",)) == [minus_zero]
    assert prune_files([minus_zero], schema, pc.field("p") <= 0.0, ("p",)) == [minus_zero]
    assert prune_files([minus_zero], schema, pc.field("p") < 0.0, ("p",)) == []

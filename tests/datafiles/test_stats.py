"""Column statistics: min, max and null count of every orderable column, as pyarrow computes them
from the rows, kept in the stored form and read back comparable with the column's values."""

from __future__ import annotations

import datetime as dt
import decimal
import math

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sleeper_spark.datafiles.stats import StatsAccumulator, partition_value_to_string
from sleeper_spark.models import ColumnStats, DataType, TableSchema
from sleeper_spark.models.stat_values import from_stat, to_stat

UTC = dt.timezone.utc


def stats_of(*batches: pa.Table) -> dict[str, ColumnStats]:
    accumulator = StatsAccumulator(batches[0].schema)
    for batch in batches:
        accumulator.update(batch)
    return accumulator.result()


def read_back(stats: ColumnStats, arrow_type: pa.DataType) -> tuple[object, object]:
    type_ = TableSchema.from_arrow(pa.schema([("c", arrow_type)])).field("c").type
    return from_stat(stats.min, type_), from_stat(stats.max, type_)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.one_of(st.none(), st.integers(-2**63, 2**63 - 1)), max_size=5), min_size=1, max_size=4))
def test_int_stats_over_many_batches_are_those_of_all_rows(batches: list[list[int | None]]) -> None:
    # Given a file written in several batches
    tables = [pa.table({"c": pa.array(rows, pa.int64())}) for rows in batches]
    everything = pa.concat_tables(tables).column("c")

    # When the statistics are accumulated batch by batch
    stats = stats_of(*tables)["c"]

    # Then they are pyarrow's min, max and null count over every row
    expected = pc.min_max(everything)
    assert (stats.min, stats.max) == (expected["min"].as_py(), expected["max"].as_py())
    assert stats.null_count == everything.null_count


def test_nan_is_left_out_of_float_bounds_and_infinities_are_kept() -> None:
    column = pa.array([math.nan, -math.inf, 2.5, None, math.nan, 7.0], pa.float64())

    stats = stats_of(pa.table({"c": column}))["c"]

    assert (stats.min, stats.max, stats.null_count) == (-math.inf, 7.0, 1)


@pytest.mark.parametrize("arrow_type", [pa.float32(), pa.float64()])
def test_a_float_column_of_nan_only_has_no_bounds_and_no_nulls(arrow_type: pa.DataType) -> None:
    first = pa.table({"c": pa.array([math.nan, math.nan], arrow_type)})
    second = pa.table({"c": pa.array([None, math.nan], arrow_type)})

    stats = stats_of(first, second)["c"]

    assert (stats.min, stats.max, stats.null_count) == (None, None, 1)


def test_a_nan_batch_does_not_reset_bounds_found_earlier() -> None:
    stats = stats_of(pa.table({"c": [1.5, 3.0]}), pa.table({"c": [math.nan]}), pa.table({"c": [-2.0]}))["c"]

    assert (stats.min, stats.max) == (-2.0, 3.0)


def test_float32_bounds_are_the_stored_float32_values() -> None:
    column = pa.array([0.1, 0.7], pa.float32())

    low, high = read_back(stats_of(pa.table({"c": column}))["c"], pa.float32())

    # read back into the column's type, the bounds are exactly the smallest and largest value
    assert pa.array([low, high], pa.float32()).equals(column)


@pytest.mark.parametrize("arrow_type", [pa.string(), pa.large_string()])
def test_string_bounds_are_whole_values_in_byte_order(arrow_type: pa.DataType) -> None:
    long = "m" * 10_000
    column = pa.array(["zebra", long, "Zebra", "é", "", None, "e\u0301"], arrow_type)

    stats = stats_of(pa.table({"c": column}))["c"]

    expected = pc.min_max(column)
    assert (stats.min, stats.max, stats.null_count) == ("", "é", 1)
    assert (stats.min, stats.max) == (expected["min"].as_py(), expected["max"].as_py())
    assert stats_of(pa.table({"c": pa.array([long, "a"], arrow_type)}))["c"].max == long  # not truncated


def test_bool_bounds() -> None:
    assert stats_of(pa.table({"c": [True, None, True]}))["c"] == ColumnStats(min=True, max=True, null_count=1)
    assert stats_of(pa.table({"c": [True, False]}))["c"] == ColumnStats(min=False, max=True, null_count=0)


def test_dates_are_stored_as_iso_text_and_read_back_as_dates() -> None:
    column = pa.array([dt.date(2024, 2, 29), None, dt.date(1969, 12, 31), dt.date(2024, 1, 1)], pa.date32())

    stats = stats_of(pa.table({"c": column}))["c"]

    assert (stats.min, stats.max) == ("1969-12-31", "2024-02-29")
    assert read_back(stats, pa.date32()) == (dt.date(1969, 12, 31), dt.date(2024, 2, 29))


@pytest.mark.parametrize("tz", ["UTC", "Europe/Paris", "-07:00"])
def test_zoned_timestamps_read_back_as_the_same_instants_in_utc(tz: str) -> None:
    instants = [dt.datetime(2024, 7, 1, 22, 30, 0, 1, tzinfo=UTC), dt.datetime(2023, 12, 31, 23, 59, tzinfo=UTC)]
    arrow_type = pa.timestamp("us", tz)
    column = pa.array(instants, arrow_type)

    low, high = read_back(stats_of(pa.table({"c": column}))["c"], arrow_type)

    assert (low, high) == (min(instants), max(instants))
    assert low.tzinfo is not None and low.utcoffset() == dt.timedelta(0)  # type: ignore[attr-defined]


def test_timestamps_without_a_zone_read_back_without_one() -> None:
    column = pa.array([dt.datetime(2024, 1, 1, 8), dt.datetime(2020, 5, 5, 5, 5, 5, 5)], pa.timestamp("us"))

    low, high = read_back(stats_of(pa.table({"c": column}))["c"], pa.timestamp("us"))

    assert (low, high) == (dt.datetime(2020, 5, 5, 5, 5, 5, 5), dt.datetime(2024, 1, 1, 8))


@pytest.mark.parametrize("base", [1_700_000_000_000_000_000, -1_700_000_000_000_000_000])
def test_nanosecond_timestamps_are_bounded_outward_to_the_microsecond(base: int) -> None:
    # Given nanosecond values between two microseconds (after and before 1970), which a datetime cannot hold
    column = pa.array([base + 1_999, base + 5_001, None], pa.timestamp("ns", "UTC"))

    # When their statistics are taken
    stats = stats_of(pa.table({"c": column}))["c"]

    # Then the bounds still enclose every value
    low, high = read_back(stats, pa.timestamp("ns", "UTC"))
    bounds = pa.array([low, high], pa.timestamp("ns", "UTC")).cast(pa.int64()).to_pylist()
    assert bounds == [base + 1_000, base + 6_000]
    assert stats.null_count == 1


def test_decimals_keep_every_digit_of_their_scale() -> None:
    arrow_type = pa.decimal128(38, 10)
    values = [decimal.Decimal("12345678901234567890.0000000001"), decimal.Decimal("-0.5000000000"), None]

    stats = stats_of(pa.table({"c": pa.array(values, arrow_type)}))["c"]

    assert (stats.min, stats.max) == ("-0.5000000000", "12345678901234567890.0000000001")
    assert read_back(stats, arrow_type) == (values[1], values[0])


@pytest.mark.parametrize("arrow_type", [pa.int32(), pa.float64(), pa.string(), pa.date32(), pa.timestamp("us", "UTC"),
                                        pa.decimal128(5, 2), pa.bool_()])
def test_an_all_null_column_has_no_bounds_and_counts_every_row(arrow_type: pa.DataType) -> None:
    batches = [pa.table({"c": pa.nulls(3, arrow_type)}), pa.table({"c": pa.nulls(2, arrow_type)})]

    assert stats_of(*batches)["c"] == ColumnStats(min=None, max=None, null_count=5)


def test_nested_and_binary_columns_get_a_null_count_only() -> None:
    table = pa.table({
        "tags": pa.array([["a"], None, []], pa.list_(pa.string())),
        "point": pa.array([{"x": 1}, None, None], pa.struct([("x", pa.int64())])),
        "attrs": pa.array([[("k", 1)], [], None], pa.map_(pa.string(), pa.int64())),
        "blob": pa.array([b"\x00", None, b"\xff"], pa.binary()),
    })

    stats = stats_of(table)

    assert stats == {"tags": ColumnStats(null_count=1), "point": ColumnStats(null_count=2),
                     "attrs": ColumnStats(null_count=1), "blob": ColumnStats(null_count=1)}


def test_a_file_of_no_rows_has_empty_stats_for_every_column() -> None:
    stats = stats_of(pa.table({"n": pa.array([], pa.int64()), "s": pa.array([], pa.string())}))

    assert stats == {"n": ColumnStats(), "s": ColumnStats()}


def test_stored_values_are_json_scalars() -> None:
    assert to_stat(dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)) == "2024-01-02T03:04:05+00:00"
    assert to_stat(decimal.Decimal("1.10")) == "1.10"
    assert to_stat(b"\x00\xff") == "AP8="
    assert to_stat(object()) is None


def test_a_stat_of_a_type_without_order_or_of_the_wrong_form_is_passed_through_or_dropped() -> None:
    assert from_stat("AP8=", DataType(name="binary")) is None
    assert from_stat(None, DataType(name="int64")) is None
    assert from_stat(3, DataType(name="int64")) == 3
    assert from_stat("2024-01-01T00:00:00+02:00", DataType(name="timestamp", unit="us", tz="UTC")) == \
        dt.datetime(2023, 12, 31, 22, tzinfo=UTC)


@pytest.mark.parametrize(("value", "text"), [
    (None, None), (True, "true"), (False, "false"), (0, "0"), (-12, "-12"), (2.5, "2.5"),
    (dt.date(2024, 3, 1), "2024-03-01"), (dt.datetime(2024, 3, 1, 12, tzinfo=UTC), "2024-03-01T12:00:00+00:00"),
    (decimal.Decimal("1.50"), "1.50"), ("a/b c", "a/b c"),
])
def test_partition_values_are_recorded_as_text(value: object, text: str | None) -> None:
    assert partition_value_to_string(value) == text


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.none(), st.sampled_from([math.nan, -0.0, 0.0, math.inf, -math.inf]), st.floats()),
                min_size=1, max_size=70), st.sampled_from([pa.float32(), pa.float64()]))
def test_float_bounds_are_those_of_the_values_without_nan(values: list[float | None], arrow_type: pa.DataType) -> None:
    # Given floats with NaN, both zeros and infinities among them
    column = pa.array(values, arrow_type)

    # When their statistics are taken
    stats = stats_of(pa.table({"c": column}))["c"]

    # Then the bounds are pyarrow's min and max of the column with its NaN filtered out, the
    # zero's sign included (the stored text of -0.0 and 0.0 differ)
    kept = pc.filter(column, pc.invert(pc.is_nan(column)))
    if kept.null_count == len(kept):
        assert (stats.min, stats.max) == (None, None)
    else:
        expected = pc.min_max(kept)
        assert repr((stats.min, stats.max)) == repr((expected["min"].as_py(), expected["max"].as_py()))

"""A data file's statistics as Iceberg metrics: exact where published, widened or left out where
an exact bound could make a reader skip a file that holds matching rows."""

from __future__ import annotations

import math
import struct
from decimal import Decimal

import pytest
from pyiceberg.conversions import from_bytes
from pyiceberg.types import (
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    PrimitiveType,
    StringType,
    TimestampType,
    TimestamptzType,
)

from sleeper_spark.iceberg.bounds import MAX_STRING_BOUND_BYTES, FileMetrics, MetricsEncoder
from sleeper_spark.models import ColumnStats
from sleeper_spark.models.files import StatValue
from sleeper_spark.models.schema import DataType, Field, TableSchema

FLOAT32_MAX = struct.unpack("<f", struct.pack("<I", 0x7F7FFFFF))[0]


def one_column(data_type: DataType, low: StatValue, high: StatValue, null_count: int = 0, rows: int = 10
               ) -> FileMetrics:
    """The metrics of a file of a one-column table (column "c", id 7)."""
    schema = TableSchema(fields=(Field(name="c", type=data_type),))
    encoder = MetricsEncoder(schema, {"c": 7}, ())
    return encoder.metrics({"c": ColumnStats(min=low, max=high, null_count=null_count)}, rows, {})


def bounds(data_type: DataType, low: StatValue, high: StatValue, iceberg: PrimitiveType) -> tuple[object, object]:
    """The published bounds decoded by pyiceberg (``None`` where left out)."""
    metrics = one_column(data_type, low, high)
    lower, upper = metrics.lower_bounds.get(7), metrics.upper_bounds.get(7)
    return (None if lower is None else decoded(iceberg, lower),
            None if upper is None else decoded(iceberg, upper))


def decoded(iceberg: PrimitiveType, encoded: bytes) -> object:
    value: object = from_bytes(iceberg, encoded)
    return value


def float32(value: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


def next_float32_up(value: float) -> float:
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    return float(struct.unpack("<f", struct.pack("<I", bits + (1 if value > 0 else -1)))[0])


def test_a_column_without_stats_gets_counts_but_no_bounds() -> None:
    # Given a table with two columns, a file with stats for one of them only (the other was added
    # after the file was written)
    schema = TableSchema(fields=(Field(name="a", type=DataType(name="int32")),
                                 Field(name="b", type=DataType(name="int32"))))
    encoder = MetricsEncoder(schema, {"a": 1, "b": 2}, ())

    # When its metrics are built
    metrics = encoder.metrics({"a": ColumnStats(min=1, max=5, null_count=3)}, 10, {})

    # Then the column without stats is null in every row and has no bounds; the other its counts and bounds
    assert metrics.value_counts == {1: 10, 2: 10} and metrics.null_value_counts == {1: 3, 2: 10}
    assert decoded(IntegerType(), metrics.lower_bounds[1]) == 1
    assert decoded(IntegerType(), metrics.upper_bounds[1]) == 5
    assert set(metrics.lower_bounds) == set(metrics.upper_bounds) == {1}


def test_partition_nested_and_binary_columns_get_no_bounds() -> None:
    # Given a partition column, a struct, a binary column and an int column, all with stats
    struct_type = DataType(name="struct", fields=(Field(name="x", type=DataType(name="int32")),))
    schema = TableSchema(fields=(Field(name="day", type=DataType(name="date")), Field(name="s", type=struct_type),
                                 Field(name="blob", type=DataType(name="binary")),
                                 Field(name="n", type=DataType(name="int64"))))
    encoder = MetricsEncoder(schema, {"day": 1, "s": 2, "s.x": 3, "blob": 4, "n": 5}, ["day"])
    stats = {"day": ColumnStats(min="2024-01-01", max="2024-01-01"), "s": ColumnStats(null_count=1),
             "blob": ColumnStats(min="YQ==", max="Yg==", null_count=2), "n": ColumnStats(min=-3, max=3)}

    # When the file's metrics are built
    metrics = encoder.metrics(stats, 4, {"day": "2024-01-01"})

    # Then the partition and nested columns have no bounds (nor the struct counts: it holds a
    # null, so its leaf's nulls are unknown), the binary one has counts only
    assert metrics.value_counts == {1: 4, 4: 4, 5: 4} and metrics.null_value_counts == {1: 0, 4: 2, 5: 0}
    assert set(metrics.lower_bounds) == set(metrics.upper_bounds) == {5}


def test_a_null_count_above_the_row_count_is_not_published() -> None:
    metrics = one_column(DataType(name="int32"), 1, 2, null_count=11, rows=10)
    assert metrics == FileMetrics({}, {}, {}, {}, {})


@pytest.mark.parametrize(("data_type", "low", "high", "iceberg", "expected"), [
    (DataType(name="bool"), False, True, BooleanType(), (False, True)),
    (DataType(name="int8"), -128, 127, IntegerType(), (-128, 127)),
    (DataType(name="int64"), -(2**63), 2**63 - 1, LongType(), (-(2**63), 2**63 - 1)),
    (DataType(name="float64"), -1.5, 2.25, DoubleType(), (-1.5, 2.25)),
    (DataType(name="string"), "apple", "pear", StringType(), ("apple", "pear")),
    (DataType(name="date"), "1969-12-31", "2024-02-29", DateType(), (-1, 19782)),
])
def test_exact_bounds_decode_to_the_stat_values(data_type: DataType, low: StatValue, high: StatValue,
                                                 iceberg: PrimitiveType, expected: tuple[object, object]) -> None:
    assert bounds(data_type, low, high, iceberg) == expected


@pytest.mark.parametrize(("data_type", "low", "high"), [
    (DataType(name="int32"), 1, 2**31),  # beyond the column's Iceberg type
    (DataType(name="int32"), True, 5),  # a bool is no int stat
    (DataType(name="bool"), 0, 1),
    (DataType(name="int64"), 9, 3),  # min above max
    (DataType(name="date"), "2024-13-01", "2024-12-01"),  # unparseable
    (DataType(name="date"), "2024-01-01", 5),
    (DataType(name="timestamp", unit="us"), "yesterday", "2024-01-01T00:00:00"),
    (DataType(name="decimal", precision=5, scale=2), "x", "1.00"),
    (DataType(name="string"), "b", "a"),
])
def test_an_unusable_stat_leaves_the_columns_bounds_out_without_raising(
        data_type: DataType, low: StatValue, high: StatValue) -> None:
    metrics = one_column(data_type, low, high, null_count=1)
    assert metrics.lower_bounds == {} and metrics.upper_bounds == {}
    assert metrics.null_value_counts == {7: 1} and metrics.value_counts == {7: 10}


def test_a_widened_column_encodes_old_stats_in_its_current_type() -> None:
    # Given an int32 file of a column now int64: its bound is 8 bytes, as Iceberg's long is
    metrics = one_column(DataType(name="int64"), -5, 5)
    assert len(metrics.lower_bounds[7]) == 8 and decoded(LongType(), metrics.lower_bounds[7]) == -5


@pytest.mark.parametrize("type_name", ["float32", "float64"])
def test_zero_bounds_are_widened_to_the_zero_beyond(type_name: str) -> None:
    # Given a file whose stats say min 0.0 and max -0.0 (which zero it holds is unknown)
    iceberg = FloatType() if type_name == "float32" else DoubleType()
    lower, upper = bounds(DataType(name=type_name), 0.0, -0.0, iceberg)

    # Then the lower bound is -0.0 and the upper +0.0, which Iceberg orders around both zeros
    assert isinstance(lower, float) and isinstance(upper, float)
    assert lower == 0.0 and math.copysign(1.0, lower) == -1.0
    assert upper == 0.0 and math.copysign(1.0, upper) == 1.0


@pytest.mark.parametrize("type_name", ["float32", "float64"])
def test_nan_drops_the_bounds_and_infinities_are_kept(type_name: str) -> None:
    iceberg = FloatType() if type_name == "float32" else DoubleType()
    assert bounds(DataType(name=type_name), math.nan, 1.0, iceberg) == (None, None)
    assert bounds(DataType(name=type_name), -1.0, math.nan, iceberg) == (None, None)
    assert bounds(DataType(name=type_name), -math.inf, math.inf, iceberg) == (-math.inf, math.inf)


def test_float32_bounds_round_outward() -> None:
    # Given a float32 column whose stats are Python floats that float32 cannot hold exactly
    lower, upper = bounds(DataType(name="float32"), 0.1, 0.1, FloatType())

    # Then the lower bound is the float32 just below 0.1 and the upper the one just above
    assert isinstance(lower, float) and isinstance(upper, float)
    assert float32(lower) == lower and float32(upper) == upper
    assert lower < 0.1 < upper
    assert next_float32_up(lower) == upper
    # (nearest rounding would have given 0.1's float32 for both: above 0.1, a wrong lower bound)
    assert float32(0.1) > 0.1


def test_float32_bounds_keep_exact_values_and_negatives_round_outward() -> None:
    assert bounds(DataType(name="float32"), 0.5, 1.5, FloatType()) == (0.5, 1.5)
    lower, upper = bounds(DataType(name="float32"), -0.1, -0.1, FloatType())
    assert isinstance(lower, float) and isinstance(upper, float)
    assert lower < -0.1 < upper


def test_float32_bounds_beyond_its_range_stay_bounds() -> None:
    assert bounds(DataType(name="float32"), 1e39, 1e39, FloatType()) == (FLOAT32_MAX, math.inf)


def test_integer_stats_of_a_double_column_round_outward() -> None:
    # 2**53 + 1 is not a double: the bounds are the doubles either side of it
    lower, upper = bounds(DataType(name="float64"), 2**53 + 1, 2**53 + 1, DoubleType())
    assert (lower, upper) == (float(2**53), float(2**53 + 2))


def test_strings_outside_the_first_code_points_get_no_bounds() -> None:
    # Java readers order UTF-16 units: U+FF61 sorts after U+1F600 there, before it in code points
    assert bounds(DataType(name="string"), "a", "a\U0001f600", StringType()) == (None, None)
    assert bounds(DataType(name="string"), "a\uff61", "b", StringType()) == (None, None)
    assert bounds(DataType(name="string"), "a\ud7ff", "b\ud7ff", StringType()) == ("a\ud7ff", "b\ud7ff")


def test_a_long_lower_bound_is_truncated_to_a_prefix() -> None:
    # Given a min of 40 two-byte characters (80 bytes)
    lower, upper = bounds(DataType(name="string"), "é" * 40, "ê", StringType())

    # Then the lower bound is its longest prefix of whole characters within the length
    assert lower == "é" * 32 and len(("é" * 32).encode()) == MAX_STRING_BOUND_BYTES
    assert upper == "ê"


def test_a_long_upper_bound_is_a_prefix_with_its_last_character_incremented() -> None:
    long_max = "a" * 30 + "é" * 40
    _, upper = bounds(DataType(name="string"), "a", long_max, StringType())
    assert upper == "a" * 30 + "é" * 16 + "ê"
    assert isinstance(upper, str) and upper > long_max and len(upper.encode()) <= MAX_STRING_BOUND_BYTES


def test_an_upper_bound_skips_characters_that_cannot_be_incremented() -> None:
    # U+D7FF incremented would be a surrogate: the increment moves to the character before
    _, upper = bounds(DataType(name="string"), "a", "a" + "\ud7ff" * 30, StringType())
    assert upper == "b"
    _, none = bounds(DataType(name="string"), "\ud7ff", "\ud7ff" * 30, StringType())
    assert none is None


@pytest.mark.parametrize(("tz", "low", "high", "expected"), [
    (None, "1969-12-31T23:59:59.999999", "1970-01-01T00:00:00.000001", (-1, 1)),
    (None, "0001-01-01T00:00:00", "9999-12-31T23:59:59.999999", (-62135596800000000, 253402300799999999)),
    ("UTC", "1900-01-01T00:00:00.000001+00:00", "2024-05-01T12:00:00+02:00",
     (-2208988799999999, 1714557600000000)),
])
def test_timestamps_are_exact_integer_microseconds(tz: str | None, low: str, high: str,
                                                   expected: tuple[int, int]) -> None:
    iceberg = TimestampType() if tz is None else TimestamptzType()
    assert bounds(DataType(name="timestamp", unit="ns", tz=tz), low, high, iceberg) == expected


def test_a_timestamp_stat_of_the_other_awareness_is_left_out() -> None:
    assert bounds(DataType(name="timestamp", unit="us", tz="UTC"), "2024-01-01T00:00:00",
                  "2024-01-02T00:00:00", TimestamptzType()) == (None, None)
    assert bounds(DataType(name="timestamp", unit="us"), "2024-01-01T00:00:00+00:00",
                  "2024-01-02T00:00:00+00:00", TimestampType()) == (None, None)


def test_negative_decimals_round_trip_in_minimal_twos_complement() -> None:
    # Given a decimal(10, 2) column with a negative min
    decimal_type = DataType(name="decimal", precision=10, scale=2)
    metrics = one_column(decimal_type, "-1.28", "123.4")

    # Then -128 unscaled is the single byte 0x80, and both bounds decode with the column's scale
    assert metrics.lower_bounds[7] == b"\x80"
    assert from_bytes(DecimalType(10, 2), metrics.lower_bounds[7]) == Decimal("-1.28")
    assert from_bytes(DecimalType(10, 2), metrics.upper_bounds[7]) == Decimal("123.40")
    assert bounds(decimal_type, "-99999999.99", "-0.01", DecimalType(10, 2)) == \
        (Decimal("-99999999.99"), Decimal("-0.01"))


@pytest.mark.parametrize(("low", "high"), [
    ("1.234", "2.00"),  # more decimals than the scale
    ("1.00", "1234.00"),  # more digits than the precision
    ("NaN", "1.00"),
    ("1E+9", "1E+10"),
])
def test_decimals_that_do_not_fit_the_column_exactly_are_left_out(low: str, high: str) -> None:
    assert bounds(DataType(name="decimal", precision=5, scale=2), low, high, DecimalType(5, 2)) == (None, None)


def test_decimals_in_another_exponent_are_quantized_to_the_scale() -> None:
    assert bounds(DataType(name="decimal", precision=5, scale=2), "1E+2", "-5", DecimalType(5, 2)) == (None, None)
    assert bounds(DataType(name="decimal", precision=5, scale=2), "-5", "1E+2", DecimalType(5, 2)) == \
        (Decimal("-5.00"), Decimal("100.00"))

"""The statistics the Python writer records, partly read from its files' Parquet footers, are
exactly those computed from the rows (StatsAccumulator), in their stored form too: for every type
a table holds, with nulls, NaN, signed zeros, strings too long for a footer, zoned and nanosecond
timestamps, decimals and nested columns, over files of one or many batches and row groups."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sleeper_spark.datafiles.footer_bounds import FOOTER_STRING_BYTES
from sleeper_spark.datafiles.stats import StatsAccumulator, WrittenFileStats
from sleeper_spark.datafiles.writer import DataFileWriter
from sleeper_spark.models import ColumnStats, TableSchema
from sleeper_spark.storage import LocalObjectStore

UTC = dt.timezone.utc
D = decimal.Decimal
EPOCH = dt.datetime(1970, 1, 1)

# Every column type a table holds (models/schema.py), the timestamp units and zones included.
ARROW = pa.schema([
    ("b", pa.bool_()), ("i8", pa.int8()), ("i16", pa.int16()), ("i32", pa.int32()), ("i64", pa.int64()),
    ("f32", pa.float32()), ("f64", pa.float64()), ("s", pa.string()), ("bin", pa.binary()), ("d", pa.date32()),
    ("ts_s", pa.timestamp("s")), ("ts_ms", pa.timestamp("ms", "UTC")), ("ts_us", pa.timestamp("us", "Europe/Paris")),
    ("ts_ns", pa.timestamp("ns", "-07:00")), ("ts_ns_naive", pa.timestamp("ns")),
    ("dec", pa.decimal128(38, 10)), ("dec_small", pa.decimal128(5, 2)),
    ("tags", pa.list_(pa.string())), ("point", pa.struct([("x", pa.int32())])),
    ("attrs", pa.map_(pa.string(), pa.int64())),
])


def stored(stats: dict[str, ColumnStats]) -> str:
    """The stats as the log stores them (JSON text): -0.0 and 0.0, 1 and 1.0 differ here."""
    return json.dumps({name: s.model_dump(mode="json") for name, s in stats.items()})


def from_rows(table: pa.Table) -> dict[str, ColumnStats]:
    accumulator = StatsAccumulator(table.schema)
    accumulator.update(table)
    return accumulator.result()


def written(table: pa.Table, batch_rows: list[int], row_group_rows: int | None = None) -> dict[str, ColumnStats]:
    """The stats WrittenFileStats gives for ``table`` written in batches of ``batch_rows`` (each
    batch as row groups of ``row_group_rows``, by default one)."""
    sink = pa.BufferOutputStream()
    writer = pq.ParquetWriter(sink, table.schema, compression="zstd")
    stats = WrittenFileStats(table.schema)
    offset = 0
    for rows in batch_rows:
        batch = table.slice(offset, rows)
        writer.write_table(batch, row_group_size=row_group_rows)
        stats.update(batch)
        offset += rows
    writer.close()
    return stats.result(writer.writer.metadata)


_INT64 = st.integers(-2**63, 2**63 - 1)
_FLOAT = st.one_of(st.sampled_from([math.nan, -0.0, 0.0, math.inf, -math.inf]), st.floats(allow_nan=False))
_TEXT = st.one_of(st.text(max_size=6), st.just(""), st.just("z" * (FOOTER_STRING_BYTES + 1)),
                  st.just("é" * (FOOTER_STRING_BYTES // 2)), st.just("\U0001f600"), st.just("a" * FOOTER_STRING_BYTES))
# Years 2 to 9998 (a datetime holds 1 to 9999, and a zone may move an instant by a day).
_SECONDS = st.integers(-62_104_060_800, 253_370_764_800)
_NANOS = st.integers(-2**62, 2**62)
_DECIMAL = st.integers(-(10**38) + 1, 10**38 - 1).map(lambda n: D(f"{n}E-10"))  # exact: no context rounding
_SMALL_DECIMAL = st.integers(-99999, 99999).map(lambda n: D(f"{n}E-2"))
_DAYS = st.integers(-700_000, 2_900_000)


def _or_null(values: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return st.one_of(st.none(), values)


ROW = st.fixed_dictionaries({
    "b": _or_null(st.booleans()), "i8": _or_null(st.integers(-128, 127)), "i16": _or_null(st.integers(-2**15, 2**15 - 1)),
    "i32": _or_null(st.integers(-2**31, 2**31 - 1)), "i64": _or_null(_INT64),
    "f32": _or_null(_FLOAT.map(lambda f: f if math.isnan(f) or math.isinf(f) or abs(f) < 3e38 else 1.5)),
    "f64": _or_null(_FLOAT), "s": _or_null(_TEXT), "bin": _or_null(st.binary(max_size=4)),
    "d": _or_null(_DAYS), "ts_s": _or_null(_SECONDS), "ts_ms": _or_null(_SECONDS.map(lambda s: s * 1000 + 999)),
    "ts_us": _or_null(_SECONDS.map(lambda s: s * 10**6 - 1)),
    "ts_ns": _or_null(_NANOS), "ts_ns_naive": _or_null(_NANOS),
    "dec": _or_null(_DECIMAL), "dec_small": _or_null(_SMALL_DECIMAL),
    "tags": _or_null(st.lists(_or_null(st.text(max_size=3)), max_size=2)),
    "point": _or_null(st.fixed_dictionaries({"x": _or_null(st.integers(-5, 5))})),
    "attrs": _or_null(st.lists(st.tuples(st.text(max_size=2), _or_null(_INT64)), max_size=2)),
})


def table_of(rows: list[dict[str, object]]) -> pa.Table:
    """The rows as a table of ARROW (integers stand for dates, times as their unit's count)."""
    columns = {}
    for field in ARROW:
        values = [row[field.name] for row in rows]
        if pa.types.is_date32(field.type) or pa.types.is_timestamp(field.type):
            storage = pa.int32() if pa.types.is_date32(field.type) else pa.int64()
            columns[field.name] = pa.array(values, storage).cast(field.type)
        else:
            columns[field.name] = pa.array(values, field.type)
    return pa.table(columns, schema=ARROW)


@st.composite
def batches(draw: st.DrawFn) -> tuple[pa.Table, list[int], int | None]:
    rows = draw(st.lists(ROW, min_size=1, max_size=30))
    sizes: list[int] = []
    while sum(sizes) < len(rows):
        sizes.append(min(draw(st.integers(1, 12)), len(rows) - sum(sizes)))
    return table_of(rows), sizes, draw(st.one_of(st.none(), st.integers(1, 5)))


@settings(max_examples=200, deadline=None)
@given(batches())
def test_written_stats_are_those_of_the_rows_in_their_stored_form(case: tuple[pa.Table, list[int], int | None]) -> None:
    # Given rows of every type, written in batches, each in one or several row groups
    table, sizes, row_group_rows = case

    # When the file's stats are taken from its footer where it holds them, else from the rows
    stats = written(table, sizes, row_group_rows)

    # Then they are exactly those computed from all the rows, down to the stored text
    assert stored(stats) == stored(from_rows(table))


@pytest.mark.parametrize(("name", "values"), [
    ("i64", [None, None]),
    ("s", ["short", "x" * (FOOTER_STRING_BYTES + 10), None]),
    ("s", ["x" * FOOTER_STRING_BYTES, "y" * FOOTER_STRING_BYTES]),
    ("s", ["é", "e\u0301", "\U0001f600", "\uffff", "", "Zebra"]),
    ("f64", [0.0, -0.0, 1.0]), ("f64", [-0.0, 0.0]), ("f64", [math.nan, 0.0]), ("f32", [math.nan, math.nan, None]),
    ("dec", [D("-0.0000000001"), D("12345678901234567890.1234567890"), D("-99999999999999999999.9999999999")]),
    ("dec_small", [D("-0.01"), D("0.00"), None]),
    ("ts_ns", [1_999, -5_001, None]), ("ts_ns_naive", [-1, 1]), ("ts_s", [-1, 253_370_764_800]),
    ("ts_us", [0, 15_552_000_000_000]),  # a Paris winter and summer instant: two offsets
    ("d", [-719_162, 2_932_896]),  # 0001-01-01 and 9999-12-31
    ("b", [False, None]), ("i8", [-128, 127]),
])
def test_edge_values_give_the_rows_stats(name: str, values: list[object]) -> None:
    rows = [{field.name: None for field in ARROW} | {name: value} for value in values]
    table = table_of(rows)

    for sizes in ([len(values)], [1] * len(values)):
        assert stored(written(table, sizes)) == stored(from_rows(table)), sizes


def test_a_long_string_costs_its_batch_only_the_footer(tmp_path: Path) -> None:
    # Given a file whose second batch holds a string longer than a footer keeps
    table = table_of([{field.name: None for field in ARROW} | {"s": value}
                      for value in ["b", "a" * (FOOTER_STRING_BYTES + 1), "c"]])

    # When it is written in batches of one row
    stats = written(table, [1, 1, 1])["s"]

    # Then its bounds still take in every value, the long one whole
    assert (stats.min, stats.max) == ("a" * (FOOTER_STRING_BYTES + 1), "c")


def test_files_of_the_writer_record_the_rows_stats(tmp_path: Path) -> None:
    # Given rows of every type, in three partitions
    rows = [{field.name: None for field in ARROW} | {"i64": i, "s": f"v{i % 3}", "f64": i / 7 if i % 5 else math.nan,
                                                      "ts_us": i * 10**9, "dec": D(i).scaleb(-10)}
            for i in range(600)]
    table = table_of(rows)
    schema = TableSchema.from_arrow(ARROW)

    # When the writer writes them in small row groups, several partitions at once
    refs = DataFileWriter(LocalObjectStore(tmp_path), "t", schema, ("s",), "t", row_group_rows=64,
                          threads=3).write_all(table.to_batches(max_chunksize=50))

    # Then each file's stats are those of its own rows
    assert sorted(str(ref.partition["s"]) for ref in refs) == ["v0", "v1", "v2"]
    for ref in refs:
        rows_of_file = pq.ParquetFile(tmp_path / "t" / ref.path).read()
        assert stored(ref.column_stats) == stored(from_rows(rows_of_file))


def test_a_flat_column_named_like_a_nested_field_gets_its_own_bounds() -> None:
    # Given a struct p with a field x, and a flat column named "p.x": one footer path for both
    table = pa.table({"p": pa.array([{"x": -100}, {"x": 100}]), "p.x": pa.array([5, 7])})

    # When the file's stats are taken, Then "p.x" has the flat column's bounds
    assert written(table, [2])["p.x"] == ColumnStats(min=5, max=7, null_count=0)
    assert stored(written(table, [1, 1])) == stored(from_rows(table))

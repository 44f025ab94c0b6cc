"""Statistics taken from a Parquet footer mean what the Python writer's mean: the footer of a file
with many row groups gives the same min, max and null count as the file's rows."""

from __future__ import annotations

import math

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from sleeper_spark.datafiles.stats import StatsAccumulator
from sleeper_spark.models import TableSchema
from sleeper_spark.spark.native.footers import file_ref

SCHEMA = pa.schema([("n", pa.int64()), ("f", pa.float64()), ("s", pa.string())])


def parquet_bytes(table: pa.Table, row_group_rows: int) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, row_group_size=row_group_rows)
    return sink.getvalue().to_pybytes()


def rows_stats(table: pa.Table) -> dict[str, object]:
    accumulator = StatsAccumulator(table.schema)
    accumulator.update(table)
    return accumulator.result()


def test_a_row_group_with_as_many_nulls_as_values_keeps_its_values_in_the_bounds() -> None:
    # Given row groups of 4 rows, the first holding 2 values and 2 nulls, the later ones large values
    table = pa.table({"n": [1, None, 3, None] + [1000 + i for i in range(8)]}, schema=pa.schema([("n", pa.int64())]))
    schema = TableSchema.from_arrow(table.schema)

    # When the file's statistics are read from its footer
    stats = file_ref(parquet_bytes(table, 4), "f.parquet", schema, (), "t").column_stats["n"]

    # Then the small values of the null-heavy row group are inside the bounds
    assert (stats.min, stats.max, stats.null_count) == (1, 1007, 2)


def test_a_row_group_of_nulls_only_adds_its_nulls_and_no_bounds() -> None:
    table = pa.table({"n": [None] * 4 + [5, 6, 7, 8]}, schema=pa.schema([("n", pa.int64())]))
    schema = TableSchema.from_arrow(table.schema)

    stats = file_ref(parquet_bytes(table, 4), "f.parquet", schema, (), "t").column_stats["n"]

    assert (stats.min, stats.max, stats.null_count) == (5, 8, 4)


values = {
    "n": st.one_of(st.none(), st.integers(-2**63, 2**63 - 1)),
    "f": st.one_of(st.none(), st.sampled_from([math.nan, -0.0, 0.0, math.inf, -math.inf]),
                   st.floats(allow_nan=False, width=64)),
    "s": st.one_of(st.none(), st.text(max_size=6), st.just("z" * 5000)),
}


@settings(max_examples=150, deadline=None)
@given(st.lists(st.fixed_dictionaries(values), min_size=1, max_size=40), st.integers(1, 7))
def test_footer_statistics_are_those_of_the_rows(rows: list[dict[str, object]], row_group_rows: int) -> None:
    # Given a file of random rows (nulls, NaN, signed zeros, strings too long for a footer) in small row groups
    table = pa.Table.from_pylist(rows, schema=SCHEMA)
    schema = TableSchema.from_arrow(SCHEMA)

    # When its FileRef is made from its footer
    ref = file_ref(parquet_bytes(table, row_group_rows), "f.parquet", schema, (), "t")

    # Then every column's statistics are those the Python writer computes from the rows
    assert ref.row_count == table.num_rows
    expected = rows_stats(table)
    for name in SCHEMA.names:
        got, want = ref.column_stats[name], expected[name]
        assert got.null_count == want.null_count, name  # type: ignore[attr-defined]
        assert got.min == want.min and got.max == want.max, (name, got, want)  # type: ignore[attr-defined]

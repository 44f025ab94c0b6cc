"""Both published formats against the table itself, with ClickHouse (``chdb``) as the independent reader.

Random tables as in tests/iceberg/test_duckdb_differential.py (appends, overwrites, deletes,
compactions, added columns; null partition values, NaN and -0.0, non-BMP strings), publishing
Iceberg and Delta after each commit. ClickHouse's ``icebergLocal`` reads every version (by its
snapshot id, which is the sleeper version) and ``deltaLakeLocal`` the newest, to exactly
``t.scan(version=v)``; ``IS NULL`` and ``IS NOT NULL`` on every column and a range filter select
exactly the rows they select in Python. ClickHouse's dates and times hold the years 1900 to 2299
only (``Date32``, ``DateTime64``), so values outside them, which the random tables hold, are
compared as ClickHouse clamps them. ``SLEEPER_DIFFERENTIAL_ENGINES=N`` runs N random tables
(default 1); ``SLEEPER_DIFFERENTIAL_SEED=K`` shifts the seeds.
"""

from __future__ import annotations

import datetime as dt
import os
import random
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tests.delta.test_engine_differential import filters
from tests.fixtures.iceberg_predicates import Row, multiset
from tests.iceberg.test_duckdb_differential import ADDED, random_history
from tests.iceberg.test_iceberg_differential import difference

chdb = pytest.importorskip("chdb")

TABLES = int(os.environ.get("SLEEPER_DIFFERENTIAL_ENGINES", "1"))
SEED = int(os.environ.get("SLEEPER_DIFFERENTIAL_SEED", "0"))
# What ClickHouse's Date32 and DateTime64 hold.
FIRST_DAY, LAST_DAY = dt.date(1900, 1, 1), dt.date(2299, 12, 31)


@contextmanager
def clickhouse_files() -> Iterator[None]:
    """ClickHouse reads files under its user files path, the working directory: make that the root."""
    before = os.getcwd()
    os.chdir("/")
    try:
        yield
    finally:
        os.chdir(before)


def query(sql: str) -> pa.Table:
    with clickhouse_files():
        result: pa.Table = chdb.query(sql, "ArrowTable")
    return result


def in_clickhouse_range(table: pa.Table) -> pa.Table:
    """``table`` with its dates and times as ClickHouse holds them (clamped to 1900-2299), naive times as UTC."""
    columns = []
    for field, column in zip(table.schema, table.columns, strict=True):
        if pa.types.is_date32(field.type) or pa.types.is_timestamp(field.type):
            column = pa.array([_clamped(v) for v in column.to_pylist()], pa.timestamp("us") if
                              pa.types.is_timestamp(field.type) else field.type)
        columns.append(column)
    return pa.table(columns, names=table.column_names)


def _clamped(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        naive = value.astimezone(dt.timezone.utc).replace(tzinfo=None) if value.tzinfo else value
        return min(max(naive, dt.datetime.combine(FIRST_DAY, dt.time())),
                   dt.datetime.combine(LAST_DAY, dt.time(23, 59, 59, 999999)))
    return min(max(value, FIRST_DAY), LAST_DAY)


def ids(values: list[Any]) -> Counter[Row]:
    return Counter((i,) for i in values)


def check(source: str, expected: pa.Table, rng: random.Random, what: str) -> None:
    """``source`` (a ClickHouse table function, with its settings) reads as ``expected``, filtered too."""
    table_function, _, settings = source.partition(" SETTINGS ")
    settings = f" SETTINGS {settings}" if settings else ""
    names = expected.schema.names
    got = query(f"SELECT * FROM {table_function}{settings}")
    assert sorted(got.schema.names) == sorted(names), what
    missing, extra = difference(multiset(in_clickhouse_range(expected), names),
                                multiset(in_clickhouse_range(got.select(names)), names))
    assert not missing and not extra, f"{what}: ClickHouse lacks {missing} and adds {extra}"
    for condition, truth in filters(expected.to_pylist(), names, rng):
        if "BETWEEN" in condition and any(c in condition for c in ('"d"', '"ts"', '"n"')):
            continue  # a range on a clamped column means something else to ClickHouse
        found = ids(query(f"SELECT id FROM {table_function} WHERE {condition}{settings}").column("id").to_pylist())
        assert found == truth, (f"{what}: {condition} reads {sum(found.values())} rows through ClickHouse, "
                                f"{sum(truth.values())} in the table")


@pytest.mark.parametrize("index", range(TABLES))
def test_every_iceberg_version_and_the_newest_delta_version_read_the_same_through_clickhouse(
        tmp_path: Path, index: int) -> None:
    # Given a random table with null partition values and columns added after files were written,
    # publishing both formats after each commit
    rng = random.Random(f"clickhouse-{SEED}-{index}")
    table = random_history(tmp_path, rng, "iceberg_publish", "delta_publish")
    assert set(ADDED) <= set(table.schema.names)
    root = table.location.removeprefix("file://")
    # Then ClickHouse reads every Iceberg version, and filters its rows, as the table does
    for snapshot in table.history():
        check(f"icebergLocal('{root}') SETTINGS iceberg_snapshot_id = {snapshot.version}",
              table.scan(version=snapshot.version), rng, f"Iceberg version {snapshot.version}")
    # And the newest Delta version
    check(f"deltaLakeLocal('{root}')", table.scan(), rng, "the newest Delta version")

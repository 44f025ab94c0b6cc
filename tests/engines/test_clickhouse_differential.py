"""Both published formats against the table itself, with ClickHouse (``chdb``) as the independent reader.

Random tables as in tests/iceberg/test_duckdb_differential.py (appends, overwrites, deletes,
compactions, added columns; null partition values, NaN and -0.0, non-BMP strings), publishing
Iceberg and Delta after each commit. ClickHouse's ``icebergLocal`` reads every version (by its
snapshot id, which is the sleeper version) and ``deltaLakeLocal`` the newest, to exactly
``t.scan(version=v)``; ``IS NULL`` and ``IS NOT NULL`` on every column and a range filter select
exactly the rows they select in Python. ClickHouse's dates and times hold the years 1900 to 2299
only (``Date32``, ``DateTime64``), so values outside them, which the random tables hold, are
compared as ClickHouse clamps them. On DynamoDB Local and SeaweedFS, ClickHouse (``icebergS3``,
``deltaLake``), delta-rs and DuckDB (``httpfs``) read the published formats from S3. ``SLEEPER_DIFFERENTIAL_ENGINES=N`` runs N random tables
(default 2); ``SLEEPER_DIFFERENTIAL_SEED=K`` shifts the seeds.
"""

from __future__ import annotations

import datetime as dt
import os
import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import sleeper_spark as ss
from tests.delta.test_engine_differential import duckdb_with_delta, filters, ids
from tests.delta.test_publishing_races import storage_options
from tests.fixtures.catalogs import make_catalog
from tests.fixtures.iceberg_predicates import multiset
from tests.fixtures.servers import TEST_CREDENTIALS
from tests.iceberg.test_duckdb_differential import ADDED, random_history
from tests.iceberg.test_iceberg_differential import SCHEMA, difference, every_operation
from tests.reliability.budget import LONG_RUN

chdb = pytest.importorskip("chdb")
deltalake = pytest.importorskip("deltalake")

# One random table by default, two in a long run (each is one engine reading every version).
TABLES = int(os.environ.get("SLEEPER_DIFFERENTIAL_ENGINES", "2" if LONG_RUN else "1"))
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


@pytest.fixture(scope="module")
def clickhouse() -> Iterator[Any]:
    """One in-memory ClickHouse for the module (a query through ``chdb.query`` starts a new one each time)."""
    with clickhouse_files():
        connection = chdb.connect(":memory:")
    yield connection
    connection.close()


def query(connection: Any, sql: str) -> pa.Table:
    with clickhouse_files():
        result: pa.Table = connection.query(sql, "ArrowTable")
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


def check(connection: Any, source: str, expected: pa.Table, rng: random.Random, what: str,
          filtered: bool = True) -> None:
    """``source`` (a ClickHouse table function, with its settings) reads as ``expected``, and
    (``filtered``) so do the filters on it."""
    table_function, _, settings = source.partition(" SETTINGS ")
    settings = f" SETTINGS {settings}" if settings else ""
    names = expected.schema.names
    got = query(connection, f"SELECT * FROM {table_function}{settings}")
    assert sorted(got.schema.names) == sorted(names), what
    missing, extra = difference(multiset(in_clickhouse_range(expected), names),
                                multiset(in_clickhouse_range(got.select(names)), names))
    assert not missing and not extra, f"{what}: ClickHouse lacks {missing} and adds {extra}"
    for condition, truth in filters(expected.to_pylist(), names, rng) if filtered else []:
        if "BETWEEN" in condition and any(c in condition for c in ('"d"', '"ts"', '"n"')):
            continue  # a range on a clamped column means something else to ClickHouse
        read = query(connection, f"SELECT id FROM {table_function} WHERE {condition}{settings}")
        found = ids(read.column("id").to_pylist())
        assert found == truth, (f"{what}: {condition} reads {sum(found.values())} rows through ClickHouse, "
                                f"{sum(truth.values())} in the table")


@pytest.mark.parametrize("index", range(TABLES))
def test_every_iceberg_version_and_the_newest_delta_version_read_the_same_through_clickhouse(
        clickhouse: Any, tmp_path: Path, index: int) -> None:
    # Given a random table with null partition values and columns added after files were written,
    # publishing both formats after each commit
    rng = random.Random(f"clickhouse-{SEED}-{index}")
    table = random_history(tmp_path, rng, "iceberg_publish", "delta_publish")
    assert set(ADDED) <= set(table.schema.names)
    root = table.location.removeprefix("file://")
    # Then ClickHouse reads every Iceberg version, and filters its rows, as the table does
    for snapshot in table.history():
        check(clickhouse, f"icebergLocal('{root}') SETTINGS iceberg_snapshot_id = {snapshot.version}",
              table.scan(version=snapshot.version), rng, f"Iceberg version {snapshot.version}")
    # And the newest Delta version
    check(clickhouse, f"deltaLakeLocal('{root}')", table.scan(), rng, "the newest Delta version")


@pytest.mark.integration
def test_clickhouse_duckdb_and_delta_rs_read_both_formats_from_s3(clickhouse: Any, request: pytest.FixtureRequest,
                                                          tmp_path: Path) -> None:
    # Given a table on DynamoDB Local and SeaweedFS, built by every kind of commit, publishing both formats
    catalog = make_catalog("aws", request, tmp_path)
    table = catalog.create_table("ops", SCHEMA, partition_by=["p"],
                                 properties={"iceberg.publish": "true", "delta.publish": "true"})
    every_operation(table)
    assert table.publishing.flush(timeout=60) and table.location.startswith("s3://")
    endpoint = request.getfixturevalue("seaweedfs_s3")
    url = f"{endpoint.rstrip('/')}/{table.location.removeprefix('s3://').rstrip('/')}/"
    keys = f"'{TEST_CREDENTIALS['AWS_ACCESS_KEY_ID']}', '{TEST_CREDENTIALS['AWS_SECRET_ACCESS_KEY']}'"
    rng = random.Random("clickhouse-s3")
    # Then ClickHouse reads every Iceberg version, and the newest Delta version, from S3 as the table
    # does (filtered: the newest; the other test filters every version)
    newest = table.latest().version
    for snapshot in table.history():
        check(clickhouse, f"icebergS3('{url}', {keys}) SETTINGS iceberg_snapshot_id = {snapshot.version}",
              table.scan(version=snapshot.version), rng, f"Iceberg version {snapshot.version} on S3",
              filtered=snapshot.version == newest)
    check(clickhouse, f"deltaLake('{url}', {keys})", table.scan(), rng, "the newest Delta version on S3")
    # And DuckDB reads the newest version of both from S3
    check_duckdb_on_s3(table, endpoint)
    # And delta-rs reads every Delta version from S3
    options = storage_options(catalog)
    for snapshot in table.history():
        read = deltalake.DeltaTable(table.location, version=snapshot.version, storage_options=options)
        expected = table.scan(version=snapshot.version)
        names = expected.schema.names
        missing, extra = difference(multiset(expected, names), multiset(read.to_pyarrow_table().select(names), names))
        assert not missing and not extra, f"version {snapshot.version}: delta-rs lacks {missing} and adds {extra}"


def check_duckdb_on_s3(table: ss.Table, endpoint: str) -> None:
    """DuckDB 1.4 (httpfs, with the S3 test server as its endpoint) reads the newest Iceberg and Delta versions."""
    connection = duckdb_with_delta()
    connection.execute("LOAD httpfs")
    connection.execute("LOAD iceberg")
    host = endpoint.removeprefix("http://").rstrip("/")
    connection.execute(f"""CREATE SECRET seaweedfs (TYPE s3, KEY_ID '{TEST_CREDENTIALS["AWS_ACCESS_KEY_ID"]}',
                           SECRET '{TEST_CREDENTIALS["AWS_SECRET_ACCESS_KEY"]}', REGION 'us-east-1',
                           ENDPOINT '{host}', URL_STYLE 'path', USE_SSL false)""")
    expected = table.scan()
    names = expected.schema.names
    for scan in (f"iceberg_scan('{table.iceberg_metadata()}')", f"delta_scan('{table.location.rstrip('/')}')"):
        got = connection.execute(f"SELECT * FROM {scan}").fetch_arrow_table()
        missing, extra = difference(multiset(expected, names), multiset(got.select(names), names))
        assert not missing and not extra, f"{scan}: DuckDB lacks {missing} and adds {extra}"

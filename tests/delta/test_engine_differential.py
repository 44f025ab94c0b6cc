"""The published Delta log against the table itself, with delta-rs and DuckDB as the independent readers.

Random tables built by appends, overwrites, deletes, compactions and added columns (null
partition values, NaN and -0.0 floats, long and non-BMP strings, years 1 to 9999 among the
values; see tests/fixtures/iceberg_predicates.py) read, version by version through delta-rs
(``deltalake``), to exactly ``t.scan(version=v)``; ``IS NULL`` and ``IS NOT NULL`` on every
column and a range filter, through delta-rs's SQL engine (DataFusion, which prunes files by the
published stats) and DuckDB's ``delta_scan`` on the newest version, select exactly the rows they
select in Python. A published bound or null count that is wrong makes a reader skip a file
holding rows that match. A table of every kind of commit with widened columns (int8 to int32,
float32 to float64, a wider decimal) reads right through both too. ``SLEEPER_DIFFERENTIAL_ENGINES=N`` runs N random tables (default 2);
``SLEEPER_DIFFERENTIAL_SEED=K`` shifts the seeds.
"""

from __future__ import annotations

import os
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import sleeper_spark as ss
from tests.fixtures.iceberg_predicates import Row, multiset
from tests.iceberg.test_duckdb_differential import ADDED, RANGED, literal, random_history
from tests.iceberg.test_iceberg_differential import SCHEMA, difference, every_operation
from tests.reliability.budget import LONG_RUN

deltalake = pytest.importorskip("deltalake")
duckdb = pytest.importorskip("duckdb")
duckdb_ext = pytest.importorskip("duckdb_ext")  # the extension files of duckdb-ext-delta

# One random table by default, two in a long run (each is one engine reading every version).
TABLES = int(os.environ.get("SLEEPER_DIFFERENTIAL_ENGINES", "2" if LONG_RUN else "1"))
SEED = int(os.environ.get("SLEEPER_DIFFERENTIAL_SEED", "0"))


def duckdb_with_delta() -> Any:
    """DuckDB with the delta extension loaded from the files its PyPI package ships (no download)."""
    extensions = os.path.join(next(iter(duckdb_ext.__path__)), "extensions")
    connection = duckdb.connect(config={"extension_directory": extensions, "allow_unsigned_extensions": True,
                                        "autoinstall_known_extensions": False})
    connection.execute("LOAD delta")
    return connection


def ids(values: list[Any]) -> Counter[Row]:
    return Counter((i,) for i in values)


def filters(rows: list[dict[str, Any]], names: list[str], rng: random.Random) -> list[tuple[str, Counter[Row]]]:
    """SQL conditions with the ids of the rows each selects: null and non-null on every column, a range."""
    found = [(f'"{name}" {test}', ids([row["id"] for row in rows if (row[name] is None) == (test == "IS NULL")]))
             for name in names for test in ("IS NULL", "IS NOT NULL")]
    column = rng.choice([n for n in RANGED if n in names])
    values = sorted(v for row in rows if (v := row[column]) is not None)
    if values:
        low, high = sorted((rng.choice(values), rng.choice(values)))
        found.append((f'"{column}" BETWEEN {literal(low, column)} AND {literal(high, column)}',
                      ids([row["id"] for row in rows if row[column] is not None and low <= row[column] <= high])))
    return found


def check_version(table: ss.Table, version: int, rng: random.Random) -> None:
    expected = table.scan(version=version)
    names = expected.schema.names
    delta = deltalake.DeltaTable(table.delta_location(), version=version)
    got = delta.to_pyarrow_table()
    assert sorted(got.schema.names) == sorted(names), version
    missing, extra = difference(multiset(expected, names), multiset(got, names))
    assert not missing and not extra, f"version {version}: delta-rs lacks {missing} and adds {extra}"
    query = deltalake.QueryBuilder().register("t", delta)
    for condition, truth in filters(expected.to_pylist(), names, rng):
        result = pa.RecordBatchReader.from_stream(query.execute(f"SELECT id FROM t WHERE {condition}")).read_all()
        found = ids(result.column("id").to_pylist())
        assert found == truth, (f"version {version}: {condition} reads {sum(found.values())} rows through delta-rs, "
                                f"{sum(truth.values())} in the table")


def check_newest_in_duckdb(table: ss.Table, rng: random.Random) -> None:
    expected = table.scan()
    names = expected.schema.names
    connection = duckdb_with_delta()
    scan = f"delta_scan('{table.delta_location()}')"
    got = connection.execute(f"SELECT * FROM {scan}").fetch_arrow_table()
    missing, extra = difference(multiset(expected, names), multiset(got.select(names), names))
    assert not missing and not extra, f"DuckDB lacks {missing} and adds {extra}"
    for condition, truth in filters(expected.to_pylist(), names, rng):
        found = ids(connection.execute(f"SELECT id FROM {scan} WHERE {condition}").fetch_arrow_table()
                    .column("id").to_pylist())
        assert found == truth, (f"{condition} reads {sum(found.values())} rows through DuckDB, "
                                f"{sum(truth.values())} in the table")


@pytest.mark.parametrize("index", range(TABLES))
def test_every_version_reads_the_same_through_delta_rs_and_duckdb(tmp_path: Path, index: int) -> None:
    # Given a random table with null partition values and columns added after files were written,
    # publishing its Delta log after each commit
    rng = random.Random(f"delta-{SEED}-{index}")
    table = random_history(tmp_path, rng, "delta_publish")
    assert set(ADDED) <= set(table.schema.names)
    # Then delta-rs reads every version, and filters its null and non-null rows, as the table does
    for snapshot in table.history():
        check_version(table, snapshot.version, rng)
    # And DuckDB reads the newest version so
    check_newest_in_duckdb(table, rng)
    # And so does every reader after the log is published afresh
    table.publish_delta(rebuild=True)
    for snapshot in table.history()[-3:]:
        check_version(table, snapshot.version, rng)
    check_newest_in_duckdb(table, rng)


def test_every_operation_and_widened_columns_read_the_same_through_delta_rs_and_duckdb(tmp_path: Path) -> None:
    # Given a table built by every kind of commit, with int8 -> int32, float32 -> float64 and
    # decimal(9, 2) -> decimal(12, 2) widened after files were written
    table = ss.Catalog.local(str(tmp_path / "wh"), delta_publish=True).create_table(
        "ops", SCHEMA, partition_by=["p"])
    every_operation(table)
    assert table.publishing.flush(timeout=60)
    # Then delta-rs reads every version as the table does, and DuckDB the newest
    for snapshot in table.history():
        expected = table.scan(version=snapshot.version)
        names = expected.schema.names
        got = deltalake.DeltaTable(table.delta_location(), version=snapshot.version).to_pyarrow_table()
        missing, extra = difference(multiset(expected, names), multiset(got.select(names), names))
        assert not missing and not extra, f"version {snapshot.version}: delta-rs lacks {missing} and adds {extra}"
    expected = table.scan()
    names = expected.schema.names
    got = duckdb_with_delta().execute(f"SELECT * FROM delta_scan('{table.delta_location()}')").fetch_arrow_table()
    assert got.schema.field("i8").type == pa.int32() and got.schema.field("dec").type == pa.decimal128(12, 2)
    missing, extra = difference(multiset(expected, names), multiset(got.select(names), names))
    assert not missing and not extra, f"DuckDB lacks {missing} and adds {extra}"

"""The published Iceberg metadata against the table itself, with DuckDB 1.4 as the independent reader.

DuckDB prunes data files by a manifest's counts and bounds, and before 1.5 it takes a column
missing from a file's counts as holding no nulls (duckdb-iceberg#782): without a count for every
column, ``IS NULL`` on a partition column or on a column added after a file was written finds
nothing in that file. Random tables built by appends, overwrites, deletes, compactions and added
columns (null partition values, NaN and -0.0 floats among the values) read, version by version
through that version's metadata JSON, to exactly ``t.scan(version=v)``; ``IS NULL`` and
``IS NOT NULL`` on every column and a range filter select exactly the rows they select in Python.
``SLEEPER_DIFFERENTIAL_ENGINES=N`` runs N random tables (default 2); ``SLEEPER_DIFFERENTIAL_SEED=K``
shifts the seeds.
"""

from __future__ import annotations

import os
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import sleeper_spark as ss
from tests.fixtures.iceberg_predicates import Row, chunk, multiset, random_columns, value
from tests.iceberg.test_iceberg_differential import difference
from tests.reliability.budget import LONG_RUN

duckdb = pytest.importorskip("duckdb")
duckdb_ext = pytest.importorskip("duckdb_ext")  # the extension files of duckdb-ext-iceberg and -avro

# One random table by default, two in a long run (each is one engine reading every version).
TABLES = int(os.environ.get("SLEEPER_DIFFERENTIAL_ENGINES", "2" if LONG_RUN else "1"))
SEED = int(os.environ.get("SLEEPER_DIFFERENTIAL_SEED", "0"))
# Columns added after the first files are written: one float (its NaN and -0.0), one string.
ADDED = {"late_f": pa.float64(), "late_s": pa.string()}
# Columns a range filter is drawn on: ordered alike by DuckDB and Python (not floats: DuckDB
# orders NaN above every number, Iceberg leaves it out of the bounds).
RANGED = ("id", "i8", "i16", "i32", "l", "d", "dec")


def connect() -> Any:
    """DuckDB with the iceberg extension loaded from the files its PyPI package ships (no download)."""
    extensions = os.path.join(next(iter(duckdb_ext.__path__)), "extensions")
    if not os.path.isdir(os.path.join(extensions, f"v{duckdb.__version__}")):  # each matches one release
        pytest.fail(f"duckdb-ext-iceberg has no extension for DuckDB {duckdb.__version__}: {os.listdir(extensions)}")
    connection = duckdb.connect(config={"extension_directory": extensions, "allow_unsigned_extensions": True,
                                        "autoinstall_known_extensions": False})
    connection.execute("LOAD iceberg")
    return connection


def random_history(tmp_path: Path, rng: random.Random, *publish: str) -> ss.Table:
    """A partitioned table of random columns with a random history of every kind of commit, a
    column added in the middle of it, publishing after each commit (``publish``: the catalog
    settings that turn it on; default ``iceberg_publish``)."""
    names, _ = random_columns(rng)
    partition = rng.choice([c for c in ("p", "i8", "d", "b") if c in names] or ["p"])
    names = names if partition in names else [*names, partition]
    first = chunk(rng, names, 0, rng.randint(1, 20))
    settings = {setting: True for setting in publish or ("iceberg_publish",)}
    table = ss.Catalog.local(str(tmp_path / "warehouse"), **settings).create_table(
        "random", first.schema, partition_by=[partition])
    table.write(first)
    next_id, added = first.num_rows, False
    for step in range(rng.randint(8, 12)):
        count = rng.randint(1, 25)
        data = chunk(rng, names, next_id, count)
        if added:
            data = with_added(rng, data)
        next_id += count
        kind = rng.choice(["append", "append", "append", "overwrite", "delete", "compact"])
        if not added and step >= 3 and rng.random() < 0.5:
            table.add_columns(pa.schema(list(ADDED.items())))
            added = True
        elif kind == "overwrite":
            table.write(data, mode="overwrite")
        elif kind == "delete":
            low = rng.randint(0, next_id)
            table.delete_where(None, (pc.field("id") >= low) & (pc.field("id") < low + rng.randint(1, 30)))
        elif kind == "compact":
            table.compact()
        else:
            table.write(data)
    if not added:
        table.add_columns(pa.schema(list(ADDED.items())))
    table.write(with_added(rng, chunk(rng, names, next_id, 7)))
    assert table.publishing.flush(timeout=60)
    return table


def with_added(rng: random.Random, data: pa.Table) -> pa.Table:
    """``data`` with the added columns: floats among NaN, -0.0, 0.0 and null, strings or null."""
    floats = [rng.choice([float("nan"), -0.0, 0.0, 1.5, None]) for _ in range(data.num_rows)]
    strings = [rng.choice([None, "x", value(rng, "s")]) for _ in range(data.num_rows)]
    return data.append_column("late_f", pa.array(floats, pa.float64())).append_column(
        "late_s", pa.array(strings, pa.string()))


def read(connection: Any, metadata: str, where: str = "") -> pa.Table:
    path = metadata.removeprefix("file://")
    return connection.execute(f"SELECT * FROM iceberg_scan('{path}') {where}").fetch_arrow_table()


def ids(rows: list[dict[str, Any]]) -> Counter[Row]:
    return Counter((row["id"],) for row in rows)


def check_version(connection: Any, table: ss.Table, version: int, rng: random.Random) -> None:
    expected = table.scan(version=version)
    names = expected.schema.names
    metadata = table.iceberg_metadata(version)
    got = read(connection, metadata)
    assert sorted(got.schema.names) == sorted(names), version
    missing, extra = difference(multiset(expected, names), multiset(got, names))
    assert not missing and not extra, f"version {version}: DuckDB lacks {missing} and adds {extra}"
    all_rows = expected.to_pylist()
    for name in names:
        for test in ("IS NULL", "IS NOT NULL"):
            truth = ids([row for row in all_rows if (row[name] is None) == (test == "IS NULL")])
            found = Counter((i,) for i in read(connection, metadata, f'WHERE "{name}" {test}').column("id").to_pylist())
            assert found == truth, (f"version {version}: {name} {test} reads {sum(found.values())} rows through "
                                    f"DuckDB, {sum(truth.values())} in the table")
    ranged = [n for n in RANGED if n in names]
    column = rng.choice(ranged)
    values = sorted(v for row in all_rows if (v := row[column]) is not None)
    if values:
        low, high = sorted((rng.choice(values), rng.choice(values)))
        truth = ids([row for row in all_rows if row[column] is not None and low <= row[column] <= high])
        found = Counter((i,) for i in read(connection, metadata, f'WHERE "{column}" BETWEEN $1 AND $2'
                                           .replace("$1", literal(low, column)).replace("$2", literal(high, column)))
                        .column("id").to_pylist())
        assert found == truth, f"version {version}: {column} BETWEEN {low!r} AND {high!r}"


def literal(value: Any, column: str) -> str:
    """A SQL literal of the column's type (dates and decimals typed, so DuckDB compares exactly)."""
    if column == "d":
        return f"DATE '{value.isoformat()}'"
    if column == "dec":
        return f"CAST('{value}' AS DECIMAL(10, 2))"
    return str(value)


@pytest.mark.parametrize("index", range(TABLES))
def test_every_version_reads_the_same_through_duckdb_with_null_filters(tmp_path: Path, index: int) -> None:
    # Given a random table with null partition values and columns added after files were written
    rng = random.Random(f"duckdb-{SEED}-{index}")
    table = random_history(tmp_path, rng)
    assert set(ADDED) <= set(table.schema.names)
    connection = connect()
    # Then DuckDB reads every version, and filters its null and non-null rows, as the table does
    for snapshot in table.history():
        check_version(connection, table, snapshot.version, rng)
    # And so it does after every version is published afresh
    table.publish_iceberg(rebuild=True)
    for snapshot in table.history():
        check_version(connection, table, snapshot.version, rng)

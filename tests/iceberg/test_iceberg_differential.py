"""The published Iceberg metadata against the table itself, with pyiceberg as the independent reader.

Every version of tables built by every kind of commit reads, through its own metadata and as an
older snapshot of the newest metadata, to exactly the rows of ``t.scan(version=v)``. Filtered
scans over random tables return exactly the rows the same filter selects from all rows: a
published bound that is too narrow makes pyiceberg skip a file holding rows that match. The
filters leave out what pyarrow's own Parquet reading gets wrong on any file (test_pyarrow_pruning_loses_float_rows).
``SLEEPER_DIFFERENTIAL_ICEBERG=N`` runs N random tables (default 1, 6 with ``SLEEPER_LONG_RUN=1``);
``SLEEPER_DIFFERENTIAL_SEED=K`` shifts the seeds, for another random run.
"""

from __future__ import annotations

import datetime as dt
import os
import random
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyiceberg.expressions import In, IsNaN, NotEqualTo
from pyiceberg.expressions.visitors import rewrite_not
from pyiceberg.io.pyarrow import expression_to_pyarrow
from pyiceberg.table import StaticTable

import sleeper_spark as ss
from sleeper_spark.log import InMemoryLogBackend
from tests.fixtures.catalogs import leave_pending, make_catalog, memory_catalog
from tests.fixtures.iceberg_predicates import (
    Row,
    bound,
    chunk,
    multiset,
    pyarrow_may_lose_rows,
    random_columns,
    random_predicate,
    selects,
)
from tests.fixtures.servers import TEST_CREDENTIALS
from tests.reliability.budget import LONG_RUN, long_run_only

TABLES = int(os.environ.get("SLEEPER_DIFFERENTIAL_ICEBERG", "6" if LONG_RUN else "1"))
SEED = int(os.environ.get("SLEEPER_DIFFERENTIAL_SEED", "0"))
PREDICATES = 60
UTC = dt.timezone.utc
SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("i8", pa.int8()), ("g", pa.float32()),
                    ("dec", pa.decimal128(9, 2)), ("s", pa.string()), ("ts", pa.timestamp("us", tz="UTC"))])


def rows(first: int, count: int, part: str | None = None, **extra: list[Any]) -> pa.Table:
    """``count`` rows of SCHEMA (then ``extra`` columns) with awkward values, ids from ``first``."""
    ids = list(range(first, first + count))
    floats = [float("nan"), -0.0, 0.0, float("inf"), -1.5, 2.25]
    table = pa.table({
        "id": ids, "p": [part or ("a", "b", None)[i % 3] for i in ids],
        "i8": [(-1) ** i * (i % 128) for i in ids], "g": [floats[i % 6] for i in ids],
        "dec": [Decimal((-1) ** i * (i * 101 % 99999)).scaleb(-2) for i in ids],
        "s": [None if i % 4 == 0 else "é😀" * (i % 40) + str(i) for i in ids],
        "ts": [dt.datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC) + dt.timedelta(days=i * 999) for i in ids],
    }, schema=SCHEMA)
    for name, values in extra.items():
        table = table.append_column(name, pa.array(values))
    return table


def read_every_version(table: ss.Table, properties: dict[str, str] | None = None) -> None:
    """Each version in the history reads through pyiceberg to the rows of ``table.scan(version=v)``:
    through that version's metadata (where it is the current snapshot), and as a snapshot of the
    newest metadata (under its own schema)."""
    properties = properties or {}
    newest = StaticTable.from_metadata(table.iceberg_metadata(), properties=properties)
    for snapshot in table.history():
        version = snapshot.version
        expected = table.scan(version=version)
        names = expected.schema.names
        at_version = StaticTable.from_metadata(table.iceberg_metadata(version), properties=properties)
        current = at_version.current_snapshot()
        assert current is not None and current.snapshot_id == version
        for label, got in (("own metadata", at_version.scan().to_arrow()),
                           ("snapshot of newest", newest.scan(snapshot_id=version).to_arrow())):
            assert sorted(got.schema.names) == sorted(names), (version, snapshot.operation, label)
            missing, extra = difference(multiset(expected, names), multiset(got, names))
            assert not missing and not extra, (f"version {version} ({snapshot.operation}), {label}: "
                                               f"pyiceberg lacks {missing} and adds {extra}")


def difference(expected: Counter[Row], got: Counter[Row]) -> tuple[list[Row], list[Row]]:
    return sorted((expected - got).elements(), key=repr)[:5], sorted((got - expected).elements(), key=repr)[:5]


def every_operation(table: ss.Table) -> None:
    """Commits of every kind through the pyarrow write path, on a table of SCHEMA."""
    table.write(rows(0, 8))
    table.write(rows(8, 8))
    kept = table.write(rows(16, 6), mode="overwrite").version
    table.write(rows(22, 6, part="b"))
    table.write(rows(28, 5, part="a"), mode="overwrite", partition_overwrite_mode="dynamic")
    table.delete_where(None, pc.field("i8") < 0)
    table.delete_where(None, pc.field("p") == "b")
    table.write(rows(40, 7))
    table.compact()
    table.add_columns([pa.field("extra", pa.float64())])
    table.write(rows(50, 4, extra=[float("nan"), -0.0, None, 1e300]))
    table.write(rows(60, 3, extra=[1.0, 2.0, 3.0], late=["x", None, "😀"]), merge_schema=True)
    table.widen_column("i8", pa.int32())
    table.widen_column("g", pa.float64())
    table.widen_column("dec", pa.decimal128(12, 2))
    table.write(rows(70, 5, extra=[0.0] * 5, late=["widened"] * 5).cast(table.schema))
    table.drop_column("s")
    table.set_properties({"owner": "data-team"})
    table.repair_statistics()
    table.restore(kept)
    table.write(rows(80, 4, extra=[-0.0] * 4, late=[None, "é"] * 2).drop_columns(["s"]).cast(table.schema))
    table.compact()


@pytest.mark.parametrize("partition_by", [(), ("p",)], ids=["unpartitioned", "partitioned"])
def test_every_version_of_every_operation_reads_the_same_through_pyiceberg(tmp_path: Path,
                                                                          partition_by: tuple[str, ...]) -> None:
    # Given a table that publishes after each commit (by its property), built by every kind of commit
    catalog = ss.Catalog.local(str(tmp_path / "warehouse"))
    table = catalog.create_table("ops", SCHEMA, partition_by=partition_by)
    table.set_properties({"iceberg.publish": "true"})
    every_operation(table)
    assert len(table.history()) >= 22
    # Then pyiceberg reads each version to the table's own rows
    read_every_version(table)
    # And so it does after every version is published afresh
    table.publish_iceberg(rebuild=True)
    read_every_version(table)


def test_group_commits_read_the_same_through_pyiceberg(memory_backend: InMemoryLogBackend) -> None:
    # Given a publishing table (log in memory, with its fault hooks; files on disk) with two solo
    # appends, then two writers that lost their solo attempts to a rival, recorded their appends
    # and died, and a writer that commits what they left as one group version
    table = memory_catalog(memory_backend, group_commit=True).create_table("grouped", SCHEMA, partition_by=["p"])
    table.set_properties({"iceberg.publish": "true"})
    table.write(rows(0, 3))
    leave_pending(memory_backend, "grouped", [rows(100, 3), rows(200, 4)],
                  lambda writer, attempt: rows(300 + 10 * writer + attempt, 1))
    assert table.group_commit is not None
    group = table.group_commit.commit_pending()
    assert group is not None and len(group.members) == 2
    table.write(rows(400, 2))
    assert table.publishing.flush(timeout=60)
    # Then every version, grouped or not, reads the same through pyiceberg
    read_every_version(table)


@pytest.mark.integration
@pytest.mark.parametrize("kind", ["aws", pytest.param("object_store", marks=long_run_only)])  # one S3 is enough by default
def test_every_version_reads_the_same_through_pyiceberg_on_s3(request: pytest.FixtureRequest, tmp_path: Path,
                                                              kind: str) -> None:
    # Given a table on the test servers, built by every kind of commit, with publishing on
    catalog = make_catalog(kind, request, tmp_path)
    table = catalog.create_table("ops", SCHEMA, partition_by=["p"], properties={"iceberg.publish": "true"})
    every_operation(table)
    assert table.iceberg_metadata().startswith("s3://")
    # Then pyiceberg, reading from S3, reads each version to the table's own rows
    read_every_version(table, {"s3.endpoint": request.getfixturevalue("seaweedfs_s3"),
                               "s3.access-key-id": TEST_CREDENTIALS["AWS_ACCESS_KEY_ID"],
                               "s3.secret-access-key": TEST_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
                               "s3.region": TEST_CREDENTIALS["AWS_REGION"]})


# -- filtered scans over random tables ---------------------------------------------------------

def random_table(tmp_path: Path, rng: random.Random) -> tuple[ss.Table, list[str], int]:
    """A table of random columns written in small chunks (several files per version), then
    partly deleted and partly compacted, so files of every shape and origin are published;
    returns it, its columns and the version before the delete and compaction."""
    names, partition_by = random_columns(rng)
    first = chunk(rng, names, 0, 1)
    table = ss.Catalog.local(str(tmp_path / "warehouse"), iceberg_publish=True).create_table(
        "random", first.schema, partition_by=partition_by)
    table.write(first)
    next_id = 1
    for _ in range(rng.randint(6, 12)):
        count = rng.randint(1, 40)
        table.write(chunk(rng, names, next_id, count))
        next_id += count
    written = table.latest().version
    if rng.random() < 0.5:
        table.delete_where(None, pc.field("id") < rng.randint(0, next_id))
    if rng.random() < 0.3:
        table.compact(target_file_bytes=rng.choice([2000, 20000]))
        table.write(chunk(rng, names, next_id, rng.randint(1, 30)))
    return table, names, written


def check_filtered_scans(table: ss.Table, names: list[str], rng: random.Random, count: int, version: int) -> None:
    """``count`` random filters on ``version`` through pyiceberg select what they select from all rows."""
    static = StaticTable.from_metadata(table.iceberg_metadata(version))
    everything = static.scan().to_arrow()
    assert multiset(everything, names) == multiset(table.scan(version=version), names)
    all_rows = everything.to_pylist()
    schema = static.schema()
    checked = 0
    while checked < count:
        # Negations pushed down, as Iceberg means them: pyiceberg plans files by that meaning but
        # filters rows by Arrow's ``~``, for which NOT (NaN < 1) holds, so a Not over a float
        # comparison would make pyiceberg disagree with itself, whatever the metadata.
        predicate = rewrite_not(random_predicate(rng, all_rows, names, table.partition_by))
        if pyarrow_may_lose_rows(predicate, schema):
            continue  # see test_pyarrow_pruning_loses_float_rows
        checked += 1
        expr = bound(schema, predicate)
        # The truth, by pyarrow's row filter as pyiceberg uses it, and by ours: they must agree
        truth = everything.filter(expression_to_pyarrow(expr))
        ours = [row for row in all_rows if selects(expr, row)]
        assert multiset(truth, names) == multiset(pa.Table.from_pylist(ours, everything.schema), names), predicate
        got = static.scan(row_filter=predicate).to_arrow()
        missing, extra = difference(multiset(truth, names), multiset(got, names))
        assert not missing and not extra, f"{predicate}: pyiceberg's filtered scan lacks {missing} and adds {extra}"


@pytest.mark.parametrize("index", range(TABLES))
def test_filtered_scans_return_what_the_filter_selects_from_all_rows(tmp_path: Path, index: int) -> None:
    # Given a random table with awkward values, published after each commit
    rng = random.Random(f"iceberg-{SEED}-{index}")
    table, names, written = random_table(tmp_path, rng)
    # Then each random filter through pyiceberg selects exactly what it selects from all rows,
    # in the newest version and in the one before rows were deleted and files compacted
    check_filtered_scans(table, names, rng, PREDICATES, table.latest().version)
    check_filtered_scans(table, names, rng, PREDICATES // 3, written)


@pytest.mark.xfail(strict=True, reason="pyarrow's Parquet reader skips row groups by their min/max, which leave "
                   "NaN out, and its is_in tells the min -0.0 of a row group of 0.0 from 0.0, so pyiceberg loses rows "
                   "these filters select; not the metadata's doing: files pyarrow writes itself lose them too")
@pytest.mark.parametrize(("values", "predicate"), [
    ([float("nan"), 1.0], IsNaN("f")), ([float("nan"), 1.0], NotEqualTo("f", 1.0)), ([0.0], In("f", {0.0, 5.0}))],
    ids=["is_nan", "not_equal", "in_zero"])
def test_pyarrow_pruning_loses_float_rows(tmp_path: Path, values: list[float], predicate: Any) -> None:
    # Given a file of these values, its first row selected by the filter
    table = ss.Catalog.local(str(tmp_path / "warehouse")).create_table(
        "floats", pa.schema([("id", pa.int64()), ("f", pa.float64())]))
    table.write(pa.table({"id": list(range(len(values))), "f": values}))
    # Then pyiceberg keeps the file (its bounds allow the filter) and finds the row
    static = StaticTable.from_metadata(table.iceberg_metadata())
    assert len(list(static.scan(row_filter=predicate).plan_files())) == 1
    assert static.scan(row_filter=predicate).to_arrow().column("id").to_pylist() == [0]

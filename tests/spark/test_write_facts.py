"""A native write's files are described by the tasks that wrote them, exactly as the Python
writer describes its own: the same rows through both writers give the same FileRef but for
path, size and checksum; and the driver neither lists the write folder nor reads a data file."""

from __future__ import annotations

import hashlib
import os
import random
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import sleeper_spark as ss
from sleeper_spark.models import FileRef, TableSchema
from sleeper_spark.spark.native import native_write
from sleeper_spark.spark.native.footers import file_ref as footer_file_ref
from sleeper_spark.storage import ObjectStore
from tests.fixtures.random_tables import random_table
from tests.fixtures.spark import data_files
from tests.spark.test_roundtrip import ALL_TYPES, all_types_rows

pytestmark = [pytest.mark.spark, pytest.mark.usefixtures("entry")]

TABLES = int(os.environ.get("SLEEPER_DIFFERENTIAL_TABLES", "4"))


def by_partition(files: list[FileRef]) -> dict[tuple[tuple[str, str | None], ...], FileRef]:
    keyed = {tuple(sorted(f.partition.items())): f for f in files}
    assert len(keyed) == len(files), "one file per partition value expected"
    return keyed


def facts_of(file: FileRef) -> dict[str, Any]:
    return file.model_dump(exclude={"path", "size_bytes", "checksum"})


@pytest.mark.parametrize("seed", range(1, TABLES + 1))
def test_the_same_rows_through_either_writer_give_the_same_file_facts(spark: SparkSession, catalog: ss.Catalog,
                                                                      seed: int) -> None:
    # Given random rows (nulls, NaN, signed zeros, long and non-BMP strings, old dates, decimals)
    table = random_table(random.Random(seed), 600)
    partition_by = list(table.partition_by)

    # When the Python writer and Spark's writer (one task) each write them into a table
    catalog.create_table("python", table.schema, partition_by=partition_by).write(table.rows)
    catalog.write(spark.createDataFrame(table.rows).coalesce(1), "spark", partition_by=partition_by)

    # Then each partition's file has the same row count, partition values and statistics
    python = by_partition(catalog.table("python").files())
    native = by_partition(catalog.table("spark").files())
    assert python.keys() == native.keys()
    for key, file in python.items():
        assert facts_of(native[key]) == facts_of(file), f"seed {seed}, partition {key}"
    # And size and checksum are those of the bytes, as the driver's own read of a footer finds them
    store = catalog.backend.store
    state = catalog.table("spark").state()
    for file in native.values():
        data = store.get(f"spark/{file.path}")
        assert footer_file_ref(data, file.path, state.schema, state.partition_by, "spark") == file


def test_nested_and_every_other_type_are_described_as_the_python_writer_does(spark: SparkSession,
                                                                             catalog: ss.Catalog) -> None:
    rows = spark.createDataFrame(all_types_rows(0, 60), ALL_TYPES)
    catalog.write(rows.coalesce(1), "spark")
    arrow = catalog.table("spark").scan()
    catalog.create_table("python", arrow.schema).write(arrow)

    (native,) = catalog.table("spark").files()
    (python,) = catalog.table("python").files()
    assert facts_of(native) == facts_of(python)


class CountingStore:
    """Counts a store's data-file reads and listings under ``data/``; delegates everything."""

    def __init__(self, store: ObjectStore) -> None:
        self._store = store
        self.data_reads: list[str] = []
        self.data_lists: list[str] = []

    def get(self, key: str) -> bytes:
        if "/data/" in key:
            self.data_reads.append(key)
        return self._store.get(key)

    def list(self, prefix: str) -> Any:
        if "/data/" in prefix:
            self.data_lists.append(prefix)
        return self._store.list(prefix)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


@contextmanager
def counted(table: ss.Table) -> Iterator[CountingStore]:
    original = table.store
    counting = CountingStore(original)
    table.store = counting  # type: ignore[assignment]
    try:
        yield counting
    finally:
        table.store = original


def test_the_driver_reads_and_lists_nothing_under_data(spark: SparkSession, catalog: ss.Catalog) -> None:
    # Given a table, and its store counting what the driver reads and lists under data/
    table = catalog.create_table("t", spark.range(1).selectExpr("id", "'a' AS part").schema, partition_by=["part"])
    df = spark.range(0, 20000, numPartitions=4).selectExpr("id", "cast(id % 5 AS string) AS part")

    # When Spark's writer writes 20 files and the driver commits them
    with counted(table) as store:
        snapshot = table.write(df)

    # Then the commit took every file, and the driver read and listed nothing under data/
    assert snapshot.files_added == 20 and table.scan().num_rows == 20000
    assert store.data_reads == [] and store.data_lists == []
    assert table.verify(deep=True).ok


def local_bytes_read(spark: SparkSession) -> int:
    """What the session's JVM (the executors too: the tests run Spark locally) has read from the
    local disk through Hadoop's file systems."""
    statistics = spark.sparkContext._jvm.org.apache.hadoop.fs.FileSystem.getAllStatistics()  # type: ignore[union-attr]
    return sum(s.getBytesRead() for s in statistics if s.getScheme() == "file")


def test_tasks_take_size_and_sha256_from_the_bytes_they_write_and_read_nothing_back(spark: SparkSession,
                                                                                     catalog: ss.Catalog) -> None:
    # Given rows for many files of varied sizes: a partition value of one row, one of nulls only,
    # and tasks without rows; and an empty DataFrame, for which Spark writes a file of no rows
    many = spark.range(0, 3001, numPartitions=3).selectExpr(
        "id", "CASE WHEN id = 3000 THEN 'one' WHEN id % 4 = 3 THEN NULL ELSE CAST(id % 4 AS STRING) END AS part",
        "repeat('x', CAST(id % 97 AS INT)) AS text", "id / 7 AS ratio")
    sparse = spark.range(0, 3, numPartitions=6).selectExpr("id", "CAST(id AS STRING) AS part")
    empty = spark.range(0).selectExpr("id")

    # When Spark's writer writes them
    before = local_bytes_read(spark)
    catalog.write(many, "many", partition_by=["part"])
    catalog.write(sparse, "sparse", partition_by=["part"])
    catalog.write(empty, "empty")

    # Then no task read a file back
    assert local_bytes_read(spark) == before
    # And each file's size and checksum are those of the bytes stored
    store = catalog.backend.store
    files = {name: catalog.table(name).files() for name in ("many", "sparse", "empty")}
    assert len(files["many"]) == 3 * 4 + 1 and len(files["sparse"]) == 3 and files["empty"] == []
    assert {f.partition["part"] for f in files["many"]} == {"0", "1", "2", "one", None}
    for name in ("many", "sparse"):
        assert {f.path for f in files[name]} == data_files(catalog, name)
        for file in files[name]:
            data = store.get(f"{name}/{file.path}")
            assert (file.size_bytes, file.checksum) == (len(data), f"sha256:{hashlib.sha256(data).hexdigest()}")


def test_a_file_the_task_could_not_read_back_is_read_by_the_driver(spark: SparkSession, catalog: ss.Catalog,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # Given tasks whose read-back failed (as under a committer that publishes files at job commit)
    original = native_write.facts_table

    def without_read_back(lines: str, write_dir: str, schema: TableSchema) -> pa.Table:
        facts = original(lines, write_dir, schema)
        for name in ("size", "sha256"):
            index = facts.schema.get_field_index(name)
            facts = facts.set_column(index, name, pa.nulls(facts.num_rows, facts.schema.field(name).type))
        return facts

    monkeypatch.setattr(native_write, "facts_table", without_read_back)

    # When Spark's writer writes
    catalog.write(spark.range(0, 100, numPartitions=2).selectExpr("id"), "t")

    # Then the driver described those files itself, checksums included
    table = catalog.table("t")
    assert table.scan().num_rows == 100 and table.verify(deep=True).ok
    assert all(f.checksum.startswith("sha256:") for f in table.files())

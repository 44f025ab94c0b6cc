"""Failures: nothing is committed by a failed job, retried tasks count once, bad schemas stop early."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import sleeper_spark as ss
from sleeper_spark.datafiles.writer import DataFileWriter
from sleeper_spark.models import TableSchema
from sleeper_spark.spark.common.options import parse_write
from sleeper_spark.spark.helper import _typed
from sleeper_spark.spark.source.writer import SleeperCommitMessage, SleeperWriter, WriteTarget, _table_for
from tests.spark.conftest import data_files, quiet_log4j2, referenced_files

pytestmark = pytest.mark.spark

HERE = Path(__file__).parent


def test_a_failing_job_commits_nothing(spark: SparkSession, catalog: ss.Catalog, io_path: str) -> None:
    df = spark.range(0, 100_000, numPartitions=4).selectExpr("id", "cast(id % 4 as string) as part")
    catalog.write(df.limit(1000), "t", partition_by=["part"])
    table = catalog.table("t")
    history, files = table.history(), table.files()
    bad = df.withColumn("id", F.when(F.col("id") == 99_000, F.raise_error(F.lit("bad row"))).otherwise(F.col("id")))

    with pytest.raises(Exception, match="bad row"):
        catalog.write(bad, "t")
    with pytest.raises(Exception, match="bad row"):
        bad.write.format("sleeper").options(**catalog.options()).mode("overwrite").save("t")

    table = catalog.table("t")
    assert table.history() == history and table.files() == files
    assert table.scan().num_rows == 1000
    assert table.verify().problems == ()
    # abort() deletes what the successful tasks staged; a task that failed, or was cancelled
    # while its writer kept going, may leave files that nothing refers to: vacuum's to remove.
    assert referenced_files(table) <= data_files(catalog, "t")


@pytest.fixture(scope="module")
def retried_writes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """retry_job.py's two writes, natively and by the Python source, in one Spark application."""
    work = tmp_path_factory.mktemp("retried")
    run = subprocess.run([sys.executable, str(HERE / "retry_job.py"), str(work), str(quiet_log4j2(work))],
                         capture_output=True, text=True, timeout=600, cwd=HERE.parents[1])
    assert run.returncode == 0, run.stderr[-3000:]
    return work, json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize(("path", "injected"), [("native", 1), ("python", 2)], ids=["native", "python"])
def test_a_retried_task_commits_each_row_once(retried_writes: tuple[Path, dict[str, Any]], path: str,
                                              injected: int) -> None:
    # A task fails after its writer has written rows; its retry succeeds. Only the committed
    # attempt's files (and, natively, only its reported facts) enter the commit.
    work, results = retried_writes
    result = results[path]
    assert result["injected"] == injected  # the failure did happen, once in each write (native first)

    assert result["versions"] == [2] and result["version"] == 2
    assert all(("/spark-" in f) == (path == "native") for f in result["files"])  # the writer asked for
    assert result["rows_added"] == result["rows"] == result["distinct"] == 20_000
    assert (result["min"], result["max"]) == (0, 19_999)
    catalog = ss.Catalog.local(str(work / path))
    assert set(result["files"]) <= data_files(catalog, "events")
    assert catalog.table("events").verify().problems == ()


def test_a_schema_mismatch_is_refused_before_any_task(spark: SparkSession, catalog: ss.Catalog, io_path: str) -> None:
    catalog.write(spark.range(10).selectExpr("id", "'a' as part"), "t", partition_by=["part"])
    before = data_files(catalog, "t")
    tracker = spark.sparkContext.statusTracker()
    wrong = [
        spark.range(10).selectExpr("cast(id as int) as id", "'a' as part"),  # int, not long
        spark.range(10).selectExpr("id"),  # a column missing
        spark.range(10).selectExpr("id", "'a' as part", "1 as extra"),  # a column too many
    ]
    group = f"schema-{uuid.uuid4().hex}"
    spark.sparkContext.setJobGroup(group, "writes that must not start")
    try:
        for df in wrong:
            with pytest.raises(ss.SchemaMismatchError, match="does not fit table 't'"):
                catalog.write(df, "t")
            with pytest.raises(Exception) as raised:  # Spark's exception, carrying the source's error
                df.write.format("sleeper").options(**catalog.options()).mode("append").save("t")
            assert isinstance(ss.sleeper_error(raised.value), ss.SchemaMismatchError)
            assert "does not fit table 't'" in str(ss.sleeper_error(raised.value))
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    assert list(tracker.getJobIdsForGroup(group)) == []
    assert data_files(catalog, "t") == before
    assert [s.version for s in catalog.table("t").history()] == [2]


def test_a_table_partitioned_differently_is_refused(spark: SparkSession, catalog: ss.Catalog, io_path: str) -> None:
    catalog.write(spark.range(3).selectExpr("id", "'a' as part"), "t", partition_by=["part"])
    with pytest.raises(Exception, match="partitioned by"):
        (spark.range(3).selectExpr("id", "'a' as part").write.format("sleeper").options(**catalog.options())
         .option("partition_by", "id").mode("append").save("t"))


def _staged_writer(catalog: ss.Catalog, count: int) -> tuple[SleeperWriter, list[SleeperCommitMessage]]:
    """A writer for table ``t`` and the messages of ``count`` tasks that staged one file each."""
    schema = pa.schema([("id", pa.int64())])
    table = catalog.create_table("t", schema)
    options = {**catalog.options(), "path": "t"}
    target = WriteTarget(options=tuple(sorted(options.items())), table="t", table_id=table.table_id, root=table.root,
                         schema=TableSchema.from_arrow(schema), partition_by=(), target_file_bytes=2**20,
                         row_group_rows=1000)
    messages = []
    for task in range(count):
        files = DataFileWriter(table.store, table.root, target.schema, (), "t").write_all(
            [pa.table({"id": [task]}, schema=schema)])
        messages.append(SleeperCommitMessage(files=tuple(files), partition_id=task, attempt=0))
    return SleeperWriter(target, parse_write(options), {}, overwrite=False), messages


def test_abort_after_failed_tasks_deletes_what_succeeded(catalog: ss.Catalog) -> None:
    writer, messages = _staged_writer(catalog, 3)
    assert len(data_files(catalog, "t")) == 3

    writer.abort([messages[0], None, messages[2]])

    assert data_files(catalog, "t") == {f.path for f in messages[1].files}


def test_abort_after_a_failed_commit_leaves_the_files_to_commit(catalog: ss.Catalog) -> None:
    # Spark also calls abort() when commit() raised: then every task succeeded, and commit()
    # has already deleted what it knows was not committed, but kept files of an unknown outcome.
    writer, messages = _staged_writer(catalog, 2)

    writer.abort(list(messages))

    assert len(data_files(catalog, "t")) == 2


def test_commit_refuses_a_table_created_again(catalog: ss.Catalog) -> None:
    writer, messages = _staged_writer(catalog, 2)
    catalog.drop_table("t")
    catalog.create_table("t", pa.schema([("id", pa.int64())]))

    with pytest.raises(ss.CommitConflictError, match="dropped and created again"):
        writer.commit(list(messages))
    assert data_files(catalog, "t") == set()
    assert catalog.table("t").history() == []


def test_errors_from_spark_workers_become_sleeper_errors() -> None:
    text = ("An exception was thrown from the Python worker: Traceback (most recent call last):\n"
            '  File "x.py", line 1, in commit\n'
            "sleeper_spark.errors.CommitConflictError: file data/a.parquet was removed by version 7\n SQLSTATE: 38000")
    typed = _typed(RuntimeError(text))
    assert isinstance(typed, ss.CommitConflictError)
    assert str(typed) == "file data/a.parquet was removed by version 7"
    plain = RuntimeError("something else")
    assert _typed(plain) is plain


def test_a_job_that_loses_the_race_to_create_the_table_writes_into_the_winners(catalog: ss.Catalog) -> None:
    schema = pa.schema([("id", pa.int64())])
    winner = catalog.create_table("t", schema)
    lookups = iter([ss.TableNotFoundError("not yet"), winner])

    def lookup() -> ss.Table:
        found = next(lookups)
        if isinstance(found, Exception):
            raise found
        return found

    def create() -> ss.Table:
        return catalog.create_table("t", schema)  # the name is taken by now

    assert _table_for(lookup, create) is winner

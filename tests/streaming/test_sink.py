"""The streaming sink: one snapshot per non-empty micro-batch, committed once per (query, batch)."""

from __future__ import annotations

from collections import Counter, defaultdict
from contextlib import AbstractContextManager
from pathlib import Path

import pyarrow as pa
import pytest
from chispa import assert_df_equality
from pyspark.sql import SparkSession
from pyspark.sql import types as T
from pyspark.sql.datasource import WriterCommitMessage

import sleeper_spark as ss
from sleeper_spark.spark.source.writer import plan_write, stage_files
from sleeper_spark.spark.streaming.stream_writer import StreamCommitMessage, plan_stream_write
from tests.fixtures.aws_requests import RequestCounter, counting_requests
from tests.fixtures.catalogs import make_catalog
from tests.fixtures.spark import data_files, referenced_files
from tests.invariants import check_log_invariants
from tests.streaming.streams import INPUT_DDL, finished, rows, sink_to_table, write_inputs

pytestmark = pytest.mark.spark

INPUT_STRUCT = T.StructType([T.StructField("id", T.LongType()), T.StructField("name", T.StringType()),
                             T.StructField("value", T.DoubleType())])


def test_each_micro_batch_is_one_snapshot_tagged_with_the_query_and_batch(
        spark: SparkSession, catalog: ss.Catalog, tmp_path: Path) -> None:
    # Given four input files, streamed one per micro-batch into a table that does not exist yet
    inputs, checkpoint = tmp_path / "in", tmp_path / "checkpoint"
    write_inputs(inputs, 0, 4, 50)
    query = sink_to_table(spark, catalog, inputs, checkpoint)
    # When two more files arrive and the query is restarted from its checkpoint
    write_inputs(inputs, 4, 2, 50)
    restarted = sink_to_table(spark, catalog, inputs, checkpoint)
    # Then each batch is one append snapshot tagged with the (stable) query id and its batch id
    table = catalog.table("events")
    history = table.history()
    assert restarted.id == query.id
    assert [s.version for s in history] == [2, 3, 4, 5, 6, 7]
    assert [(s.operation, s.rows_added) for s in history] == [("append", 50)] * 6
    assert [s.metadata for s in history] == [
        {"streaming.query_id": str(query.id), "streaming.batch_id": str(batch)} for batch in range(6)]
    assert [(s.app_id, s.app_version) for s in history] == [(str(query.id), batch) for batch in range(6)]
    # And the table holds exactly the input rows
    assert_df_equality(catalog.read(spark, "events"), spark.read.schema(INPUT_DDL).parquet(str(inputs)),
                       ignore_row_order=True)
    check_log_invariants(table)


def test_a_replayed_batch_commits_nothing_and_a_missed_one_commits(catalog: ss.Catalog, tmp_path: Path) -> None:
    # Given the sink's writer for a new table (built as Spark's committing worker builds it)
    options = {**catalog.options(), "path": "events"}
    writer = plan_stream_write(options, INPUT_STRUCT, overwrite=False)

    def staged(start: int, query: str | None = "query-1") -> list[WriterCommitMessage | None]:
        message = stage_files(writer.target, iter(rows(start, 10).to_batches()))
        return [StreamCommitMessage(files=message.files, partition_id=0, attempt=0, query_id=query)]

    # When batch 0 commits, is replayed after a "crash", then batch 1 commits and batch 0 comes again
    writer.commit(staged(0), 0)
    writer.commit(staged(0), 0)
    writer.commit(staged(10), 1)
    writer.commit(staged(0), 0)
    # Then batches 0 and 1 are in the table once each, and the replays' staged files are gone
    table = catalog.table("events")
    assert [(s.version, s.app_version) for s in table.history()] == [(2, 0), (3, 1)]
    assert sorted(table.scan().column("id").to_pylist()) == list(range(20))
    assert data_files(catalog, "events") == referenced_files(table)
    # And an empty batch commits nothing, nor does a batch whose tasks did not report the query id
    empty: list[WriterCommitMessage | None] = [StreamCommitMessage(files=(), partition_id=0, attempt=0,
                                                                   query_id="query-1")]
    writer.commit(empty, 2)
    with pytest.raises(ss.ConfigError, match="exactly once"):
        writer.commit(staged(20, query=None), 2)
    assert len(table.history()) == 2 and data_files(catalog, "events") == referenced_files(table)


def test_a_new_checkpoint_is_a_new_query_and_appends_again(
        spark: SparkSession, catalog: ss.Catalog, tmp_path: Path) -> None:
    # Given a table fed by one query
    inputs = tmp_path / "in"
    write_inputs(inputs, 0, 1, 20)
    first = sink_to_table(spark, catalog, inputs, tmp_path / "checkpoint-1")
    # When another query (another checkpoint) streams the same files, with metadata of its own
    second = sink_to_table(spark, catalog, inputs, tmp_path / "checkpoint-2", **{"metadata.job": "backfill"})
    # Then its batch 0 is not mistaken for the first query's batch 0
    history = catalog.table("events").history()
    assert first.id != second.id
    assert [(s.app_id, s.app_version) for s in history] == [(str(first.id), 0), (str(second.id), 0)]
    assert history[1].metadata["job"] == "backfill"
    assert catalog.table("events").scan().num_rows == 40


def test_only_the_append_output_mode_is_accepted(spark: SparkSession, catalog: ss.Catalog, tmp_path: Path) -> None:
    # Given an aggregation, which Spark can only emit in complete (or update) mode
    inputs = tmp_path / "in"
    write_inputs(inputs, 0, 1, 10)
    counts = spark.readStream.schema(INPUT_DDL).parquet(str(inputs)).groupBy("name").count()
    catalog.create_table("counts", pa.schema([("name", pa.string()), ("count", pa.int64())]))
    # When it is written to the sink in complete mode, Then the query fails with a ConfigError
    query = (counts.writeStream.format("sleeper").options(**catalog.options())
             .option("checkpointLocation", str(tmp_path / "checkpoint")).outputMode("complete")
             .trigger(availableNow=True).start("counts"))
    with pytest.raises(Exception, match=r"ConfigError: .*outputMode\('append'\) only"):
        finished(query)
    assert catalog.table("counts").history() == []
    # And app_id / app_version options are refused: the sink sets them
    with pytest.raises(ss.ConfigError, match="sets app_id"):
        plan_stream_write({**catalog.options(), "path": "counts", "app_id": "x", "app_version": "1"},
                          INPUT_STRUCT, overwrite=False)


@pytest.mark.integration
def test_a_warm_micro_batch_costs_what_a_batch_append_costs(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    # Given a table on the AWS test servers, written once by the sink and once by a batch write,
    # so that this process (like Spark's reused Python workers) holds the table's state
    catalog = make_catalog("aws", request, tmp_path)
    options = {**catalog.options(), "path": "events"}
    counters: dict[str, RequestCounter] = defaultdict(RequestCounter)

    def counted(step: str) -> AbstractContextManager[RequestCounter]:
        return counting_requests(catalog.config, counters[step])

    def micro_batch(batch_id: int, start: int) -> None:
        # As Spark runs it: streamWriter() in the planning worker, write() in a task, then
        # streamWriter() again and commit() in the committing worker
        with counted("stream plan and tasks"):
            staged = stage_files(plan_stream_write(options, INPUT_STRUCT, overwrite=False).target,
                                 iter(rows(start, 10).to_batches()))
            writer = plan_stream_write(options, INPUT_STRUCT, overwrite=False)
        with counted("stream commit"):
            writer.commit([StreamCommitMessage(files=staged.files, partition_id=0, attempt=0, query_id="q")],
                          batch_id)

    def batch_append(start: int) -> None:
        with counted("batch plan and tasks"):
            writer = plan_write(options, INPUT_STRUCT, overwrite=False)
            message = stage_files(writer.target, iter(rows(start, 10).to_batches()))
        with counted("batch commit"):
            writer.commit([message])

    micro_batch(0, 0)
    batch_append(10)
    counters.clear()  # what the table's creation and the first reads cost is not counted
    # When one more micro-batch and one more batch append are made
    micro_batch(1, 20)
    batch_append(30)
    # Then the micro-batch's commit is exactly the append's: one conditional log put, no read of the tail
    calls = {step: counter.calls for step, counter in counters.items()}
    assert calls["stream commit"] == calls["batch commit"], calls
    assert calls["stream commit"]["PutItem"] == 1 and calls["stream commit"]["Query"] == 0, calls
    # And the whole micro-batch lists nothing and reads nothing from S3: one data file, one log put.
    # It reads the registry and the log tail once more than the append only because Spark plans a
    # micro-batch's writer twice (where it plans the batch, and again where it commits it).
    streamed = calls["stream plan and tasks"] + calls["stream commit"]
    appended = calls["batch plan and tasks"] + calls["batch commit"]
    assert [op for op in streamed if op.startswith("List") or op in ("GetObject", "HeadObject")] == [], calls
    assert streamed["PutObject"] == streamed["PutItem"] == 1, calls
    assert streamed - appended == Counter({"GetItem": 1, "Query": 1}), calls
    assert sorted(catalog.table("events").scan(columns=["id"]).column("id").to_pylist()) == list(range(40))

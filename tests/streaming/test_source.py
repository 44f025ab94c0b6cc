"""The streaming source: each appended row delivered once, in version order, across restarts."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from chispa import assert_df_equality
from pyspark.sql import SparkSession

import sleeper_spark as ss
from tests.streaming.streams import INPUT_DDL, INPUT_SCHEMA, delivered_ids, rows, stream_table, table_stream

pytestmark = pytest.mark.spark

REPO = Path(__file__).parents[2]


def appended(catalog: ss.Catalog, *ranges: tuple[int, int]) -> ss.Table:
    """The ``events`` table (created if needed) after one append per (start, count)."""
    try:
        table = catalog.table("events")
    except ss.TableNotFoundError:
        table = catalog.create_table("events", INPUT_SCHEMA)
    for start, count in ranges:
        table.write(rows(start, count))
    return table


def test_appends_are_delivered_once_across_restarts(spark: SparkSession, catalog: ss.Catalog, tmp_path: Path) -> None:
    # Given a table with three appends, streamed from the beginning
    output, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    appended(catalog, (0, 10), (10, 10), (20, 5))
    stream_table(spark, catalog, output, checkpoint)
    assert delivered_ids(spark, output) == list(range(25))
    # When two more appends land and the query restarts from its checkpoint, one file per trigger
    appended(catalog, (25, 5), (30, 20))
    restarted = stream_table(spark, catalog, output, checkpoint, maxFilesPerTrigger="1")
    assert [json.loads(p["sources"][0]["endOffset"])["version"] for p in restarted.recentProgress] == [5, 6]
    # And restarts once more with nothing new
    stream_table(spark, catalog, output, checkpoint)
    # Then every row was delivered exactly once, with every column as written
    assert delivered_ids(spark, output) == list(range(50))
    assert_df_equality(spark.read.schema(INPUT_DDL).parquet(str(output)), catalog.read(spark, "events"),
                       ignore_row_order=True)


def test_a_compaction_delivers_nothing(spark: SparkSession, catalog: ss.Catalog, tmp_path: Path) -> None:
    # Given a streamed table of small appends
    output, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    table = appended(catalog, (0, 10), (10, 10), (20, 10))
    stream_table(spark, catalog, output, checkpoint)
    # When it is compacted, then appended to
    assert table.compact() is not None
    appended(catalog, (30, 10))
    stream_table(spark, catalog, output, checkpoint)
    # Then the compacted rows are not delivered again
    assert [s.operation for s in table.history()][-2:] == ["compact", "append"]
    assert delivered_ids(spark, output) == list(range(40))


def test_an_overwrite_fails_the_query_unless_changes_are_ignored(
        spark: SparkSession, catalog: ss.Catalog, tmp_path: Path) -> None:
    # Given a streamed table that is then overwritten
    output, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    table = appended(catalog, (0, 10))
    stream_table(spark, catalog, output, checkpoint)
    table.write(rows(100, 5), mode="overwrite")
    # When the query restarts, Then it fails with a ConfigError that says what to do
    with pytest.raises(Exception, match=r"ConfigError: table 'events': version 3 \(overwrite\) removed 1 file") as failure:
        stream_table(spark, catalog, output, checkpoint)
    assert "ignoreChanges=true" in str(failure.value)
    assert delivered_ids(spark, output) == list(range(10))
    # When it restarts from the same checkpoint with ignoreChanges, Then the overwrite's rows are delivered
    stream_table(spark, catalog, output, checkpoint, ignoreChanges="true")
    assert delivered_ids(spark, output) == [*range(10), *range(100, 105)]


def test_starting_version_picks_where_the_stream_begins(
        spark: SparkSession, catalog: ss.Catalog, tmp_path: Path) -> None:
    # Given versions 2, 3 and 4
    appended(catalog, (0, 10), (10, 10), (20, 10))
    # When one query starts at version 3 and another at the latest version
    from_3, latest = tmp_path / "from-3", tmp_path / "latest"
    stream_table(spark, catalog, from_3 / "out", from_3 / "checkpoint", startingVersion="3")
    stream_table(spark, catalog, latest / "out", latest / "checkpoint", startingVersion="latest")
    # Then the first delivers versions 3 and 4, the second nothing until a new version lands
    assert delivered_ids(spark, from_3 / "out") == list(range(10, 30))
    assert delivered_ids(spark, latest / "out") == []
    appended(catalog, (30, 10))
    stream_table(spark, catalog, latest / "out", latest / "checkpoint", startingVersion="latest")
    assert delivered_ids(spark, latest / "out") == list(range(30, 40))
    # And a version that does not exist yet is refused
    with pytest.raises(Exception, match="SnapshotNotFoundError: table 'events' has no version 9"):
        stream_table(spark, catalog, tmp_path / "out-9", tmp_path / "checkpoint-9", startingVersion="9")


def wait_until(condition: Callable[[], bool], what: str, timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.1)


def test_rows_another_process_appends_while_streaming_are_delivered_once(
        spark: SparkSession, catalog: ss.Catalog, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    # Given a table, and another process making 20 appends of 10 rows to it (pausing after 10)
    output, checkpoint, journal, resume = tmp_path / "out", tmp_path / "checkpoint", tmp_path / "journal", tmp_path / "go"
    appended(catalog)
    appender = subprocess.Popen(
        [sys.executable, "-m", "tests.streaming.append_job", json.dumps(catalog.options()), "20", "10", str(journal),
         "10", str(resume)], cwd=REPO, stderr=subprocess.PIPE, text=True)
    # If the test fails before the appender is resumed, it would wait for its resume file forever
    request.addfinalizer(appender.kill)

    def appends_done() -> int:
        return len(journal.read_text().splitlines()) if journal.exists() else 0

    # When a stream triggered every 200 ms reads the table as it grows, and is stopped part way
    query = table_stream(spark, catalog, output, checkpoint).trigger(processingTime="200 milliseconds").start()
    try:
        wait_until(lambda: appends_done() == 10 and len(delivered_ids(spark, output)) > 0, "rows were delivered")
    finally:
        query.stop()
    delivered_before_restart = delivered_ids(spark, output)
    # And is restarted from its checkpoint while the other process makes the remaining appends
    query = table_stream(spark, catalog, output, checkpoint).trigger(processingTime="200 milliseconds").start()
    try:
        resume.touch()
        assert appender.wait(timeout=180) == 0, appender.communicate()[1][-3000:]
        wait_until(lambda: len(delivered_ids(spark, output)) >= 200, "every row was delivered")
        time.sleep(1)  # a row delivered twice would show up in the next trigger or so
    finally:
        query.stop()
    # Then the first run delivered part of the rows, and in the end each row is delivered exactly once
    assert 0 < len(delivered_before_restart) <= 100
    assert delivered_ids(spark, output) == list(range(200))


def test_a_running_query_reads_on_past_an_added_column_and_stops_at_a_dropped_one(
        spark: SparkSession, catalog: ss.Catalog, tmp_path: Path) -> None:
    # Given a running query over a table
    output, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    table = appended(catalog, (0, 10))
    query = table_stream(spark, catalog, output, checkpoint).trigger(processingTime="200 milliseconds").start()
    try:
        query.processAllAvailable()
        # When the table gains a column and rows with it
        table.add_columns([pa.field("tag", pa.string())])
        table.write(rows(10, 5).append_column("tag", pa.array(["t"] * 5)))
        query.processAllAvailable()
        # Then the query delivers them under the schema it started with
        assert delivered_ids(spark, output) == list(range(15))
        # When a column it reads is dropped
        table.drop_column("name")
        table.write(rows(15, 5).drop_columns(["name"]).append_column("tag", pa.array(["t"] * 5)))
        # Then it stops with an error that says to restart it
        with pytest.raises(Exception) as raised:
            query.awaitTermination(120)
            query.processAllAvailable()
    finally:
        query.stop()
    typed = ss.sleeper_error(raised.value)
    assert isinstance(typed, ss.SchemaMismatchError) and "Restart the query" in str(typed), raised.value
    assert delivered_ids(spark, output) == list(range(15))
    # And a restarted query reads the new schema from there on
    stream_table(spark, catalog, output, checkpoint)
    assert delivered_ids(spark, output) == list(range(20))

"""The streaming source: each appended row delivered once, in version order, across restarts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chispa import assert_df_equality
from pyspark.sql import SparkSession

import sleeper_spark as ss
from tests.streaming.streams import INPUT_DDL, INPUT_SCHEMA, delivered_ids, rows, stream_table

pytestmark = pytest.mark.spark


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

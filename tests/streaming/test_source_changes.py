"""The streaming source's changes mode (``readChanges=true``): each version's changes in one
micro-batch, exactly once across restarts, overwrites and merges included."""

from __future__ import annotations

import json
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import sleeper_spark as ss
from tests.streaming.streams import INPUT_SCHEMA, rows, stream_table

pytestmark = pytest.mark.spark

CHANGES_DDL = "id long, name string, value double, _change_type string, _commit_version long, _commit_timestamp timestamp"


def delivered(spark: SparkSession, output: Path) -> Counter[tuple[Any, ...]]:
    """What the Parquet sink holds: (version, change type, id) with repeats counted."""
    if not output.exists():
        return Counter()
    return Counter((r["_commit_version"], r["_change_type"], r["id"])
                   for r in spark.read.schema(CHANGES_DDL).parquet(str(output)).collect())


def expected(table: ss.Table, first: int, last: int) -> Counter[tuple[Any, ...]]:
    """The same triples from ``Table.changes``, the pyarrow reader of the same plan."""
    changes = table.changes(first, last).to_pydict()
    return Counter(zip(changes["_commit_version"], changes["_change_type"], changes["id"], strict=True))


def test_each_version_s_changes_arrive_once_across_restarts_overwrites_included(
        spark: SparkSession, catalog: ss.Catalog, tmp_path: Path) -> None:
    # Given a table with two appends, streamed as changes from version 2
    output, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    table = catalog.create_table("events", INPUT_SCHEMA)
    table.write(rows(0, 10))
    table.write(rows(10, 10))
    stream_table(spark, catalog, output, checkpoint, readChanges="true", startingVersion="2")
    assert delivered(spark, output) == expected(table, 2, 3)
    # When an overwrite (which keeps ids 5..9 and adds 100..104) and an append land, and the query
    # restarts from its checkpoint one file per trigger
    table.write(pa.concat_tables([rows(5, 5), rows(100, 5)]), mode="overwrite")
    table.write(rows(200, 3))
    restarted = stream_table(spark, catalog, output, checkpoint, readChanges="true", maxFilesPerTrigger="1")
    # Then the overwrite's deletes and inserts arrive once, in their own micro-batch, copies excluded
    assert [json.loads(p["sources"][0]["endOffset"])["version"] for p in restarted.recentProgress] == [4, 5]
    assert delivered(spark, output) == expected(table, 2, 5)
    overwrite = {(kind, i) for version, kind, i in delivered(spark, output) if version == 4}
    assert overwrite == {("delete", i) for i in [*range(5), *range(10, 20)]} | {("insert", i) for i in range(100, 105)}
    # And a restart with nothing new delivers nothing more
    stream_table(spark, catalog, output, checkpoint, readChanges="true")
    assert delivered(spark, output) == expected(table, 2, 5)


def test_a_version_whose_removed_files_vacuum_deleted_fails_with_what_to_do(
        spark: SparkSession, catalog: ss.Catalog, tmp_path: Path) -> None:
    # Given a table overwritten after its first append, then vacuumed with no retention
    table = catalog.create_table("events", INPUT_SCHEMA)
    table.write(rows(0, 10))
    table.write(rows(50, 10), mode="overwrite")
    assert table.vacuum(older_than=timedelta(0)).data_files_deleted == 1
    # When its changes from version 2 are streamed, Then the query fails naming a file vacuum deleted
    # (both versions lost files; whichever task reads first fails the query)
    with pytest.raises(Exception, match=r"SnapshotNotFoundError: .*changes of version [23] \((append|overwrite)\) need data file "
                                        r"data/\w+\.parquet, which is gone \(vacuum"):
        stream_table(spark, catalog, tmp_path / "out", tmp_path / "checkpoint", readChanges="true",
                     startingVersion="2")

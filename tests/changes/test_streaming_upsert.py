"""A streaming foreachBatch upsert: each micro-batch merged once, a replayed batch changing nothing."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

import sleeper_spark as ss
from tests.invariants import check_log_invariants
from tests.streaming.streams import finished

pytestmark = pytest.mark.spark


def test_a_foreach_batch_upsert_lands_each_batch_once(spark: SparkSession, catalog: ss.Catalog,
                                                      tmp_path: Path) -> None:
    # Given CDC files (id, name, op), one micro-batch each, and an upsert per micro-batch
    users = catalog.create_table("users", pa.schema([("id", pa.int64()), ("name", pa.string())]))
    landing = tmp_path / "landing"
    landing.mkdir()
    batches = [[(1, "ann", "upsert"), (2, "bob", "upsert")], [(2, "bobby", "upsert"), (1, "", "delete")],
               [(3, "cat", "upsert"), (2, "rob", "upsert")]]
    now = time.time()
    for k, rows in enumerate(batches):
        path = landing / f"{k}.parquet"
        pq.write_table(pa.table({"id": [r[0] for r in rows], "name": [r[1] for r in rows], "op": [r[2] for r in rows]}),
                       path)
        os.utime(path, (now - 60 + k * 10, now - 60 + k * 10))  # the file source takes the oldest first

    def upsert(batch: Any, batch_id: int) -> None:
        (users.merge(batch, "target.id = source.id")
         .when_matched_delete(condition="source.op = 'delete'")
         .when_matched_update(set={"name": "source.name"})
         .when_not_matched_insert(values={"id": "source.id", "name": "source.name"}, condition="source.op = 'upsert'")
         .execute(app_id="users-cdc", app_version=batch_id))

    # When the query runs, and batch 1 is then delivered again (as after a crash before its checkpoint)
    finished(spark.readStream.schema("id long, name string, op string").option("maxFilesPerTrigger", 1)
             .parquet(str(landing)).writeStream.foreachBatch(upsert)
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
    after_query = users.latest()
    upsert(spark.read.parquet(str(landing / "1.parquet")), 1)

    # Then each batch was one merge, and the replay committed nothing
    assert [(s.operation, s.app_version) for s in users.history()] == [("merge", 0), ("merge", 1), ("merge", 2)]
    assert users.latest() == after_query
    assert sorted((r["id"], r["name"]) for r in users.scan().to_pylist()) == [(2, "rob"), (3, "cat")]
    check_log_invariants(users)

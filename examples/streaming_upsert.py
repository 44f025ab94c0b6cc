"""Change data capture into a sleeper table: a streaming query upserts each micro-batch with MERGE.

    bash scripts/examples.sh streaming_upsert [WORK_DIR]

Changes arrive as Parquet files of (id, name, op): op "upsert" inserts or updates the row of that
id, op "delete" removes it. ``foreachBatch`` merges each micro-batch into the table, tagged with
the query's id and the batch id: a batch that Spark runs again after a crash (here, one replayed
by hand) finds its version committed already and changes nothing.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import SparkSession

import sleeper_spark as ss


def changes(rows: list[tuple[int, str, str]]) -> pa.Table:
    return pa.table({"id": [r[0] for r in rows], "name": [r[1] for r in rows], "op": [r[2] for r in rows]})


def main() -> None:
    work = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="sleeper-upsert-"))
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers need sleeper_spark too
    spark = ss.configure_spark(SparkSession.builder.master("local[2]").config("spark.ui.showConsoleProgress", "false")
                               .config("spark.sql.shuffle.partitions", "2")).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    catalog = ss.Catalog.local(str(work / "warehouse"))
    users = catalog.create_table("users", pa.schema([("id", pa.int64()), ("name", pa.string())]))

    landing = work / "landing"
    landing.mkdir(parents=True, exist_ok=True)
    pq.write_table(changes([(1, "ann", "upsert"), (2, "bob", "upsert"), (3, "cat", "upsert")]), landing / "0.parquet")
    pq.write_table(changes([(2, "bobby", "upsert"), (3, "", "delete"), (4, "dan", "upsert")]), landing / "1.parquet")
    # The file source takes the oldest file first; files written within the same second would tie.
    now = time.time()
    for k in range(2):
        os.utime(landing / f"{k}.parquet", (now - 60 + k * 10, now - 60 + k * 10))

    def upsert(batch: Any, batch_id: int) -> None:
        snapshot = (users.merge(batch, "target.id = source.id")
                    .when_matched_delete(condition="source.op = 'delete'")
                    .when_matched_update(set={"name": "source.name"})
                    .when_not_matched_insert(values={"id": "source.id", "name": "source.name"},
                                             condition="source.op = 'upsert'")
                    .execute(app_id="users-cdc", app_version=batch_id))
        print(f"batch {batch_id}: version {snapshot.version}, {snapshot.operation_metrics}")

    query = (spark.readStream.schema("id long, name string, op string").option("maxFilesPerTrigger", 1)
             .parquet(str(landing)).writeStream.foreachBatch(upsert)
             .option("checkpointLocation", str(work / "checkpoint")).trigger(availableNow=True).start())
    query.awaitTermination()
    print("users:", sorted((r["id"], r["name"]) for r in users.scan().to_pylist()))

    # Spark replays a micro-batch whose commit it did not record; the merge commits it once.
    before = users.latest().version
    upsert(spark.read.parquet(str(landing / "1.parquet")), 1)
    print(f"replayed batch 1: table still at version {users.latest().version} (was {before})")
    spark.stop()


if __name__ == "__main__":
    main()

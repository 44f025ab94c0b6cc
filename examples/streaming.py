"""Structured Streaming into and out of a sleeper table.

    bash scripts/examples.sh streaming [WORK_DIR]

A file source streams three Parquet files into the table ``events``, one micro-batch (and one
snapshot) per file; then a second query streams the table's new rows out to a Parquet folder,
is stopped, and picks up exactly the rows appended since, from its checkpoint.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import SparkSession

import sleeper_spark as ss


def batch(start: int, count: int) -> pa.Table:
    ids = list(range(start, start + count))
    return pa.table({"id": pa.array(ids, pa.int64()), "kind": [("click", "view")[i % 2] for i in ids]})


def main() -> None:
    work = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="sleeper-streaming-"))
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers need sleeper_spark too
    spark = (ss.configure_spark(SparkSession.builder.master("local[2]")).config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    catalog = ss.Catalog.local(str(work / "warehouse"))

    # Three files arrive in a landing folder.
    landing = work / "landing"
    landing.mkdir(parents=True, exist_ok=True)
    for k in range(3):
        pq.write_table(batch(100 * k, 100), landing / f"part-{k}.parquet")

    # The sink: one snapshot per micro-batch, tagged with the query id and the batch id.
    sink = (spark.readStream.schema("id long, kind string").option("maxFilesPerTrigger", 1).parquet(str(landing))
            .writeStream.format("sleeper").options(**catalog.options())
            .option("checkpointLocation", str(work / "checkpoints" / "sink")).outputMode("append")
            .trigger(availableNow=True).start("events"))
    sink.awaitTermination()
    table = catalog.table("events")
    for snapshot in table.history():
        print(f"v{snapshot.version}  {snapshot.operation}  +{snapshot.rows_added} rows  "
              f"batch {snapshot.metadata['streaming.batch_id']}")

    # The source: every row appended to the table, once, into an exactly-once Parquet sink.
    def read_new_rows() -> int:
        query = (spark.readStream.format("sleeper").options(**catalog.options()).load("events")
                 .writeStream.format("parquet").option("path", str(work / "out"))
                 .option("checkpointLocation", str(work / "checkpoints" / "source"))
                 .trigger(availableNow=True).start())
        query.awaitTermination()
        return spark.read.parquet(str(work / "out")).count()

    print(f"source delivered {read_new_rows()} rows")
    table.write(batch(1000, 5))  # an append by another writer, here with pyarrow
    print(f"after one more append: {read_new_rows()} rows delivered in all")
    spark.stop()


if __name__ == "__main__":
    main()

"""A streaming query for the crash tests: input files -> the ``events`` table, one file per batch.

    python sink_job.py CATALOG_OPTIONS_JSON INPUTS CHECKPOINT HOOK_DIR [PAUSE]

The catalog is rebuilt from its flat options (``Catalog.options()``); AWS credentials come from
the environment, as on a real cluster.

PAUSE makes the first task (``in_write``, after it staged its files) or the first commit
(``after_commit``, after the table's log took the batch and before Spark's checkpoint marks it
done) of this run create ``HOOK_DIR/<PAUSE>`` and sleep, so that the test can kill the job at
that point. The hook wraps the sink's writer from outside; the sink itself has no test hooks.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSourceStreamArrowWriter, DataSourceStreamWriter, WriterCommitMessage
from pyspark.sql.types import StructType

import sleeper_spark as ss
from sleeper_spark.spark.bridge.datasource import SleeperDataSource

CATALOG_OPTIONS, INPUTS, CHECKPOINT, HOOK_DIR = sys.argv[1:5]
PAUSE = sys.argv[5] if len(sys.argv) > 5 else ""


def pause_once(name: str, batch: str) -> None:
    """The first caller of this run (in any process) leaves a marker and sleeps until killed."""
    try:
        fd = os.open(Path(HOOK_DIR) / name, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return
    os.write(fd, batch.encode())
    os.close(fd)
    time.sleep(600)


class PausingWriter(DataSourceStreamArrowWriter):
    def __init__(self, inner: DataSourceStreamWriter) -> None:
        self.inner = inner

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        message = self.inner.write(iterator)
        if PAUSE == "in_write":
            from pyspark import TaskContext

            context = TaskContext.get()
            pause_once(PAUSE, (context.getLocalProperty("streaming.sql.batchId") if context else None) or "?")
        return message

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self.inner.commit(messages, batchId)
        if PAUSE == "after_commit":
            pause_once(PAUSE, str(batchId))

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self.inner.abort(messages, batchId)


class PausingSource(SleeperDataSource):
    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return PausingWriter(super().streamWriter(schema, overwrite))


def main() -> None:
    spark = (SparkSession.builder.master("local[2]").appName("sink-job")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    ss.register(spark)
    if PAUSE:
        spark.dataSource.register(PausingSource)
    catalog = ss.Catalog.from_options(json.loads(CATALOG_OPTIONS))
    query = (spark.readStream.schema("id long, name string, value double").option("maxFilesPerTrigger", 1)
             .parquet(INPUTS).writeStream.format("sleeper").options(**catalog.options())
             .option("checkpointLocation", CHECKPOINT).outputMode("append").trigger(availableNow=True)
             .start("events"))
    query.awaitTermination()
    print(f"done: query {query.id}", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()

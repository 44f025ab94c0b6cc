"""Structured Streaming on the local backend: the sink's batch rate and the source's latency.

Sink: 30 input files of 1,000 rows streamed one file per micro-batch (``maxFilesPerTrigger=1``,
``availableNow``) into a sleeper table, against the same stream into Spark's own Parquet file
sink (``--quick``: 5 files). Source: 20 appends of 10 rows, one every 0.7 s, each timed from the
moment the append returned to the moment ``foreachBatch`` sees its rows, with a 0.5 s
processing-time trigger; the baseline drops Parquet files into a folder read by Spark's file
source with the same trigger.
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import sleeper_spark as ss
from bench.common import Report, Row, measure, percentile, seconds
from bench.spark_io import session

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("value", pa.float64())])
DDL = "id long, name string, value double"


def rows(start: int, count: int) -> pa.Table:
    ids = list(range(start, start + count))
    return pa.table({"id": ids, "name": [f"n{i % 97}" for i in ids], "value": [i / 2 for i in ids]}, schema=SCHEMA)


def run(report: Report, quick: bool) -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-streaming-"))
    spark = session(work)
    try:
        ss.register(spark)
        sink_rate(report, spark, work, files=5 if quick else 30)
        source_latency(report, spark, work, appends=4 if quick else 20)
    finally:
        spark.stop()


def sink_rate(report: Report, spark: Any, work: Path, files: int) -> None:
    inputs = work / "inputs"
    inputs.mkdir()
    for k in range(files):
        pq.write_table(rows(1000 * k, 1000), inputs / f"f{k:03d}.parquet")
    counter = iter(range(100))

    def stream_into(writer: Callable[[Any, str], Any]) -> None:
        run = next(counter)
        stream = (spark.readStream.schema(DDL).option("maxFilesPerTrigger", 1).parquet(str(inputs))
                  .writeStream.option("checkpointLocation", str(work / f"checkpoint-{run}")).outputMode("append")
                  .trigger(availableNow=True))
        query = writer(stream, str(run))
        query.awaitTermination()

    def ours(stream: Any, run: str) -> Any:
        catalog = ss.Catalog.local(str(work / f"warehouse-{run}"))
        return stream.format("sleeper").options(**catalog.options()).start("events")

    def plain(stream: Any, run: str) -> Any:
        return stream.format("parquet").option("path", str(work / f"plain-{run}")).start()

    stream_into(ours)  # warm-up: Python workers, JIT
    ours_time = measure(lambda: stream_into(ours), 2)
    plain_time = measure(lambda: stream_into(plain), 2)
    report.add(Row(f"sink: {files} micro-batches of 1,000 rows", seconds(ours_time), seconds(plain_time),
                   ours_time.best / plain_time.best, "-", None,
                   f"{files / ours_time.best:.1f} batches/s vs {files / plain_time.best:.1f} (Parquet sink)"))


def source_latency(report: Report, spark: Any, work: Path, appends: int) -> None:
    catalog = ss.Catalog.local(str(work / "warehouse-source"))
    table = catalog.create_table("events", SCHEMA)
    ours = _latencies(spark, work / "checkpoint-source",
                      spark.readStream.format("sleeper").options(**catalog.options()).load("events"),
                      lambda k: table.write(rows(10 * k, 10)), appends)
    landing = work / "landing"
    landing.mkdir()
    plain = _latencies(spark, work / "checkpoint-plain", spark.readStream.schema(DDL).parquet(str(landing)),
                       lambda k: pq.write_table(rows(10 * k, 10), landing / f"f{k:03d}.parquet"), appends)
    report.add(Row(f"source: append to delivery, 0.5 s trigger, {appends} appends",
                   f"p50 {percentile(ours, 0.5):.2f} s, p95 {percentile(ours, 0.95):.2f} s",
                   f"p50 {percentile(plain, 0.5):.2f} s, p95 {percentile(plain, 0.95):.2f} s",
                   percentile(ours, 0.5) / percentile(plain, 0.5), "-", None, "baseline: Spark's file source"))


def _latencies(spark: Any, checkpoint: Path, stream: Any, append: Callable[[int], object], appends: int) -> list[float]:
    appended_at: dict[int, float] = {}
    delivered_at: dict[int, float] = {}
    done = threading.Event()

    def deliver(batch: Any, batch_id: int) -> None:
        now = time.monotonic()
        for row in batch.select("id").collect():
            delivered_at.setdefault(row.id // 10, now)
        if len(delivered_at) >= appends:
            done.set()

    query = (stream.writeStream.foreachBatch(deliver).option("checkpointLocation", str(checkpoint))
             .trigger(processingTime="0.5 seconds").start())
    try:
        time.sleep(3)  # the first (empty) triggers start the workers
        for k in range(appends):
            append(k)
            appended_at[k] = time.monotonic()
            time.sleep(0.7)
        done.wait(60)
    finally:
        query.stop()
    return [delivered_at[k] - appended_at[k] for k in appended_at if k in delivered_at]

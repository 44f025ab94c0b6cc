"""Run by test_failures.py in its own process: two writes whose first attempt of one task fails.

    python tests/spark/retry_job.py WORK_DIR LOG4J_PROPERTIES

The first write is native (Spark's Parquet writer, the jar's facts), the second goes through the
Python data source (the session setting switches the native path off), each into a warehouse of
its own under WORK_DIR. Retrying a task needs ``spark.task.maxFailures`` > 1, which a local master
takes from its ``local[N,F]`` form when the JVM starts; a process can start only one JVM, hence the script.
Prints one JSON line: for each writer, the committed snapshot and what the table holds afterwards.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from pyspark import TaskContext
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType

import sleeper_spark as ss
from sleeper_spark.spark.common.jvm import NATIVE_CONF

ROWS = 20_000  # four tasks of 5,000 rows: the failure comes at the 4,001st row of the first


@F.udf(LongType())
def fails_once(value: int) -> int:
    context = TaskContext.get()
    # Late in partition 0, on the first attempt only: the writer has consumed rows by then.
    if context is not None and context.partitionId() == 0 and context.attemptNumber() == 0 and value == 4_000:
        # A file says it happened: the driver's logging of a failed task may be turned down.
        with open(os.environ["SLEEPER_TEST_INJECTED"], "a") as marker:
            marker.write("injected failure of the first attempt\n")
        raise RuntimeError("injected failure of the first attempt")
    return value


def main(warehouses: str, log4j: str) -> None:
    os.environ["PYSPARK_PYTHON"] = sys.executable  # read when the JVM starts its Python workers
    injected = os.path.join(warehouses, "injected")
    os.environ["SLEEPER_TEST_INJECTED"] = injected  # as is this
    spark = (ss.configure_spark(SparkSession.builder).master("local[2,2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").config("spark.sql.shuffle.partitions", "2")
             # Rows reach the Python data source's writer in Arrow batches of 1,000 (not 10,000): it has
             # written some when the failure comes
             .config("spark.sql.execution.arrow.maxRecordsPerBatch", "1000")
             .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log4j}")
             .getOrCreate())
    results = {}
    for path in ("native", "python"):
        if path == "python":
            spark.conf.set(NATIVE_CONF, "false")
        results[path] = write_with_a_retry(spark, ss.Catalog.local(os.path.join(warehouses, path)))
        # How many first attempts failed by now: each write's own is one more
        results[path]["injected"] = Path(injected).read_text().count("injected failure") if Path(injected).exists() else 0
    print(json.dumps(results))
    spark.stop()


def write_with_a_retry(spark: SparkSession, catalog: ss.Catalog) -> dict[str, object]:
    rows = spark.range(0, ROWS, numPartitions=4).withColumn("id", fails_once("id"))
    df = rows.withColumn("part", (F.col("id") % 4).cast("string"))
    snapshot = catalog.write(df, "events", partition_by=["part"])
    table = catalog.table("events")
    ids = table.scan(columns=["id"]).column("id").to_pylist()
    return {"version": snapshot.version, "rows_added": snapshot.rows_added, "rows": len(ids), "distinct": len(set(ids)),
            "min": min(ids), "max": max(ids), "versions": [s.version for s in table.history()],
            "files": sorted(f.path for f in table.files())}


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

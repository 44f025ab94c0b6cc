"""A Spark job on a local warehouse: write, append, read, time-travel, print the history.

    bash scripts/examples.sh spark_job /tmp/wh
    PYSPARK_PYTHON=$PWD/.venv/bin/python .venv/bin/spark-submit examples/spark_job.py /tmp/wh

The first runs it in a local session; the second submits it (after the first has set up .venv).
``.venv/bin/spark-submit`` looks for Spark with the interpreter PYSPARK_PYTHON names, else with
``python3`` on PATH, which has no PySpark unless the venv is activated: name the venv's.

Both the helper API (``catalog.write`` / ``catalog.read``) and the ``sleeper`` format are used;
they share one code path.
"""

from __future__ import annotations

import contextlib
import os
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import sleeper_spark as ss


def main(warehouse: str) -> None:
    # Python workers must use an interpreter with sleeper_spark installed; it is read when the
    # SparkContext starts, also under spark-submit.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.appName("sleeper-spark-example").master(os.environ.get("MASTER", "local[2]"))
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())  # a local session: 2 cores, small data
    spark.sparkContext.setLogLevel("ERROR")
    # Submitted without --jars this session has no sleeper jar: format("sleeper") is then the Python
    # data source, which a session registers (configure_spark, or --jars of ss.jar_path(), make it unneeded).
    ss.register(spark)
    catalog = ss.Catalog.local(warehouse)
    with contextlib.suppress(ss.TableNotFoundError):  # start afresh on every run
        catalog.drop_table("clicks", purge=True)

    days = spark.range(0, 10_000).select(
        F.col("id"),
        F.concat(F.lit("2024-05-0"), (F.col("id") % 3 + 1).cast("string")).alias("day"),
        (F.col("id") % 97).alias("user"),
        F.rand(seed=1).alias("score"),
    )
    first = catalog.write(days, "clicks", partition_by=["day"], metadata={"job": "backfill"})
    print(f"v{first.version}: wrote {first.rows_added} rows in {first.files_added} files")

    # The format route: any option Spark passes works, here with an idempotent app version.
    more = days.limit(500).withColumn("id", F.col("id") + 100_000)
    (more.write.format("sleeper").options(**catalog.options()).option("app_id", "example")
     .option("app_version", "1").option("metadata.job", "top-up").mode("append").save("clicks"))

    clicks = catalog.read(spark, "clicks")
    print(f"now {clicks.count()} rows; per day:")
    clicks.groupBy("day").count().orderBy("day").show()
    one_day = clicks.filter((F.col("day") == "2024-05-02") & (F.col("user") == 5))  # skips other days' files
    print(f"2024-05-02, user 5: {one_day.count()} rows")

    back = spark.read.format("sleeper").options(**catalog.options()).option("versionAsOf", first.version)
    print(f"time travel to v{first.version}: {back.load('clicks').count()} rows")

    print("history:")
    for snapshot in catalog.table("clicks").history():
        print(f"  v{snapshot.version}  {snapshot.operation:<9} +{snapshot.rows_added} rows  {snapshot.metadata}"
              f"  app={snapshot.app_id}/{snapshot.app_version}")
    spark.stop()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: bash scripts/examples.sh spark_job WAREHOUSE_DIR")
    main(sys.argv[1])

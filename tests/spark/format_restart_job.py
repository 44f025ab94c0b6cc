"""Run by test_format_native.py: format("sleeper") in a session, after that session is stopped and a
new one started in the same process (the JVM, and the bridge it holds, outlive the first).

    python tests/spark/format_restart_job.py WAREHOUSE

Prints the count each session read.
"""

from __future__ import annotations

import sys

from pyspark.sql import SparkSession

import sleeper_spark as ss


def main(warehouse: str) -> None:
    catalog = ss.Catalog.local(warehouse)
    for _ in range(2):
        spark = ss.configure_spark(SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
                                   .config("spark.ui.showConsoleProgress", "false")
                                   .config("spark.sql.shuffle.partitions", "2")).getOrCreate()
        ss.register(spark)
        spark.range(3).write.format("sleeper").options(**catalog.options()).mode("append").save("t")
        loaded = spark.read.format("sleeper").options(**catalog.options()).load("t")
        native = "SleeperFileIndex" in loaded._jdf.queryExecution().executedPlan().toString()
        print(f"count {loaded.count()} native {native}", flush=True)
        spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])

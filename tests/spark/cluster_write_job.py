"""Run by test_standalone_cluster.py under ``spark-submit``, as the driver of a standalone cluster's application.

Writes a table with the helper API on Spark's own writer, measuring what this driver (its Python
process and its JVM) reads meanwhile, from /proc/<pid>/io. Prints one JSON line.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from pyspark.sql import SparkSession

import sleeper_spark as ss


def bytes_read(pid: int | str) -> int:
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise RuntimeError("no rchar in /proc/<pid>/io")


def main(master: str, warehouse: str, rows: int) -> None:
    spark = ss.configure_spark(SparkSession.builder.master(master).appName("sleeper-cluster-write")
                               .config("spark.ui.enabled", "false")
                               .config("spark.executor.memory", "1g")).getOrCreate()
    # Under spark-submit the driver's JVM started this Python process; else this process started it.
    gateway = spark.sparkContext._gateway
    jvm_pid = gateway.proc.pid if getattr(gateway, "proc", None) is not None else os.getppid()
    catalog = ss.Catalog.local(warehouse)
    df = spark.range(0, rows, numPartitions=8).selectExpr(
        "id", "cast(id % 7 AS string) AS part", "sha2(cast(id AS string), 256) AS payload", "rand(1) AS x")
    # A first small write loads the classes a write needs: class loading reads jars, which is
    # not what is measured here.
    catalog.write(df.limit(1000), "warm-up", partition_by=["part"])
    before = bytes_read("self"), bytes_read(jvm_pid)
    snapshot = catalog.write(df, "events", partition_by=["part"])
    after = bytes_read("self"), bytes_read(jvm_pid)
    # The sequence a cluster job of a new user runs: a helper write, then the standard writer's
    # format("sleeper") (registered by the helper call) appending to the same table.
    small = spark.range(rows, rows + 1000).selectExpr(
        "id", "cast(id % 7 AS string) AS part", "sha2(cast(id AS string), 256) AS payload", "rand(2) AS x")
    small.write.format("sleeper").options(**catalog.options()).mode("append").save("events")
    table = catalog.table("events")
    appended = {f.path for f in table.files()} - {f.path for f in table.files(snapshot.version)}
    print(json.dumps({
        "rows_added": snapshot.rows_added, "files": snapshot.files_added, "bytes_written": snapshot.bytes_added,
        "python_read": after[0] - before[0], "jvm_read": after[1] - before[1],
        "native": all("/spark-" in f.path for f in table.files() if f.path not in appended),
        "scanned": table.scan(columns=["id"]).num_rows, "appended_files": len(appended),
        "versions": [s.version for s in table.history()],
    }))
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))

"""Run by test_spark_connect.py: a Spark Connect client of a server that has the jar.

    python tests/spark/connect_job.py sc://127.0.0.1:PORT WAREHOUSE

A Connect client has no JVM of its own, so format("sleeper") runs through the sleeper Python
data source on the server, whose jar's source hands the work to it. Prints one JSON line.
"""

from __future__ import annotations

import json
import sys

from pyspark.sql import SparkSession

import sleeper_spark as ss


def main(url: str, warehouse: str) -> None:
    spark = SparkSession.builder.remote(url).getOrCreate()
    ss.register(spark)
    catalog = ss.Catalog.local(warehouse)
    options = catalog.options()
    rows = spark.range(100).selectExpr("id", "cast(id % 4 as string) as part")
    rows.write.format("sleeper").options(**options).option("partition_by", "part").mode("append").save("events")
    rows.where("id < 10").write.format("sleeper").options(**options).mode("append").save("events")
    helper = catalog.write(spark.range(100, 105).selectExpr("id", "'x' as part"), "events")
    loaded = spark.read.format("sleeper").options(**options).load("events")
    missing: str | None = None
    try:
        spark.read.format("sleeper").options(**options).load("nope").collect()
    except Exception as error:
        typed = ss.sleeper_error(error)
        missing = type(typed).__name__ if typed is not None else repr(error)[:500]
    print(json.dumps({
        "count": loaded.count(),
        "part_1": loaded.where("part = '1'").count(),
        "at_version_2": spark.read.format("sleeper").options(**options).option("versionAsOf", 2).load("events").count(),
        "helper_version": helper.version,
        "helper_read": catalog.read(spark, "events").where("part = 'x'").count(),
        "missing": missing,
    }), flush=True)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

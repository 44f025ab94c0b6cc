"""Run by test_spark_connect.py: SQL on the catalog ``lake`` of a Connect server that has the jar.

    python tests/spark/connect_sql_job.py sc://127.0.0.1:PORT WAREHOUSE first|again

The catalog's JVM side calls the Python side that the server's JVM started for itself (no
``ss.register`` by this client is needed for SQL). ``first`` runs DDL, DML, time travel, changes
and a format("sleeper") read; ``again`` (after the test killed that Python side) one INSERT and a
count. Prints one JSON line.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from pyspark.sql import SparkSession

import sleeper_spark as ss


def first(spark: Any, warehouse: str) -> dict[str, Any]:
    spark.sql("CREATE TABLE lake.db.orders (id BIGINT, v STRING, day STRING) USING sleeper PARTITIONED BY (day)")
    spark.sql("INSERT INTO lake.db.orders VALUES (1, 'a', 'd1'), (2, 'b', 'd1'), (3, 'c', 'd2')")
    merged = spark.sql("MERGE INTO lake.db.orders t USING (SELECT 2 AS id, 'B' AS v, 'd1' AS day UNION ALL "
                       "SELECT 4, 'd', 'd2') s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * "
                       "WHEN NOT MATCHED THEN INSERT *").first()
    spark.sql("DELETE FROM lake.db.orders WHERE day = 'd2' AND id = 3")
    changes = spark.sql("SELECT _change_type, count(*) AS n FROM lake.db.orders CHANGES FROM VERSION 3 "
                        "GROUP BY _change_type ORDER BY _change_type").collect()
    try:
        spark.sql("SELECT * FROM lake.db.orders VERSION AS OF 99").collect()
        missing = None
    except Exception as error:
        typed = ss.sleeper_error(error)
        missing = type(typed).__name__ if typed is not None else repr(error)[:300]
    options = ss.Catalog.local(warehouse).options()
    loaded = spark.read.format("sleeper").options(**options).load("db.orders")
    return {
        "rows": sorted(tuple(r) for r in spark.table("lake.db.orders").collect()),
        "merged": [merged["num_updated_rows"], merged["num_inserted_rows"]] if merged else None,
        "changes": {r["_change_type"]: r["n"] for r in changes},
        "version_2": spark.sql("SELECT count(*) AS n FROM lake.db.orders VERSION AS OF 2").first()["n"],
        "missing": missing,
        "format_read_by_spark": len(loaded.inputFiles()) > 0 and loaded.count() == 3,
    }


def again(spark: Any) -> dict[str, Any]:
    spark.sql("INSERT INTO lake.db.orders VALUES (5, 'e', 'd3')")
    return {"count": spark.table("lake.db.orders").count()}


def main(url: str, warehouse: str, phase: str) -> None:
    spark = SparkSession.builder.remote(url).getOrCreate()
    result = first(spark, warehouse) if phase == "first" else again(spark)
    print(json.dumps(result), flush=True)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])

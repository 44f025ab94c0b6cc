"""Sleeper tables in Spark's own catalog: ``saveAsTable``, SQL on unqualified names, no registration.

    bash scripts/examples.sh session_catalog /tmp/wh

Puts a sleeper catalog in Spark's session catalog (``spark_catalog``), saves a DataFrame with
``saveAsTable``, appends, merges with ``MERGE INTO`` on an unqualified name, reads an older version,
and shows a Parquet table beside it in ``SHOW TABLES``: one catalog for every format. On a cluster
the same settings go to the Hive metastore or AWS Glue (``enableHiveSupport()``); see docs/sql.md.
"""

from __future__ import annotations

import contextlib
import os
import sys

from pyspark.sql import SparkSession

import sleeper_spark as ss


def main(warehouse: str) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers need sleeper_spark too
    catalog = ss.Catalog.local(warehouse)
    with contextlib.suppress(ss.TableNotFoundError):  # start afresh on every run
        catalog.drop_table("shop.orders", purge=True)

    builder = (SparkSession.builder.appName("sleeper-session-catalog-example").master("local[2]")
               .config("spark.sql.warehouse.dir", os.path.join(warehouse, "spark-warehouse")))
    spark = (ss.configure_spark(builder, session_catalog=catalog)
             .config("spark.ui.showConsoleProgress", "false").config("spark.sql.shuffle.partitions", "2")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")

    spark.sql("CREATE DATABASE IF NOT EXISTS shop")
    spark.sql("USE shop")
    orders = spark.createDataFrame([(1, "2024-05-01", 9.5), (2, "2024-05-01", 20.0)],
                                   "id long, day string, amount double")
    orders.write.format("sleeper").partitionBy("day").saveAsTable("orders")
    more = spark.createDataFrame([(3, "2024-05-02", 7.0)], "id long, day string, amount double")
    more.write.format("sleeper").mode("append").saveAsTable("orders")

    spark.createDataFrame([(2, "2024-05-01", 25.0), (4, "2024-05-02", 1.0)], "id long, day string, amount double") \
        .createOrReplaceTempView("updates")
    spark.sql("MERGE INTO orders t USING updates s ON t.id = s.id "
              "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    spark.sql("SELECT day, count(*) AS orders, sum(amount) AS amount FROM orders GROUP BY day ORDER BY day").show()
    print(f"VERSION AS OF 2: {spark.sql('SELECT * FROM orders VERSION AS OF 2').count()} rows")

    spark.sql("CREATE TABLE IF NOT EXISTS visits USING parquet AS SELECT 1 AS id")
    tables = sorted((r.tableName, r.isTemporary) for r in spark.sql("SHOW TABLES").collect())
    print(f"tables in shop: {[name for name, temporary in tables if not temporary]}")
    provider = {r.col_name: r.data_type for r in spark.sql("DESCRIBE TABLE EXTENDED orders").collect()}["Provider"]
    print(f"orders is provider {provider}; the Python API's shop.orders: "
          f"{[(s.version, s.operation) for s in catalog.table('shop.orders').history()]}")
    spark.sql("DROP TABLE visits")
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/sleeper-session-catalog")

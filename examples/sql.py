"""Named tables in Spark SQL: a sleeper catalog as the Spark catalog ``lake``.

    bash scripts/examples.sh sql /tmp/wh

Creates a table with SQL, inserts, appends with ``writeTo``, merges changes with ``MERGE INTO``,
deletes a partition with ``DELETE FROM``, reads with SQL and ``spark.table``, time-travels with
``VERSION AS OF``, and shows that ``lake.shop.orders`` is the Python API's ``shop.orders``.
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
    builder = SparkSession.builder.appName("sleeper-sql-example").master("local[2]")
    spark = (ss.configure_spark(builder, catalogs={"lake": catalog})
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())  # a local session: 2 cores, small data
    spark.sparkContext.setLogLevel("ERROR")

    spark.sql("CREATE TABLE lake.shop.orders (id BIGINT, day STRING, amount DOUBLE) USING sleeper "
              "PARTITIONED BY (day)")
    spark.sql("INSERT INTO lake.shop.orders VALUES (1, '2024-05-01', 9.5), (2, '2024-05-02', 20.0)")
    first = catalog.table("shop.orders").latest().version
    spark.range(3, 6).selectExpr("id", "'2024-05-02' AS day", "id * 1.5 AS amount").writeTo("lake.shop.orders").append()

    spark.createDataFrame([(2, "2024-05-02", 25.0), (7, "2024-05-03", 7.0)], "id long, day string, amount double") \
        .createOrReplaceTempView("changes")
    merged = spark.sql("MERGE INTO lake.shop.orders t USING changes s ON t.id = s.id "
                       "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *").first()
    print(f"MERGE INTO: {merged['num_updated_rows'] if merged else 0} updated, "
          f"{merged['num_inserted_rows'] if merged else 0} inserted")
    spark.sql("DELETE FROM lake.shop.orders WHERE day = '2024-05-03'")

    spark.sql("SELECT day, count(*) AS orders, sum(amount) AS total "
              "FROM lake.shop.orders GROUP BY day ORDER BY day").show()
    print(f"spark.table: {spark.table('lake.shop.orders').count()} rows")
    old = spark.sql(f"SELECT count(*) AS n FROM lake.shop.orders VERSION AS OF {first}").first()
    print(f"VERSION AS OF {first}: {old['n'] if old else 0} rows")
    print("tables in lake.shop:", [r["tableName"] for r in spark.sql("SHOW TABLES IN lake.shop").collect()])
    history = catalog.table("shop.orders").history()
    print("python API history:", [(s.version, s.operation) for s in history])
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/sleeper-sql-example")

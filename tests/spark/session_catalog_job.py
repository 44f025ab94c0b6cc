"""A PySpark driver with the sleeper session catalog over an embedded Hive metastore (Derby), as
a notebook on a cluster has it: no ``ss.register`` anywhere.

    python tests/spark/session_catalog_job.py WORK_DIR

It starts with a ``format("sleeper")`` read (the first statement of the session), then makes
``db.events`` with ``saveAsTable`` beside a Parquet table, changes it with SQL, reads its changes
as a stream and describes it, and prints one JSON object: what it saw. Run by
tests/spark/test_session_catalog_hive.py. (Other applications over one metastore, a metastore
service and the Thrift server are tested with the standalone metastore.)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession

import sleeper_spark as ss


def session(work: Path, catalog: ss.Catalog) -> SparkSession:
    builder = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.warehouse.dir", str(work / "spark-warehouse"))
               .config("spark.hadoop.javax.jdo.option.ConnectionURL",
                       f"jdbc:derby:;databaseName={work / 'metastore_db'};create=true")
               .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={work}")
               .enableHiveSupport())
    spark = ss.configure_spark(builder, session_catalog=catalog).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def rows(frame: Any) -> list[list[Any]]:
    return sorted([list(row) for row in frame.collect()])


def write(spark: SparkSession, catalog: ss.Catalog) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    seen["first read"] = rows(spark.read.format("sleeper").options(**catalog.options()).load("db.before"))
    spark.sql("CREATE DATABASE db")
    frame = spark.createDataFrame([(1, "a", "d1"), (2, "b", "d2")], "id long, v string, day string")
    frame.write.format("sleeper").partitionBy("day").saveAsTable("db.events")
    spark.createDataFrame([(2, "B", "d2"), (3, "c", "d3")], "id long, v string, day string") \
        .createOrReplaceTempView("updates")
    spark.sql("MERGE INTO db.events t USING updates s ON t.id = s.id "
              "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    seen["events"] = rows(spark.table("db.events"))
    query = (spark.readStream.option("startingVersion", "2").changes("db.events").writeStream
             .format("memory").queryName("event_changes").trigger(availableNow=True).start())
    query.awaitTermination(300)
    seen["changes"] = rows(spark.sql("SELECT id, _change_type, _commit_version FROM event_changes"))
    described = {r.col_name: r.data_type for r in spark.sql("DESCRIBE TABLE EXTENDED db.events").collect()}
    seen["provider"] = described.get("Provider")
    spark.sql("CREATE TABLE db.p USING parquet AS SELECT 1L AS id")
    spark.sql("INSERT INTO db.p VALUES (2)")
    seen["parquet"] = rows(spark.table("db.p"))
    seen["tables"] = sorted(r.tableName for r in spark.sql("SHOW TABLES IN db").collect() if not r.isTemporary)
    return seen


def main(work: Path) -> None:
    catalog = ss.Catalog.local(str(work / "warehouse"))
    before = catalog.create_table("db.before", pa.schema([("n", pa.int64())]))
    before.write(pa.table({"n": [7]}))  # an Arrow write: nothing of Spark's has run
    spark = session(work, catalog)
    print(json.dumps(write(spark, catalog)), flush=True)
    spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]))

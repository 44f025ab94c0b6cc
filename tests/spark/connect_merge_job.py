"""Run by test_spark_connect.py: MERGE and UPDATE from a Spark Connect client, whose conditions
are read from their text (the client has no JVM to resolve them), on 40 files of clustered ids;
and a DELETE over a partition column, which drops whole files.

    python tests/spark/connect_merge_job.py sc://127.0.0.1:PORT WAREHOUSE

Prints one JSON line: each change's operation metrics, and whether the table's rows are then
those the same changes give on a plain copy of the rows.
"""

from __future__ import annotations

import json
import sys

import pyarrow as pa
from pyspark.sql import SparkSession

import sleeper_spark as ss

FILES, ROWS = 40, 5_000  # file k holds ids 5,000k .. 5,000k + 4,999


def main(url: str, warehouse: str) -> None:
    spark = SparkSession.builder.remote(url).getOrCreate()
    table = ss.Catalog.local(warehouse).create_table("clustered", pa.schema([("id", pa.int64()), ("note", pa.string())]))
    for k in range(FILES):
        ids = list(range(k * ROWS, (k + 1) * ROWS))
        table.write(pa.table({"id": pa.array(ids, pa.int64()), "note": [f"n{i}" for i in ids]}))
    source = spark.createDataFrame([(5, "x"), (20_002, "y")], "id long, note string")

    merged = (table.merge(source, "target.id = source.id OR target.id = source.id + 100000")
              .when_matched_update(set={"note": "source.note"}).execute())
    updated = table.update(spark, {"note": "'u'"}, where="id = 7 OR (id BETWEEN 150000 AND 150001)")

    # A delete over the partition column of another table: 3 files a day, 4 days
    days = ss.Catalog.local(warehouse).create_table(
        "days", pa.schema([("id", pa.int64()), ("day", pa.string())]), partition_by=["day"])
    for k in range(3):
        days.write(pa.table({"id": pa.array(range(k * 8, k * 8 + 8), pa.int64()), "day": [f"d{i % 4}" for i in range(8)]}))
    deleted = days.delete_where(spark, "day = 'd1' OR day IN ('d3')")
    kept_days = sorted(set(days.scan().to_pydict()["day"]))

    # The same changes on the raw rows: ids 5, 100005, 20002 and 120002 take the source's note; then 7,
    # 150000 and 150001 take 'u'
    truth = {i: f"n{i}" for i in range(FILES * ROWS)}
    truth.update({5: "x", 100_005: "x", 20_002: "y", 120_002: "y", 7: "u", 150_000: "u", 150_001: "u"})
    rows = table.scan().to_pydict()
    print(json.dumps({"merge": merged.operation_metrics, "update": updated.operation_metrics,
                      "delete": deleted.operation_metrics, "kept_days": kept_days,
                      "rows_are_the_truth": dict(zip(rows["id"], rows["note"], strict=True)) == truth}),
          flush=True)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

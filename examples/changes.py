"""A change data capture consumer: keeping a downstream copy in step with a table that MERGE changes.

    bash scripts/examples.sh changes /tmp/wh

A table of customers receives upserts and deletes through ``MERGE INTO``. A consumer keeps a
downstream copy (a dict standing in for a search index or a cache) in step by reading only what
changed since the version it last applied: ``spark.read.changes`` with ``startingVersion``, the
``CHANGES`` clause in SQL, and ``readStream.changes`` with an ``availableNow`` trigger, whose
checkpoint remembers where it stopped. With the table property ``changes.row_id`` set,
``computeUpdates`` pairs each update's old and new row.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from typing import Any

from pyspark.sql import SparkSession

import sleeper_spark as ss


def apply(index: dict[int, str], rows: list[Any]) -> None:
    """Applies change rows to the downstream copy, in commit order: deletes before inserts."""
    order = {"delete": 0, "update_preimage": 0, "insert": 1, "update_postimage": 1}
    for row in sorted(rows, key=lambda r: (r["_commit_version"], order[r["_change_type"]])):
        if row["_change_type"] in ("delete", "update_preimage"):
            index.pop(row["id"], None)
        else:
            index[row["id"]] = row["name"]


def main(warehouse: str) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers need sleeper_spark too
    catalog = ss.Catalog.local(warehouse)
    with contextlib.suppress(ss.TableNotFoundError):  # start afresh on every run
        catalog.drop_table("crm.customers", purge=True)
    builder = SparkSession.builder.appName("sleeper-changes-example").master("local[2]")
    spark = (ss.configure_spark(builder, catalogs={"lake": catalog})
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())  # a local session: 2 cores, small data
    spark.sparkContext.setLogLevel("ERROR")

    spark.sql("CREATE TABLE lake.crm.customers (id BIGINT, name STRING) USING sleeper "
              "TBLPROPERTIES ('changes.row_id' = 'id')")
    spark.sql("INSERT INTO lake.crm.customers VALUES (1, 'Ada'), (2, 'Brian'), (3, 'Cleo')")

    def merge(rows: str) -> None:
        spark.sql(f"MERGE INTO lake.crm.customers t USING (SELECT * FROM VALUES {rows} AS s(id, name, gone)) s "
                  "ON t.id = s.id WHEN MATCHED AND s.gone THEN DELETE WHEN MATCHED THEN UPDATE SET name = s.name "
                  "WHEN NOT MATCHED AND NOT s.gone THEN INSERT (id, name) VALUES (s.id, s.name)")

    index: dict[int, str] = {}
    applied = 0  # the last version the downstream copy holds
    for batch in ("(2, 'Bryan', false), (4, 'Dora', false)", "(3, NULL, true), (5, 'Emil', false)"):
        merge(batch)
        rows = spark.read.option("startingVersion", str(applied + 1)).changes("lake.crm.customers").collect()
        apply(index, rows)
        applied = max([applied] + [r["_commit_version"] for r in rows])
        print(f"applied changes up to version {applied}: {len(rows)} change rows; copy = {sorted(index.items())}")
    current = catalog.table("crm.customers").scan().to_pydict()
    print(f"copy equals the table: {index == dict(zip(current['id'], current['name'], strict=True))}")

    updates = spark.read.option("startingVersion", "3").option("computeUpdates", "true") \
        .changes("lake.crm.customers").where("_change_type LIKE 'update%'").orderBy("_change_type").collect()
    print("computeUpdates: " + ", ".join(f"{r['_change_type']} {r['id']} {r['name']}" for r in updates))
    counts = spark.sql("SELECT _change_type, count(*) AS n FROM lake.crm.customers CHANGES FROM VERSION 2 "
                       "GROUP BY _change_type ORDER BY _change_type").collect()
    print("CHANGES FROM VERSION 2: " + ", ".join(f"{r['_change_type']}={r['n']}" for r in counts))

    checkpoint = tempfile.mkdtemp(prefix="changes-checkpoint-")
    streamed: list[Any] = []

    def run_stream() -> None:
        query = (spark.readStream.option("startingVersion", "2").changes("lake.crm.customers").writeStream
                 .foreachBatch(lambda df, _: streamed.extend(df.collect()))
                 .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
        query.awaitTermination()

    run_stream()
    first_run = len(streamed)
    merge("(1, 'Ada L.', false)")
    run_stream()  # the checkpoint resumes after the versions the first run delivered
    print(f"stream: {first_run} change rows, then {len(streamed) - first_run} after one more MERGE")
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="sleeper-wh-"))

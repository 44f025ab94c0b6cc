"""Run by test_merge_races.py: a second Spark driver that upserts the same keys as the test, with
SQL's ``MERGE INTO`` on the catalog's table ``lake.t``.

    python tests/changes/merge_job.py OPTIONS_JSON MERGES FIRST_KEY KEYS [READY_FILE]

Creates READY_FILE (if given) once its session is up, just before its first merge. Prints one
JSON line: how many of its merges committed and how many gave up on conflicts.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pyspark.sql import SparkSession

import sleeper_spark as ss


def upsert(spark: SparkSession, table: ss.Table, first_key: int, keys: int) -> ss.Snapshot:
    """Adds 1 to the count of each key, inserting the keys the table lacks."""
    source = spark.range(first_key, first_key + keys).selectExpr("id", "1 AS count")
    return (table.merge(source, "target.id = source.id")
            .when_matched_update(set={"count": "target.count + 1"})
            .when_not_matched_insert()
            .execute())


def upsert_by_sql(spark: SparkSession, name: str, first_key: int, keys: int) -> None:
    """:func:`upsert` as a ``MERGE INTO`` of the SQL catalog's table ``name``."""
    spark.range(first_key, first_key + keys).selectExpr("id", "1 AS count").createOrReplaceTempView("upserts")
    spark.sql(f"MERGE INTO {name} AS target USING upserts AS source ON target.id = source.id "
              "WHEN MATCHED THEN UPDATE SET count = target.count + 1 WHEN NOT MATCHED THEN INSERT *")


def main(options: dict[str, str], merges: int, first_key: int, keys: int, ready: str | None = None) -> None:
    catalog = ss.Catalog.from_options(options)
    spark = ss.configure_spark(SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
                               .config("spark.ui.showConsoleProgress", "false")
                               .config("spark.sql.shuffle.partitions", "2"), catalogs={"lake": catalog}).getOrCreate()
    ss.register(spark)
    if ready is not None:
        Path(ready).touch()
    committed = gave_up = 0
    for _ in range(merges):
        try:
            upsert_by_sql(spark, "lake.t", first_key, keys)
            committed += 1
        except Exception as error:
            if not isinstance(ss.sleeper_error(error), ss.CommitConflictError):
                raise
            gave_up += 1
    print(json.dumps({"committed": committed, "gave_up": gave_up}), flush=True)
    spark.stop()


if __name__ == "__main__":
    main(json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), *sys.argv[5:6])

"""Run by the session catalog's metastore tests: a Spark driver of its own, as another application
on another machine would be, whose session catalog is the sleeper session catalog over a Hive
metastore. Its code never calls ``ss.register``: the jar starts its Python side itself.

    python tests/session_catalog/metastore_driver.py ROLE CONFIG_JSON

``append``: creates ``db.events`` first if told to (else waits for AFTER, once another driver has),
loads it, creates READY, waits for START, then appends through ``saveAsTable``, each append tagged
with its writer and seq (for the invariant checker) and an idempotent ``app_id`` / ``app_version``;
it reports when its appends began and ended, creates DONE, and, if told to, waits for every
driver's DONE and then reads what the metastore holds of ``db.events`` and the rows through SQL.
``save``: one ``saveAsTable`` of a new table, and the error it met. Each prints one JSON line last.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

import sleeper_spark as ss

TABLE = "db.events"
ROWS_PER_APPEND = 3
COLUMNS = "id BIGINT, writer INT, seq INT"
WAIT_S = 300.0


def session(config: dict[str, Any]) -> SparkSession:
    catalog = ss.Catalog.local(config["warehouse"])
    builder = (SparkSession.builder.master("local[1]").appName(f"metastore-{config['role']}")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "1")
               .config("spark.hadoop.hive.metastore.uris", config["metastore_uri"])
               .config("spark.sql.warehouse.dir", config["spark_warehouse"])
               .enableHiveSupport())
    return ss.configure_spark(builder, session_catalog=catalog).getOrCreate()


def wait_for(path: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not Path(path).exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} never appeared")
        time.sleep(0.05)


def append_rows(writer: int, seq: int) -> list[tuple[int, int, int]]:
    """The rows of one append: ids no other append has."""
    return [(writer * 100_000 + seq * 100 + k, writer, seq) for k in range(ROWS_PER_APPEND)]


def append(spark: SparkSession, config: dict[str, Any]) -> dict[str, Any]:
    writer = int(config["writer"])
    if config.get("create"):
        spark.sql("CREATE DATABASE IF NOT EXISTS db")
        spark.sql(f"CREATE TABLE {TABLE} ({COLUMNS}) USING sleeper")
    else:
        wait_for(config["after"])
    # Loading the table starts the driver's Python side, which takes seconds: done before the start,
    # so that both drivers' appends overlap instead of one driver's all coming first.
    spark.sql(f"SELECT * FROM {TABLE} LIMIT 0").collect()
    Path(config["ready"]).touch()
    wait_for(config["start"])
    began = time.time()
    outcomes = []
    for seq in range(int(config["appends"])):
        frame = spark.createDataFrame(append_rows(writer, seq), COLUMNS)
        try:
            (frame.write.format("sleeper").mode("append")
             .option("metadata.writer", str(writer)).option("metadata.seq", str(seq))
             .option("app_id", f"metastore-driver-{writer}").option("app_version", str(seq + 1))
             .saveAsTable(TABLE))
            committed = True
        except Exception as error:
            if not isinstance(ss.sleeper_error(error), ss.CommitConflictError):
                raise
            committed = False  # gave up after its retries: it must have left no trace
        outcomes.append({"seq": seq, "rows": ROWS_PER_APPEND, "committed": committed})
        if seq == 0:
            # A barrier after the first append: every driver has begun before any goes on, so the
            # drivers' appends overlap however slowly the machine runs them.
            Path(config["first"]).touch()
            for other in config["firsts"]:
                wait_for(other)
    result = {"writer": writer, "outcomes": outcomes, "began": began, "ended": time.time()}
    Path(config["done"]).touch()
    if config.get("read_after"):
        for done in config["read_after"]:
            wait_for(done)
        result["read"] = read(spark)
    return result


def read(spark: SparkSession) -> dict[str, Any]:
    """What the metastore holds of the table, and its rows through SQL, once every append is done."""
    tables = [(row["namespace"], row["tableName"]) for row in spark.sql("SHOW TABLES IN db").collect()]
    described = {row["col_name"]: row["data_type"] for row in spark.sql(f"DESCRIBE TABLE EXTENDED {TABLE}").collect()}
    # The metastore's own record of the table, not what the sleeper session catalog makes of it.
    entry = spark._jsparkSession.sharedState().externalCatalog().getTable("db", "events")
    ids = [row["id"] for row in spark.sql(f"SELECT id FROM {TABLE}").collect()]
    return {"tables": tables, "described": described, "ids": ids,
            "entry": {"type": entry.tableType().name(), "provider": entry.provider().get(),
                      "location": entry.storage().locationUri().get().toString()}}


def save(spark: SparkSession, config: dict[str, Any]) -> dict[str, Any]:
    frame = spark.createDataFrame(append_rows(0, 0), COLUMNS)
    try:
        frame.write.format("sleeper").mode("append").saveAsTable(TABLE)
    except Exception as error:
        found = ss.sleeper_error(error)
        return {"saved": False, "error": type(error).__name__, "message": str(error),
                "sleeper_error": None if found is None else type(found).__name__,
                "sleeper_message": None if found is None else str(found)}
    return {"saved": True}


ROLES = {"append": append, "save": save}


def main(role: str, config: dict[str, Any]) -> None:
    spark = session({**config, "role": role})
    result = ROLES[role](spark, config)
    print(json.dumps(result), flush=True)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], json.loads(sys.argv[2]))

"""Mistakes a newcomer makes with format("sleeper"), one after another in one Spark session.

    python tests/spark/messages_job.py WORK_DIR

Prints one JSON line per mistake: the exception's type and message. Run by
tests/spark/test_messages.py, which also reads this process's stderr.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession

import sleeper_spark as ss


def attempt(label: str, action: Callable[[], Any]) -> None:
    try:
        action()
        outcome = {"label": label, "type": None, "message": ""}
    except Exception as error:
        # Spark raises its own exceptions; ss.sleeper_error gives back the one the source raised.
        typed = ss.sleeper_error(error) or error
        outcome = {"label": label, "type": type(typed).__name__, "message": str(typed),
                   "raised": type(error).__name__, "spark_message": str(error)}
    print(json.dumps(outcome), flush=True)


def main(work: Path) -> None:
    spark = (SparkSession.builder.master("local[1]").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    ss.register(spark)
    catalog = ss.Catalog.local(str(work / "warehouse"))
    required = catalog.create_table("required", pa.schema([pa.field("n", pa.int64(), nullable=False)]))
    required.write(pa.table({"n": pa.array([1], pa.int64())}, schema=required.schema))
    damaged = catalog.create_table("damaged", pa.schema([("n", pa.int64())]))
    damaged.write(pa.table({"n": [1]}))
    for path in (work / "warehouse" / "damaged").rglob("*.parquet"):
        path.unlink()  # the next read of this table fails inside an executor
    days = spark.createDataFrame([("2024-05-01", 1)], "day string, n long")
    nulls = spark.createDataFrame([(None,)], "n long")
    missing = ss.Catalog.local(str(work / "no" / "such" / "warehouse")).options()

    def sleeper_read(options: dict[str, str], name: str) -> Any:
        return spark.read.format("sleeper").options(**options).load(name)

    attempt("partitionBy", lambda: days.write.partitionBy("day").format("sleeper").options(**catalog.options())
            .mode("append").save("events"))
    attempt("typo", lambda: days.write.format("sleeper").options(**catalog.options()).option("partitionby", "day")
            .mode("append").save("events"))
    attempt("no table", lambda: sleeper_read(catalog.options(), "nope"))
    attempt("no warehouse", lambda: sleeper_read(missing, "events"))
    attempt("executor read", lambda: sleeper_read(catalog.options(), "damaged").count())
    attempt("executor write", lambda: nulls.write.format("sleeper").options(**catalog.options()).mode("append")
            .save("required"))
    spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]))

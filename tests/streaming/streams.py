"""What the streaming tests share: input files, and streaming queries run to completion."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import sleeper_spark as ss

INPUT_SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("value", pa.float64())])
INPUT_DDL = "id long, name string, value double"


def rows(start: int, count: int) -> pa.Table:
    ids = list(range(start, start + count))
    return pa.table({"id": ids, "name": [f"n{i % 97}" for i in ids], "value": [i / 4 for i in ids]},
                    schema=INPUT_SCHEMA)


def write_inputs(folder: Path, first_file: int, files: int, rows_per_file: int) -> None:
    """Input files ``f<nnnnn>.parquet``, file ``k`` holding ids ``k*rows_per_file ..``."""
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(first_file, first_file + files):
        pq.write_table(rows(k * rows_per_file, rows_per_file), folder / f"f{k:05d}.parquet")


def sink_to_table(spark: Any, catalog: ss.Catalog, inputs: Path, checkpoint: Path, table: str = "events",
                  **options: str) -> Any:
    """Streams every input file not yet seen into ``table``, one file per micro-batch; waits for it."""
    query = (spark.readStream.schema(INPUT_DDL).option("maxFilesPerTrigger", 1).parquet(str(inputs))
             .writeStream.format("sleeper").options(**catalog.options()).options(**options)
             .option("checkpointLocation", str(checkpoint)).outputMode("append")
             .trigger(availableNow=True).start(table))
    return finished(query)


def table_stream(spark: Any, catalog: ss.Catalog, output: Path, checkpoint: Path, table: str = "events",
                 **options: str) -> Any:
    """A stream of the table's new versions into a Parquet folder (an exactly-once sink), not started."""
    return (spark.readStream.format("sleeper").options(**catalog.options()).options(**options).load(table)
            .writeStream.format("parquet").option("path", str(output))
            .option("checkpointLocation", str(checkpoint)))


def stream_table(spark: Any, catalog: ss.Catalog, output: Path, checkpoint: Path, table: str = "events",
                 **options: str) -> Any:
    """Streams the table's versions not yet delivered into a Parquet folder; waits for it."""
    return finished(table_stream(spark, catalog, output, checkpoint, table, **options)
                    .trigger(availableNow=True).start())


def delivered_ids(spark: Any, output: Path) -> list[int]:
    """The ids the Parquet sink holds, sorted, repeats kept."""
    if not output.exists():
        return []
    return sorted(row.id for row in spark.read.schema(INPUT_DDL).parquet(str(output)).select("id").collect())


def finished(query: Any, timeout_s: int = 300) -> Any:
    """Waits for an availableNow query; a failed query raises its error, a stuck one is stopped."""
    if not query.awaitTermination(timeout_s):
        query.stop()
        raise AssertionError(f"the streaming query did not finish within {timeout_s} s")
    return query

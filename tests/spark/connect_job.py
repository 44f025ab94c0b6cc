"""Run by test_spark_connect.py: a Spark Connect client of a server with or without the jar.

    python tests/spark/connect_job.py sc://127.0.0.1:PORT WAREHOUSE [registered|unregistered]

A Connect client has no JVM of its own, so format("sleeper") runs through the sleeper Python
data source on the server, and helper reads through Spark's parquet source over the version's
files. Prints one JSON line. ``unregistered`` (for a server with the jar) never calls ``ss.register``:
the first statement, a ``format("sleeper")`` write, finds the server's own Python side.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

import pyarrow as pa
from pyspark.sql import SparkSession

import sleeper_spark as ss


def main(url: str, warehouse: str, registration: str) -> None:
    spark = SparkSession.builder.remote(url).getOrCreate()
    if registration == "registered":
        ss.register(spark)
    catalog = ss.Catalog.local(warehouse)
    options = catalog.options()
    rows = spark.range(100).selectExpr("id", "cast(id % 4 as string) as part")
    rows.write.format("sleeper").options(**options).option("partition_by", "part").mode("append").save("events")
    rows.where("id < 10").write.format("sleeper").options(**options).mode("append").save("events")
    helper = catalog.write(spark.range(100, 105).selectExpr("id", "'x' as part"), "events")
    loaded = spark.read.format("sleeper").options(**options).load("events")
    missing: str | None = None
    try:
        spark.read.format("sleeper").options(**options).load("nope").collect()
    except Exception as error:
        typed = ss.sleeper_error(error)
        missing = type(typed).__name__ if typed is not None else repr(error)[:500]
    # Helper reads: Spark's parquet source over exactly the version's files, the table's schema given
    helper_read = catalog.read(spark, "events")
    table = catalog.table("events")
    expected = sorted(zip(*table.scan().to_pydict().values(), strict=True))
    helper_rows = sorted(tuple(row) for row in helper_read.collect())
    version_files = sorted(Path(table.location, f.path).resolve().as_uri() for f in table.files())
    read_files = sorted(Path(unquote(urlparse(uri).path)).resolve().as_uri() for uri in helper_read.inputFiles())
    table.add_columns([pa.field("note", pa.string())])
    with_note = catalog.read(spark, "events")
    spark.conf.set("spark.sleeper_spark.connect.read", "source")
    source_read = catalog.read(spark, "events").count()
    spark.conf.unset("spark.sleeper_spark.connect.read")
    # Helper writes: Spark's parquet writer, committed from the files (partition nulls, NaN, long strings)
    source = spark.range(300).selectExpr(
        "id", "CASE WHEN id % 7 = 0 THEN NULL ELSE cast(id % 3 AS string) END AS part",
        "CASE WHEN id % 5 = 0 THEN double('NaN') ELSE id / 2 END AS x", "repeat(cast(id AS string), 200) AS s")
    written = catalog.write(source, "written", partition_by=["part"])
    table_written = catalog.table("written")
    written_rows = sorted(map(str, zip(*table_written.scan().to_pydict().values(), strict=True)))
    source_rows = sorted(map(str, (tuple(row) for row in source.collect())))
    print(json.dumps({
        "count": loaded.count(),
        "part_1": loaded.where("part = '1'").count(),
        "at_version_2": spark.read.format("sleeper").options(**options).option("versionAsOf", 2).load("events").count(),
        "helper_version": helper.version,
        "helper_read": catalog.read(spark, "events").where("part = 'x'").count(),
        "missing": missing,
        "helper_rows_are_the_tables": helper_rows == expected,
        "helper_files_are_the_versions": read_files == version_files,
        "added_column_reads_null": with_note.where("note IS NULL").count() == 115 and "note" in with_note.columns,
        "source_read": source_read,
        "helper_write": [written.version, written.operation, written.rows_added],
        "helper_write_rows": written_rows == source_rows,
        "helper_write_by_spark": all(f.path.startswith("data/spark-") for f in table_written.files()),
        "helper_write_verifies": table_written.verify(deep=True).ok,
        "helper_write_parts": sorted({str(f.partition["part"]) for f in table_written.files()}),
    }), flush=True)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "registered")

"""Helper writes on a Spark Connect session: Spark's own ``parquet`` writer, committed from the files.

The write is the native path's (:mod:`sleeper_spark.spark.native.native_write`): Spark writes into a
folder no other write uses, ``data/spark-<write id>/``, a level of subfolders per partition column
named by its values (where Spark reads them back from the names, else by a hash), every table
column kept in the files. Without the jar no task describes its file,
so the files are described afterwards, with no data byte crossing to the client:

1. one Spark job on the server reads the new files back (``binaryFile``) for each one's size and
   SHA-256, the checksum every data file carries;
2. the client lists the folder and reads each file's footer (a few ranged reads) for its row
   count, partition values and column statistics; a column the footer cannot describe exactly
   (floats holding NaN, nested columns, very long strings) is read from the file, that column only;
3. the files are committed as one snapshot, as every write is (``Table.commit_files``).

So a write costs Spark's write, a second read of the written bytes on the server, and per file a
LIST entry and a footer read from the client. A job that fails commits nothing and its folder is
deleted (best effort). Where the server has the jar, ``format("sleeper")``'s write is better (the
files describe themselves as they are written) and a helper write takes it. The session setting
``spark.sleeper_spark.connect.write`` chooses as ``spark.sleeper_spark.connect.read`` does
(``auto``, ``parquet``, ``source``); partial overwrites (``replace_where``, dynamic partition
overwrite) always go through ``format("sleeper")``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq

from sleeper_spark.layout import spark_write_dir
from sleeper_spark.models import FileRef, Snapshot, TableSchema
from sleeper_spark.models.schema_evolution import merged_schema
from sleeper_spark.spark.connect.connect_read import connect_path, server_location
from sleeper_spark.spark.native.footers import described_file
from sleeper_spark.spark.native.native_read import native_types
from sleeper_spark.spark.native.native_write import remove_write_dir, run_write_job
from sleeper_spark.state import TableState
from sleeper_spark.storage import join_key
from sleeper_spark.table.writes import PartialOverwrite, new_write_id

if TYPE_CHECKING:
    from sleeper_spark.table import Table

log = logging.getLogger(__name__)

WRITE_CONF = "spark.sleeper_spark.connect.write"


def write_parquet(table: Table, df: Any, state: TableState, mode: str, metadata: Mapping[str, str],
                  app_id: str | None, app_version: int | None, merge: TableSchema | None = None,
                  partial: PartialOverwrite | None = None) -> Snapshot | None:
    """Writes ``df`` (checked against ``state``'s schema) as one snapshot with Spark's ``parquet``
    writer, or returns None where this session writes through the sleeper data source instead."""
    spark = df.sparkSession
    if partial is not None or connect_path(spark, WRITE_CONF) != "parquet":
        return None  # the jar's path where the server has it, or the Python data source
    schema = merged_schema(state.schema, merge, table.name) if merge is not None else state.schema
    root = server_location(spark, table.location, table.catalog.config.s3_endpoint)
    if root is None or not native_types(schema):
        return None
    write_id = new_write_id()
    write_dir = spark_write_dir(write_id)
    target = f"{root.rstrip('/')}/{write_dir}"
    try:
        run_write_job(spark, df, schema, state.partition_by, target, "parquet", {}, state)
        files = _described(table, spark, target, write_dir, schema, state.partition_by)
    except BaseException:
        remove_write_dir(table, write_dir)
        raise
    result = table.commit_files(files, mode, dict(metadata), write_id, app_id, app_version, merge=merge)
    log.info("table %s: Spark wrote %d file(s) for version %d", table.name, len(files), result.snapshot.version)
    return result.snapshot


def _described(table: Table, spark: Any, target: str, write_dir: str, schema: TableSchema,
               partition_by: tuple[str, ...]) -> list[FileRef]:
    """The written files as FileRefs (see the module doc); empty files and what Hadoop left beside
    the files (``.crc`` files on the local disk) are deleted."""
    listed = [info.key for info in table.store.list(join_key(table.root, write_dir) + "/")]
    prefix = join_key(table.root, "")
    data = sorted(key[len(prefix):].lstrip("/") for key in listed if key.endswith(".parquet"))
    checksums = _server_checksums(spark, target, write_dir)

    def describe(path: str) -> FileRef:
        size, digest = checksums[path]
        with table.store.open_input(join_key(table.root, path)) as source:
            return described_file(pq.ParquetFile(source), path, size, f"sha256:{digest}", schema, partition_by,
                                  table.name)

    with ThreadPoolExecutor(max_workers=8, thread_name_prefix="sleeper-footer") as pool:
        files = list(pool.map(describe, data))
    extra = [key for key in listed if not key.endswith(".parquet")]
    extra += [join_key(table.root, f.path) for f in files if f.row_count == 0]
    if extra:
        table.store.delete_many(extra)
    return [f for f in files if f.row_count > 0]


def _server_checksums(spark: Any, target: str, write_dir: str) -> dict[str, tuple[int, str]]:
    """Size and SHA-256 of every Parquet file under ``target``, computed by the server, by path
    relative to the table root."""
    from pyspark.sql import functions as F

    rows = (spark.read.format("binaryFile").option("recursiveFileLookup", "true").option("pathGlobFilter", "*.parquet")
            .load(target).select("path", "length", F.sha2("content", 256).alias("sha256")).collect())
    marker = f"/{write_dir}/"
    found: dict[str, tuple[int, str]] = {}
    for row in rows:
        path = str(row["path"])
        found[write_dir + "/" + path.split(marker, 1)[1]] = (int(row["length"]), str(row["sha256"]))
    return found


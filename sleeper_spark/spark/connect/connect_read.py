"""Helper reads on a Spark Connect session: Spark's own ``parquet`` source over a version's files.

A Connect client has no JVM, so the jar's file index cannot be handed the version's files; but the
client knows them (the log is read here), and Spark's ``parquet`` source reads exactly a list of
files, on any server, with or without the jar. So a helper read on Connect is
``spark.read.schema(<the table's columns>).parquet(<every file of the version>)``:

- Spark's own reader and its column pruning, filter pushdown and row-group skipping by the files'
  footers (not by filters on float, date or timestamp columns, where parquet-mr's filters lose
  rows: :data:`sleeper_spark.spark.connect.parquet_scan.PARQUET_FILTERS_OFF` and
  :func:`scan_frame`); the files are those of the version, pruned by partition folders where
  they name the values, and by nothing else (the jar's index also skips whole files by the log's
  statistics per query; this cannot);
- the table's schema is given, so files written before a column was added read it as null, and
  Spark's Parquet reader widens a column written with a narrower type;
- Spark lists the folders that hold the version's files (one LIST request per folder, as for a
  plain Parquet table) and keeps exactly the version's files by their names or paths; where the
  folders name the partitions, a partition filter skips whole folders
  (:mod:`sleeper_spark.spark.connect.parquet_scan`). The jar's index lists nothing.

It needs the server to reach the table's store: local paths are ``file:`` URIs (the server must
see the same disk), and ``s3://`` is named with the scheme of ``spark.sleeper_spark.connect.s3Scheme``
(default ``s3a``: hadoop-aws on the server; EMR and Databricks name it ``s3``). Where the server has
the jar, ``format("sleeper")`` is better still (the jar's index, pruned per query, and no file
listing) and a helper read takes it. The session setting ``spark.sleeper_spark.connect.read``
chooses: ``auto`` (the default: the jar's path where the server has it, else ``parquet``),
``parquet``, or ``source`` (``format("sleeper")``: the jar's path, or without the jar the sleeper
Python data source, which needs nothing of the server but Python and this package).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sleeper_spark.models import TableSchema
from sleeper_spark.process_state import SAID_ONCE
from sleeper_spark.spark.common.conversions import quoted_column, spark_schema
from sleeper_spark.spark.connect.parquet_scan import ParquetScan, parquet_scan, reader_options
from sleeper_spark.spark.native.native_read import native_types

if TYPE_CHECKING:
    from sleeper_spark.table import Table

log = logging.getLogger(__name__)

READ_CONF = "spark.sleeper_spark.connect.read"
_UNFILTERED = frozenset({"float32", "float64", "date", "timestamp"})
S3_SCHEME_CONF = "spark.sleeper_spark.connect.s3Scheme"


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (no JVM in this process)."""
    return getattr(spark, "_jvm", None) is None and type(spark).__module__.startswith("pyspark.sql.connect")


def connect_path(spark: Any, setting: str) -> str:
    """How a helper read or write on Connect runs (the session setting ``setting``): ``jar`` where
    the server has the jar and the setting is ``auto`` (the default), else ``parquet`` or ``source``."""
    from sleeper_spark.spark.common.session import has_jar_source

    chosen = str(spark.conf.get(setting, "auto")).strip().lower()
    if chosen == "auto":
        return "jar" if has_jar_source(spark) else "parquet"
    return chosen


def read_parquet(table: Table, spark: Any, version: int | None) -> Any | None:
    """The table at ``version`` (None: now) read by Spark's ``parquet`` source, or None when this
    session should read through ``format("sleeper")`` instead (see the module doc)."""
    if connect_path(spark, READ_CONF) != "parquet":
        return None
    state = table.state(version)
    if not native_types(state.schema):
        _tell("nanos", "a table with nanosecond timestamps is read through the sleeper Python data source")
        return None
    root = server_location(spark, table.location, table.catalog.config.s3_endpoint)
    if root is None:
        return None
    files = table.files_table(state.version)
    if files.num_rows == 0:
        return spark.createDataFrame([], spark_schema(state.schema, guarded=False))
    partitions = {column: files[f"partition.{column}"].to_pylist() for column in state.partition_by}
    types = {column: state.schema.field(column).type.name for column in state.partition_by}
    return scan_frame(spark, state.schema, parquet_scan(root, files["path"].to_pylist(), partitions, types))


def scan_frame(spark: Any, schema: TableSchema, scan: ParquetScan) -> Any:
    """``spark.read.parquet`` of ``scan``, as ``schema``'s columns in its order.

    Partition columns Spark finds in the folders' names are taken from there (a hidden column's
    values are given its name and the column's type, so that Spark casts each folder's name once,
    not each row). A top-level float, date or timestamp column, on which parquet-mr's filters
    lose rows (:data:`~sleeper_spark.spark.connect.parquet_scan.PARQUET_FILTERS_OFF`), is read
    through ``coalesce(x, x)``: the same value, NaN, -0.0 and null included, but no column Spark
    hands parquet-mr a filter on, so a filter on it never skips a row group while filters on
    every other column keep skipping them (tests/spark/test_parquet_scan.py holds Spark to it)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructField, StructType

    struct = spark_schema(schema, guarded=False)
    folder = {name: hidden for name, hidden in scan.folder_columns.items() if hidden != name}
    unfiltered = {f.name for f in schema.fields if f.type.name in _UNFILTERED and f.name not in scan.folder_columns}
    read_as = StructType([*struct.fields, *[StructField(hidden, struct[name].dataType, True)
                                            for name, hidden in folder.items()]])
    options = reader_options(schema, unfiltered | set(scan.folder_columns))
    frame = spark.read.schema(read_as).options(**options, **scan.options).parquet(*scan.roots)
    if scan.file_paths is not None:
        frame = frame.where(F.col("_metadata.file_path").isin(scan.file_paths))
    if not unfiltered and not scan.partitions_from_folders:
        return frame
    columns = []
    for field in struct.fields:
        column = F.col(quoted_column(folder.get(field.name, field.name)))
        if field.name in unfiltered:
            column = F.coalesce(column, column)
        columns.append(column.alias(field.name))
    return frame.select(*columns)  # also the table's order where Spark put the partition columns last


def server_location(spark: Any, location: str, s3_endpoint: str | None) -> str | None:
    """The table's location as the Connect server's Hadoop names it, or None where it cannot reach it."""
    scheme, sep, rest = location.partition("://")
    if not sep:
        return "file:" + str(Path(location).resolve())
    if scheme == "file":
        return location
    if scheme not in ("s3", "s3a"):
        return location
    if s3_endpoint and not spark.conf.get("spark.hadoop.fs.s3a.endpoint", ""):
        _tell("s3-endpoint", "the catalog uses a custom S3 endpoint but the server's fs.s3a.endpoint is not set: "
              "reading through the sleeper Python data source")
        return None
    return f"{spark.conf.get(S3_SCHEME_CONF, 's3a')}://{rest}"


def _tell(reason: str, message: str) -> None:
    if SAID_ONCE.first(("connect", reason)):
        log.info(message)

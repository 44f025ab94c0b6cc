"""The helper API behind ``cat.write`` / ``t.write`` / ``t.read`` for Spark DataFrames.

Both go through the ``sleeper`` format, so there is one code path. What the helper adds runs on
the driver: the current ``spark.sleeper.*`` conf as explicit options, the schema check before
any job starts, and, since Spark runs ``commit()`` in another process, finding the committed
snapshot afterwards by the write's ``write_id``. Errors raised in Spark's Python workers reach
the driver as Spark exceptions; the helper raises the sleeper_spark error they carry.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

import sleeper_spark.errors as errors
from sleeper_spark.commit import idempotent_repeat
from sleeper_spark.errors import CommitStateUnknownError, ConfigError, SleeperSparkError
from sleeper_spark.models import Snapshot, TableSchema
from sleeper_spark.models.schema import check_data_schema
from sleeper_spark.models.schema_evolution import merged_schema
from sleeper_spark.spark.common import options as opt
from sleeper_spark.spark.common.session import current_session_options, session_parallelism
from sleeper_spark.spark.connect.connect_read import is_connect, read_parquet
from sleeper_spark.spark.connect.connect_write import write_parquet
from sleeper_spark.spark.native.native_read import read_native
from sleeper_spark.spark.native.native_write import write_native
from sleeper_spark.spark.native.partial_overwrite import write_in_driver
from sleeper_spark.spark.native.write_distribution import distributed, partition_keys
from sleeper_spark.table.writes import new_write_id

if TYPE_CHECKING:
    from sleeper_spark.table import Table
    from sleeper_spark.table.writes import PartialOverwrite

_ERROR_LINE = re.compile(r"sleeper_spark\.errors\.(\w+): (.*)")


def write(table: Table, df: Any, mode: str, metadata: Mapping[str, str], app_id: str | None,
          app_version: int | None, merge_schema: bool = False, partial: PartialOverwrite | None = None) -> Snapshot:
    """Writes ``df`` as one snapshot of ``table`` and returns that snapshot.

    Spark's own Parquet writer when the session has the jar (see :mod:`sleeper_spark.spark.native.native_write`)
    or is a Spark Connect session (see :mod:`sleeper_spark.spark.connect.connect_write`), else the
    ``sleeper`` Python data source. ``partial``: the part of the table an overwrite
    replaces (see :mod:`sleeper_spark.spark.native.partial_overwrite`).
    """
    spark = df.sparkSession
    state = table.state()
    df, merge = checked_data(table.name, df, state.schema, merge_schema)
    if app_id is not None and app_version is not None:
        earlier = idempotent_repeat(state, app_id, app_version)
        if earlier is not None:
            return earlier  # an idempotent repeat: no job runs, nothing is staged
    native_write = write_parquet if is_connect(spark) else write_native
    native = native_write(table, df, state, mode, metadata, app_id, app_version, merge=merge, partial=partial)
    if native is not None:
        return native
    if table.head.stages_only:
        # The Python data source commits in a Python worker of its own, out of the transaction's reach.
        raise ConfigError(f"table {table.name!r}: a multi-table transaction writes a Spark DataFrame with Spark's own "
                          "writer, which needs the sleeper jar in the session (see docs/running.md) or a Spark "
                          "Connect session; without it, write Arrow data (df.toArrow()); nothing was written")
    write_id = new_write_id()
    write_options = {opt.WRITE_ID: write_id, **opt.metadata_option(metadata)}
    if app_id is not None and app_version is not None:
        write_options.update({opt.APP_ID: app_id, opt.APP_VERSION: str(app_version)})
    if merge_schema:
        write_options[opt.MERGE_SCHEMA] = "true"
    if partial is not None and partial.dynamic:
        write_options[opt.PARTITION_OVERWRITE_MODE] = "dynamic"
    options = opt.merge(current_session_options(spark), table.catalog.options(), write_options)
    if partial is not None and partial.replace_where is not None:
        return write_in_driver(table, df, state, partial, options, write_id, dict(metadata), app_id, app_version)
    try:
        rows = distributed(df, state, partition_keys(state.partition_by))
        rows.write.format("sleeper").options(**options).mode(mode).save(table.name)
    except Exception as error:
        raise _typed(error) from error
    state = table.head.catch_up()
    snapshot = state.snapshot_for_write(write_id)
    if snapshot is None and app_id is not None and app_version is not None:
        snapshot = idempotent_repeat(state, app_id, app_version)
    if snapshot is None:
        raise CommitStateUnknownError(
            f"table {table.name!r}: Spark reported write {write_id} as committed, but the log does not show it"
        )
    return snapshot


def checked_data(table_name: str, df: Any, schema: TableSchema, merge_schema: bool) -> tuple[Any, TableSchema | None]:
    """``df`` checked against the table's ``schema``, before any job starts; with ``merge_schema``,
    also the data's schema to merge (its new columns join the table in the write's commit) and
    ``df`` with a null column for each nullable table column it lacks."""
    data_schema = TableSchema.from_any(df.schema)
    if not merge_schema:
        check_data_schema(data_schema, schema, table_name)
        return df, None
    merged = merged_schema(schema, data_schema, table_name)
    check_data_schema(data_schema, merged, table_name, missing_ok=True)
    missing = [f for f in merged.fields if f.name not in data_schema.names]
    if missing:
        from pyspark.sql import functions as F

        from sleeper_spark.spark.common.conversions import spark_schema

        types = spark_schema(TableSchema(fields=tuple(missing)), guarded=False)
        df = df.select("*", *[F.lit(None).cast(field.dataType).alias(field.name) for field in types.fields])
    return df, data_schema


def read(table: Table, spark: Any, version: int | None, timestamp: datetime | None) -> Any:
    """The table at a version (or a time) as a DataFrame; the version is resolved here.

    Spark's own Parquet reader when the session has the jar (see :mod:`sleeper_spark.spark.native.native_read`),
    Spark's ``parquet`` source over the version's files on a Spark Connect session (see
    :mod:`sleeper_spark.spark.connect.connect_read`), else the ``sleeper`` Python data source.
    """
    resolved = table.resolve_version(version, timestamp)  # typed errors before Spark is involved
    native = read_parquet(table, spark, resolved) if is_connect(spark) else read_native(table, spark, resolved)
    if native is not None:
        return native
    read_options = {opt.SCAN_GUARD: "true"}
    if resolved is not None:
        read_options[opt.VERSION_AS_OF] = str(resolved)
    parallelism = session_parallelism(spark)
    if parallelism:
        read_options[opt.PARALLELISM] = str(parallelism)
    options = opt.merge(current_session_options(spark), table.catalog.options(), read_options)
    try:
        loaded = spark.read.format("sleeper").options(**options).load(table.name)
    except Exception as error:
        raise _typed(error) from error
    # Every query on this DataFrame now pushes the guard, so each gets a read plan of its own
    # and may skip files (see sleeper_spark.spark.source.scans).
    if opt.GUARD_COLUMN not in loaded.columns:
        return loaded  # the table has a column of that name: its scans read every file
    return loaded.where(loaded[opt.GUARD_COLUMN]).drop(opt.GUARD_COLUMN)


def _typed(error: Exception) -> Exception:
    """The sleeper_spark error a Spark exception carries (the last one named), else itself."""
    matches = _ERROR_LINE.findall(str(error))
    for name, message in reversed(matches):
        error_type = getattr(errors, name, None)
        if isinstance(error_type, type) and issubclass(error_type, SleeperSparkError):
            return error_type(message.strip())
    return error

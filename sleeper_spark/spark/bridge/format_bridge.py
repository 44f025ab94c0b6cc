"""The Python driver's side of ``format("sleeper")`` on Spark's own Parquet reader and writer.

In a session with the jar, Spark resolves ``format("sleeper")`` to the jar's ``SleeperSource``
(a source in a jar wins over a Python data source of the same name). It calls back into this
process, through py4j's callback server as ``foreachBatch`` does, to learn a read's files and
to have a write committed, so the log and the commit protocol stay here:

- ``route``: whether a read or write with these options runs natively, and the schema of the
  table version a read selects. Not native (the session switched the jar off, nanosecond
  timestamps, no Hadoop file system for the table's location): the JVM hands the work to the
  ``sleeper`` Python data source unchanged.
- ``handOver``: the version's files, in the same hand-over as ``catalog.read``
  (:mod:`sleeper_spark.spark.native.native_read`); the JVM builds its file index from them, which
  prunes for each query.
- ``write``: the same native write and commit as ``catalog.write``
  (:mod:`sleeper_spark.spark.native.native_write`), with Spark's four save modes.

Each answer is one JSON object; a sleeper_spark error goes back as ``{"error": <class>,
"message": <text>}`` and the JVM raises it message first, where :func:`ss.sleeper_error` finds it.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from sleeper_spark.commit import idempotent_repeat
from sleeper_spark.errors import ConfigError, SleeperSparkError, TableAlreadyExistsError, TableNotFoundError
from sleeper_spark.models import TableSchema
from sleeper_spark.spark.bridge.datasource import register_source
from sleeper_spark.spark.common.conversions import spark_schema, with_change_columns
from sleeper_spark.spark.common.jvm import hadoop_location, native_entry
from sleeper_spark.spark.common.options import (
    merge,
    open_catalog,
    parse_read,
    parse_write,
    reads_changes,
    session_options,
)
from sleeper_spark.spark.helper import checked_data
from sleeper_spark.spark.helper import write as write_through_helper
from sleeper_spark.spark.native.native_read import hand_over, native_root
from sleeper_spark.spark.native.native_write import write_native
from sleeper_spark.spark.sql import table_replacement
from sleeper_spark.table import Catalog, Table
from sleeper_spark.table.writes import check_partial_overwrite, check_write_args

log = logging.getLogger(__name__)

BRIDGE_INTERFACE = "sleeper.spark.bridge.FormatBridge"
# How Spark's partitionBy() reaches a V1 source: a JSON list among the write's options.
_PARTITION_COLUMNS = "__partition_columns"
# Set by the SQL catalog's writes (SleeperWriteBuilder): where Spark's own writer cannot reach the
# table, they fall back to the Python data source as the helper does, since no route chose for them.
CATALOG_WRITE = "__sleeper_catalog_write"
# Set by the SQL catalog's staged tables (StagedSleeperTable): the definition of a table to make or replace.
_STAGE = "__sleeper_stage"
_KNOWN_SESSIONS = 8
_SAVE_MODES = {"Append": "append", "Overwrite": "overwrite", "ErrorIfExists": "errorifexists", "Ignore": "ignore"}


def connect(spark: Any, entry: Any) -> None:
    """Connects this process as the driver side of ``format("sleeper")`` in ``spark``'s JVM; idempotent."""
    if entry.formatConnected():
        return
    from pyspark.java_gateway import ensure_callback_server_started

    gateway = spark.sparkContext._gateway
    ensure_callback_server_started(gateway)  # type: ignore[no-untyped-call]
    entry.connectFormat(FormatBridge(spark.sparkContext))


class FormatBridge:
    """The ``sleeper.spark.bridge.FormatBridge`` the JVM calls; each method runs on a py4j callback thread."""

    def __init__(self, context: Any) -> None:
        self._context = context
        # The Python sessions over the JVM sessions that called, by the JVM session's hash: a new
        # pyspark SparkSession costs about 2 ms of py4j calls, and a query calls two or three times.
        # Few are kept: each keeps its JVM session from being collected after its client has gone.
        self._sessions: dict[int, Any] = {}
        self._sessions_lock = threading.Lock()

    def route(self, jsession: Any, options: str, session_conf: str) -> str:
        return _answer(lambda: _route(self._session(jsession), _options(options, session_conf)))

    def handOver(self, jsession: Any, options: str, session_conf: str) -> str:  # Java name
        return _answer(lambda: _hand_over(self._session(jsession), _options(options, session_conf)))

    def write(self, jsession: Any, jdf: Any, mode: str, options: str, session_conf: str) -> str:
        def run() -> dict[str, Any]:
            from pyspark.sql import DataFrame

            spark = self._session(jsession)
            given = json.loads(options)
            partitioning = tuple(json.loads(given.pop(_PARTITION_COLUMNS, "[]")))
            from_catalog = given.pop(CATALOG_WRITE, None) is not None
            stage = given.pop(_STAGE, None)
            settings = merge(session_options(json.loads(session_conf)), given)
            if stage is None:
                return _write(spark, DataFrame(jdf, spark), mode, settings, partitioning, from_catalog)
            return _staged_write(spark, DataFrame(jdf, spark), json.loads(stage), settings)

        return _answer(run)

    def catalog(self, jsession: Any, request: str, session_conf: str) -> str:
        from sleeper_spark.spark.sql.sql_catalog import answer

        def run() -> dict[str, Any]:
            given = json.loads(request)
            given["options"] = _options(json.dumps(given.get("options", {})), session_conf)
            return answer(self._session(jsession), given)

        return _answer(run)

    def changeRows(self, jsession: Any, request: str, jsource: Any, session_conf: str) -> str:  # Java name
        from pyspark.sql import DataFrame

        from sleeper_spark.spark.sql.row_statements import answer

        def run() -> dict[str, Any]:
            spark = self._session(jsession)
            given = json.loads(request)
            given["options"] = _options(json.dumps(given.get("options", {})), session_conf)
            return answer(spark, given, None if jsource is None else DataFrame(jsource, spark))

        return _answer(run)

    def changes(self, jsession: Any, request: str, session_conf: str) -> Any:
        """A changelog's rows: the JVM's DataFrame, or an error as JSON text (see ``FormatBridge.changes``)."""
        from sleeper_spark.spark.changes import changes_of_request

        spark = self._session(jsession)
        frames: list[Any] = []

        def run() -> dict[str, Any]:
            given = json.loads(request)
            options = _options(json.dumps(given.get("options", {})), session_conf)
            table = open_catalog(options).table(given["table"])
            frames.append(changes_of_request(spark, table, given)._jdf)
            return {}

        answer = _answer(run)
        return frames[0] if frames else answer

    def register(self, jsession: Any) -> str:
        """Registers the Python data source in the JVM session that called (a Connect client's)."""
        def run() -> dict[str, Any]:
            register_source(self._session(jsession), connect)
            return {}

        return _answer(run)

    def _session(self, jsession: Any) -> Any:
        # As PySpark's foreachBatch does: a Python session over the JVM session that called, on
        # the context active now (the bridge outlives a stopped context: the JVM keeps it).
        from pyspark import SparkContext
        from pyspark.sql import SparkSession

        context = SparkContext._active_spark_context or self._context
        key = int(jsession.hashCode())
        with self._sessions_lock:
            known = self._sessions.get(key)
        if known is not None and known.sparkContext is context and known._jsparkSession.equals(jsession):
            return known
        session = SparkSession(context, jsession)
        with self._sessions_lock:
            if len(self._sessions) >= _KNOWN_SESSIONS:
                self._sessions.clear()  # sessions come and go with Connect clients: start again
            self._sessions[key] = session
        return session

    class Java:
        implements = [BRIDGE_INTERFACE]


def _answer(work: Callable[[], Mapping[str, Any]]) -> str:
    try:
        return json.dumps(dict(work()))
    except SleeperSparkError as error:
        return json.dumps({"error": type(error).__name__, "message": str(error)})
    except Exception as error:  # Spark's own failures (a failed job) go back as text
        log.debug("format('sleeper') failed on the driver side", exc_info=True)
        return json.dumps({"failure": f"{type(error).__name__}: {error}"})


def _options(options: str, session_conf: str) -> dict[str, str]:
    """The options the JVM sent over the session's ``spark.sleeper.*`` settings (both JSON)."""
    return merge(session_options(json.loads(session_conf)), json.loads(options))


def _route(spark: Any, options: Mapping[str, str]) -> dict[str, Any]:
    entry = native_entry(spark)
    if entry is None:
        return {"native": False, "schema": None}
    settings = parse_read(options)
    catalog = open_catalog(options)
    try:
        table = catalog.table(settings.table)
    except TableNotFoundError as missing:
        # A write may create it: native if Spark can write where the table would be. A read fails
        # with the message given here.
        location = catalog.backend.store.uri(settings.table)
        native = hadoop_location(spark, entry, location, catalog.config.s3_endpoint) is not None
        return {"native": native, "schema": None, "missing": str(missing)}
    version = table.resolve_version(settings.version, settings.timestamp)
    state = table.state(version)
    if reads_changes(options):  # a streaming read of changes: only the Python source streams
        return {"native": False, "schema": with_change_columns(spark_schema(state.schema, guarded=False)).json()}
    if native_root(table, spark, entry, state.schema) is None:
        return {"native": False, "schema": None}
    return {"native": True, "schema": spark_schema(state.schema, guarded=False).json()}


def _hand_over(spark: Any, options: Mapping[str, str]) -> dict[str, Any]:
    entry = native_entry(spark)
    settings = parse_read(options)
    table = open_catalog(options).table(settings.table)
    version = table.resolve_version(settings.version, settings.timestamp)
    files = hand_over(table, spark, entry, version) if entry is not None else None
    if files is None:
        raise ConfigError(f"table {table.name!r} cannot be read by Spark's own Parquet reader in this session, and a "
                          "SQL view over format('sleeper') needs it: create the view from the DataFrame instead, "
                          f"spark.read.format('sleeper')...load({table.name!r}).createOrReplaceTempView(...)")
    return {"description": files.description, "root": files.root, "manifest": files.manifest,
            "schema": files.schema_json, "partitionColumns": list(files.partition_by)}


def _write(spark: Any, df: Any, save_mode: str, options: Mapping[str, str],
           spark_partitioning: tuple[str, ...], from_catalog: bool = False) -> dict[str, Any]:
    settings = parse_write(options)
    mode = _SAVE_MODES.get(save_mode, save_mode.lower())
    write_mode = "overwrite" if mode == "overwrite" else "append"  # errorifexists and ignore write as appends
    partition_by = _partition_by(settings.partition_by, spark_partitioning)
    metadata = check_write_args(write_mode, settings.metadata, settings.app_id, settings.app_version)
    partial = check_partial_overwrite(write_mode, settings.replace_where, settings.partition_overwrite_mode)
    catalog = open_catalog(options)
    table = _existing(catalog, settings.table)
    if table is not None and mode == "errorifexists":
        raise TableAlreadyExistsError(f"table {table.name!r} exists and the save mode is errorifexists (Spark's "
                                      "default): use .mode('append') or .mode('overwrite'); nothing was written")
    if table is not None and mode == "ignore":
        return {}
    if table is None:
        table = _create(catalog, settings.table, TableSchema.from_any(df.schema), partition_by,
                        settings.event_time_column)
    state = table.state()
    if partition_by and partition_by != state.partition_by:
        raise ConfigError(f"table {table.name!r} is partitioned by {list(state.partition_by)}, "
                          f"not {list(partition_by)}; nothing was written")
    df, merge = checked_data(table.name, df, state.schema, settings.merge_schema)
    earlier = idempotent_repeat(state, settings.app_id, settings.app_version)
    if earlier is not None:
        return {"version": earlier.version}
    snapshot = write_native(table, df, state, write_mode, metadata, settings.app_id, settings.app_version,
                            merge=merge, partial=partial, write_id=settings.write_id)
    if snapshot is None and from_catalog:
        register_source(spark, connect)  # the helper's write below runs through the Python data source
        snapshot = write_through_helper(table, df, write_mode, metadata, settings.app_id, settings.app_version,
                                        settings.merge_schema, partial)
    if snapshot is None:  # the session changed between Spark's planning and this call
        raise ConfigError(f"table {table.name!r} can no longer be written by Spark's own Parquet writer in this "
                          "session (was spark.sleeper_spark.native switched off?); save again")
    return {"version": snapshot.version}


def _staged_write(spark: Any, df: Any, stage: Mapping[str, Any], options: Mapping[str, str]) -> dict[str, Any]:
    """The rows of a staged CREATE ... AS SELECT or REPLACE TABLE ... AS SELECT (see :mod:`.table_replacement`)."""
    catalog = open_catalog(options)
    prepared = table_replacement.prepare(catalog, stage)
    given = dict(options)
    if prepared.mode == "overwrite":
        given["mergeSchema"] = "true"  # the columns the new definition adds, in the same commit
    try:
        answer = _write(spark, df, "Overwrite" if prepared.mode == "overwrite" else "Append", given, (), True)
    except BaseException:
        table_replacement.abandon(catalog, prepared)
        raise
    table_replacement.finish(prepared)
    return answer


def _partition_by(option: tuple[str, ...] | None, spark_partitioning: tuple[str, ...]) -> tuple[str, ...]:
    """The partition columns of ``.option("partition_by", ...)`` or Spark's ``partitionBy()``, which must agree."""
    if option is not None and spark_partitioning and option != spark_partitioning:
        raise ConfigError(f"partitionBy({', '.join(spark_partitioning)}) and the partition_by option "
                          f"({','.join(option)}) differ: give one of them; nothing was written")
    return option if option is not None else spark_partitioning


def _existing(catalog: Catalog, name: str) -> Table | None:
    try:
        return catalog.table(name)
    except TableNotFoundError:
        return None


def _create(catalog: Catalog, name: str, schema: TableSchema, partition_by: tuple[str, ...],
            event_time_column: str | None) -> Table:
    try:
        return catalog.create_table(name, schema, partition_by=partition_by, event_time_column=event_time_column)
    except TableAlreadyExistsError:
        return catalog.table(name)  # another job created it first: write into theirs

"""The ``sleeper`` Python data source and its registration with a SparkSession.

A Python data source runs in Python workers that have no SparkSession, so it cannot read the
session conf. :func:`register_source` therefore reads the ``spark.sleeper.*`` entries (and the
default parallelism) on the driver and registers a subclass that carries them; the subclass is
pickled by value with its class attributes. Options given to ``.option()`` win over them.
Registering again after changing the conf refreshes them; the helper API always passes the
current conf as explicit options.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any, ClassVar

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from sleeper_spark.errors import ConfigError
from sleeper_spark.process_state import REGISTERED_SOURCES
from sleeper_spark.spark.common import messages
from sleeper_spark.spark.common.conversions import spark_schema, with_change_columns
from sleeper_spark.spark.common.jvm import jar_entry
from sleeper_spark.spark.common.options import GUARD_COLUMN, merge, open_catalog, parse_read, reads_changes
from sleeper_spark.spark.common.session import current_session_options, session_parallelism
from sleeper_spark.spark.source.reader import ReadTarget, SleeperReader, default_parallelism
from sleeper_spark.spark.source.writer import plan_write
from sleeper_spark.spark.streaming import plan_stream_read
from sleeper_spark.spark.streaming.stream_writer import plan_stream_write

log = logging.getLogger(__name__)

SOURCE_NAME = "sleeper"
# Where the jar is loaded, its source answers format("sleeper") and Spark refuses a Python source
# of that name; the Python source is then registered under this one, and the jar's hands work to it.
PYTHON_SOURCE_NAME = "sleeper_python"  # SleeperSource.PYTHON_NAME
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


class SleeperDataSource(DataSource):
    """``spark.read`` / ``df.write`` / ``spark.readStream`` / ``df.writeStream`` with ``format("sleeper")``."""

    session_options: ClassVar[dict[str, str]] = {}
    default_parallelism: ClassVar[int] = 0

    def __init__(self, options: Any) -> None:
        super().__init__(options)
        self._pinned: int | None = None  # the transaction number schema() resolved
        self._relation = uuid.uuid4().hex  # kept by every scan of this DataFrame (pickled with it)

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def merged_options(self) -> dict[str, str]:
        """The session's ``spark.sleeper.*`` settings overlaid with this read's or write's options."""
        return merge(self.session_options, dict(self.options))

    def schema(self) -> StructType:
        target = self._read_target()
        self._pinned = target.version
        schema = spark_schema(target.schema, target.guarded)
        if reads_changes(self.options):
            schema = with_change_columns(schema)  # a streaming read of changes: see stream_changes
        return schema

    def reader(self, schema: StructType) -> DataSourceReader:
        if reads_changes(self.options):
            raise ConfigError("readChanges is an option of streaming reads; read a range of changes in a batch with "
                              "spark.read.changes('<catalog>.<table>') or table.read_changes(spark, first, last)")
        return SleeperReader(self._read_target(), schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return plan_write(self.merged_options(), schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return plan_stream_write(self.merged_options(), schema, overwrite)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return plan_stream_read(self.merged_options(), schema, self.default_parallelism or default_parallelism())

    def _read_target(self) -> ReadTarget:
        options = self.merged_options()
        settings = parse_read(options)
        table = open_catalog(options).table(settings.table)
        version = self._pinned
        if version is None:
            version = table.resolve_version(settings.version, settings.timestamp)
        if version is None:
            version = table.state().version
        state = table.state(version)
        return ReadTarget(
            options=tuple(sorted(options.items())), table=table.name, table_id=table.table_id, root=table.root,
            version=state.version, schema=state.schema,
            parallelism=settings.parallelism or self.default_parallelism or default_parallelism(),
            max_partition_bytes=settings.max_partition_bytes, relation=self._relation,
            guarded=settings.guarded and GUARD_COLUMN not in state.schema.names,
        )


def register_source(spark: Any, connect: Callable[[Any, Any], None]) -> None:
    """Registers ``sleeper`` with ``spark``, enables filter pushdown and short errors; idempotent.

    ``connect(spark, entry)`` connects the jar's ``format("sleeper")`` to Python where the session has
    the jar (the bridge's :func:`~sleeper_spark.spark.bridge.format_bridge.connect`, given by the
    caller so that this module, which the bridge registers, does not import the bridge).
    """
    spark.conf.set(PUSHDOWN_CONF, "true")
    conf = current_session_options(spark)
    parallelism = session_parallelism(spark)
    key = (tuple(sorted(conf.items())), parallelism)
    with REGISTERED_SOURCES.lock:
        registered = REGISTERED_SOURCES.get(spark)
        if isinstance(registered, tuple) and registered[0] == key:
            return
        # A class built here is not importable by name, so cloudpickle ships it by value,
        # class attributes included; its methods come from SleeperDataSource by reference.
        attributes = {"session_options": conf, "default_parallelism": parallelism, "__module__": __name__,
                      "__qualname__": "SleeperDataSourceForSession"}
        source = type("SleeperDataSourceForSession", (SleeperDataSource,), attributes)
        jar_source = False
        try:
            spark.dataSource.register(source)
        except Exception as error:
            if "DATA_SOURCE_ALREADY_EXISTS" not in str(error):
                raise
            jar_source = True
            # The jar's source has the name (see PYTHON_SOURCE_NAME), here or on a Spark Connect server.
            spark.dataSource.register(type("SleeperDataSourceForSession", (source,), {
                "name": classmethod(lambda cls: PYTHON_SOURCE_NAME), "__module__": __name__,
                "__qualname__": "SleeperDataSourceForSession"}))
        messages.quiet_duplicate_task_logs(spark)  # once per session, not on every helper call
        _connect_format(spark, connect)
        REGISTERED_SOURCES.set(spark, (key, jar_source))


def _connect_format(spark: Any, connect: Callable[[Any, Any], None]) -> None:
    """Where the session has the jar, ``format("sleeper")`` runs on Spark's own Parquet reader and
    writer (see :mod:`sleeper_spark.spark.bridge.format_bridge`); says at INFO which way it runs."""
    if getattr(spark, "_jvm", None) is None:
        log.info("format('sleeper') in this Spark Connect session runs through the sleeper Python data source "
                 "on the server")
        return
    entry = jar_entry(spark)
    if entry is None:
        log.info("format('sleeper') in this session runs through the sleeper Python data source (the session "
                 "has no sleeper_spark jar of this version: ss.configure_spark adds it)")
        return
    connect(spark, entry)
    log.info("format('sleeper') in this session runs on Spark's own Parquet reader and writer (the sleeper_spark "
             "jar is loaded); streaming reads and writes run through the sleeper Python data source")

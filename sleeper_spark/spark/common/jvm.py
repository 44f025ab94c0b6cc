"""The JVM half of sleeper_spark: the jar, how a session gets it, and whether a session can use it.

The jar holds Spark's file index for a table version and ships inside this package: it is
built from ``jars/src`` by ``scripts/build-jar.sh`` and kept in the repository, so every wheel
and sdist carries it. A session that has it, and whose Hadoop can open
the warehouse's scheme, reads with Spark's own Parquet reader (the native path); any other
session uses the ``sleeper`` Python data source, and says once at INFO how to get the fast path.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from sleeper_spark.errors import ConfigError
from sleeper_spark.process_state import JAR_ENTRIES, SAID_ONCE
from sleeper_spark.version import __version__

if TYPE_CHECKING:
    from sleeper_spark.table import Catalog

log = logging.getLogger(__name__)

ENTRY_CLASS = "sleeper.spark.NativeTables"
SQL_CATALOG_CLASS = "sleeper.spark.SleeperCatalog"
# Spark's own session catalog, with sleeper tables in it.
SESSION_CATALOG_CLASS = "sleeper.spark.SleeperSessionCatalog"
SESSION_CATALOG_NAME = "spark_catalog"
# The Python the jar starts for its Python side (``sleeper.spark.bridge.PythonSide``).
PYTHON_SIDE_CONF = "spark.sleeper_spark.pythonSide.python"
# MERGE INTO, UPDATE and DELETE FROM on the SQL catalog's tables (a static setting: set before the session starts).
EXTENSIONS_CLASS = "sleeper.spark.SleeperExtensions"
# Outside ``spark.sleeper.``, whose keys are the data source's options.
NATIVE_CONF = "spark.sleeper_spark.native"
_JARS_DIR = Path(__file__).resolve().parents[2] / "jars"  # sleeper_spark/jars
# Spark's default (INT96) writes timestamps without statistics, in a form pyarrow reads as ns.
_SESSION_CONF = {"spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS"}

Builder = TypeVar("Builder")

def jar_path() -> str:
    """The path of the jar that gives Spark sleeper_spark's file index (for ``--jars`` or a cluster library)."""
    jar = _JARS_DIR / f"sleeper-spark-{__version__}.jar"
    if not jar.is_file():
        raise ConfigError(
            f"the sleeper_spark jar is missing ({jar}): every wheel and sdist carries it, so the package "
            "was installed incompletely; reinstall sleeper-spark (in a source checkout, scripts/build-jar.sh "
            "rebuilds it)"
        )
    return str(jar)


def configure_spark(builder: Builder, catalogs: Mapping[str, Catalog] | None = None,
                    session_catalog: Catalog | None = None) -> Builder:
    """Adds the jar and the settings the native path needs to a ``SparkSession.builder``.

    Use it before the first session of the process exists: a running JVM cannot take the jar.
    Jars the builder already names are kept. ``catalogs`` makes each sleeper catalog a Spark SQL
    catalog under its key (``{"lake": catalog}``: ``SELECT * FROM lake.db.t``), with the settings
    :func:`catalog_conf` lists. ``session_catalog`` puts that catalog's tables in Spark's own
    session catalog (``saveAsTable("db.t")``, ``CREATE TABLE db.t ... USING sleeper``), registered
    in its metastore, beside the tables of every other format.
    """
    options: dict[str, str] = getattr(builder, "_options", {})
    jars = [j for j in options.get("spark.jars", "").split(",") if j]
    jar = jar_path()
    if jar not in jars:
        jars.append(jar)
    configured: Any = builder
    configured = configured.config("spark.jars", ",".join(jars))
    extensions = [e for e in options.get("spark.sql.extensions", "").split(",") if e]
    if EXTENSIONS_CLASS not in extensions:
        configured = configured.config("spark.sql.extensions", ",".join([*extensions, EXTENSIONS_CLASS]))
    for key, value in _SESSION_CONF.items():
        if key not in options:
            configured = configured.config(key, value)
    # The Python the JVM starts where the code of this driver has not called sleeper_spark yet.
    configured = configured.config(PYTHON_SIDE_CONF, sys.executable)
    named = dict(catalogs or {})
    if session_catalog is not None:
        named[SESSION_CATALOG_NAME] = session_catalog
    for name, catalog in named.items():
        for key, value in catalog_conf(name, catalog).items():
            configured = configured.config(key, value)
    return configured  # type: ignore[no-any-return]


def catalog_conf(name: str, catalog: Catalog) -> dict[str, str]:
    """The session settings that make ``catalog`` the Spark SQL catalog ``name``: its class and,
    for each of :meth:`Catalog.options`, ``spark.sql.catalog.<name>.<key>``. The name
    ``spark_catalog`` makes it Spark's session catalog (``SleeperSessionCatalog``), whose other
    tables stay as they are; its settings also need the extension (``spark.sql.extensions``)."""
    catalog_class = SESSION_CATALOG_CLASS if name == SESSION_CATALOG_NAME else SQL_CATALOG_CLASS
    conf = {f"spark.sql.catalog.{name}": catalog_class}
    conf.update({f"spark.sql.catalog.{name}.{key}": value for key, value in catalog.options().items()})
    return conf


def native_entry(spark: Any) -> Any | None:
    """py4j's view of the jar's entry class when ``spark`` can use the native path, else None."""
    if getattr(spark, "_jvm", None) is None:
        _tell("spark-connect", "this is a Spark Connect session: helper reads and writes run on Spark's own Parquet "
              "source and writer; with the jar on the server (--jars of ss.jar_path()), format('sleeper') and the SQL "
              "catalog do too")
        return None
    try:
        if str(spark.conf.get(NATIVE_CONF, "true")).lower() == "false":
            return None
    except Exception as error:  # py4j errors of any kind: the fallback always works
        log.debug("native path unavailable: %s", error)
        return None
    return jar_entry(spark)


def jar_entry(spark: Any) -> Any | None:
    """The jar's entry class when this classic session has the jar of this package's version, else None
    (whether or not the session has switched the native path off)."""
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        return None
    # Found once, the class stays: a JVM does not unload it. About seven py4j round trips saved
    # on each of the several lookups of a helper call; a miss is looked up again, since a jar
    # added to the context later may bring it. Kept per SparkContext, not per session: the
    # format bridge wraps each call's JVM session in a session object of its own.
    context = spark.sparkContext
    found = JAR_ENTRIES.get(context)
    if found is not None:
        return found
    try:
        entry = _load_class(spark, jvm)
    except Exception as error:  # py4j errors of any kind: the fallback always works
        log.debug("native path unavailable: %s", error)
        entry = None
    if entry is None:
        _tell("no-jar", "the sleeper_spark jar is not loaded in this Spark session, so tables are read through "
              "the slower Python data source; build the session with ss.configure_spark(SparkSession.builder) "
              "(or pass --jars with ss.jar_path()) for Spark's own Parquet reader and writer")
        return None
    version = str(entry.version())
    if version != __version__:
        _tell("stale-jar", f"the sleeper_spark jar in this session is version {version}, the package is "
              f"{__version__}: using the Python data source; put ss.jar_path() on the classpath instead")
        return None
    with JAR_ENTRIES.lock:
        JAR_ENTRIES.set(context, entry)
    return entry


def _load_class(spark: Any, jvm: Any) -> Any | None:
    from py4j.java_gateway import JavaClass  # type: ignore[import-untyped]

    loader = jvm.Thread.currentThread().getContextClassLoader()
    try:
        jvm.java.lang.Class.forName(ENTRY_CLASS, False, loader)
    except Exception:
        return None
    entry = jvm
    for part in ENTRY_CLASS.split("."):
        entry = getattr(entry, part)
    return entry if isinstance(entry, JavaClass) else None


def hadoop_location(spark: Any, entry: Any, location: str, s3_endpoint: str | None) -> str | None:
    """The table location as Spark's Hadoop file systems name it, or None when this session cannot open it.

    Local paths become ``file:`` URIs (left unescaped: Hadoop quotes every character itself). ``s3://``
    stays where Hadoop has an ``s3`` file system (EMR, Databricks), else becomes ``s3a://`` where
    hadoop-aws is present. A catalog on a custom S3 endpoint is read natively only if Spark's
    ``fs.s3a.endpoint`` is set too: otherwise Hadoop would look for the data on AWS.
    """
    scheme, sep, rest = location.partition("://")
    if not sep:
        return "file:" + str(Path(location).resolve())
    jsession = spark._jsparkSession
    if scheme == "file":
        return location
    if scheme not in ("s3", "s3a"):
        return location if entry.hasFileSystem(jsession, scheme) else None
    if s3_endpoint and not spark.conf.get("spark.hadoop.fs.s3a.endpoint", ""):
        _tell("s3-endpoint", "the catalog uses a custom S3 endpoint but Spark's fs.s3a.endpoint is not set: "
              "reading through the Python data source")
        return None
    if scheme == "s3" and entry.hasFileSystem(jsession, "s3"):
        return location
    if entry.hasFileSystem(jsession, "s3a"):
        return f"s3a://{rest}"
    _tell("no-s3a", "Spark has no file system for s3:// or s3a:// (hadoop-aws is missing): reading through the "
          "Python data source; `sleeper-spark jars fetch` gets the connector jars")
    return None


def _tell(reason: str, message: str) -> None:
    """Logs ``message`` at INFO once per process and reason: a fallback is worth one line, not one per read."""
    if SAID_ONCE.first(("jvm", reason)):
        log.info(message)

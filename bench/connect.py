"""Spark Connect: helper reads and writes, and the jar's format("sleeper") and SQL catalog, against
plain Spark parquet on the same server, side by side.

Two Connect servers (pyspark's own ``start-connect-server.sh``, ``local[2]``, on loopback), one after
the other over the same local warehouse, whose disk they share. A table "t" of 2,000,000 rows x 22
columns, partitioned by ``part`` (8 values), in 128 files, written once with pyarrow through
``t.write`` (``--quick``: 20,000 rows in 8 files).

The first server has no jar, as on Databricks serverless, which takes no jars. Each read row times
the same query on ``catalog.read(spark, "t")`` (the log read and the DataFrame's plan included) and
on ``spark.read.parquet(<the table's data folder>)``, alternating run by run: count(), the sum of
one column, a filter on the partition column, and a full read of every column into the ``noop``
sink. The same four again with ``spark.sleeper_spark.connect.read=source``: the sleeper Python data
source running on the server, which helper reads used before. A Connect client's helper read and
write take the same path with the jar (the client has no JVM to hand the jar anything), so this
server measures both. The write row: ``catalog.write(df, "w", mode="overwrite")`` against
``df.write.mode("overwrite").partitionBy("part").parquet(<a folder>)``, ``df`` being the same
rows and columns as "t" generated on the server (``spark.range``); "w" is created partitioned by
``part`` on the unmeasured first write and overwritten by every write after it (an overwrite
commit: the files it replaces stay on disk, as a table's history keeps them).

The second server has the jar (``--jars``) and the SQL catalog ``lake`` of the same warehouse, so
that ``format("sleeper")`` and ``spark.table("lake.t")`` run on the jar's native path through the
Python side the server's JVM starts for itself. The same four reads on each, against
``spark.read.parquet`` on that server; then writes of the same generated rows:
``format("sleeper")...mode("overwrite").save("w2")`` (created partitioned by ``part`` on the first
write, overwritten after) and the helper write into "w" again, each against ``df.write.parquet``.

Every row runs each side once, unmeasured, before timing: the server compiles each plan's code on
its first run, and the jar server's first call starts its Python side (about 5 s).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

import sleeper_spark as ss
from bench.common import Report, Row, measure_pair, seconds
from sleeper_spark.spark.common.jvm import EXTENSIONS_CLASS, catalog_conf
from sleeper_spark.spark.connect.connect_read import READ_CONF

PARTITIONS = 8
COLUMNS = 20  # c0 .. c19, besides id and part: 22 in all
QUIET_LOG4J2 = ("rootLogger.level = error\nrootLogger.appenderRef.stdout.ref = console\n"
                "appender.console.type = Console\nappender.console.name = console\n"
                "appender.console.layout.type = PatternLayout\nappender.console.layout.pattern = %m%n\n")
Query = Callable[[Any], Any]
QUERIES: list[tuple[str, Query]] = [
    ("count()", lambda d: d.count()),
    ("one column of 22: sum(c0)", lambda d: d.selectExpr("sum(c0)").collect()),
    ("partition filter: part = '3', sum(c0)", lambda d: d.where("part = '3'").selectExpr("sum(c0)").collect()),
    ("full read of all 22 columns into the noop sink", lambda d: d.write.format("noop").mode("overwrite").save()),
]


def run(report: Report, quick: bool) -> None:
    import importlib.util

    if importlib.util.find_spec("grpc") is None:  # bench/__main__ reports this as a skipped benchmark
        raise ModuleNotFoundError("the Spark Connect client needs pyspark[connect] (grpcio)")
    from pyspark.sql import SparkSession

    rows, files = (20_000, 8) if quick else (2_000_000, 128)
    repeat = 1 if quick else 5
    work = Path(tempfile.mkdtemp(prefix="bench-connect-"))
    try:
        catalog = ss.Catalog.local(str(work / "wh"))
        _write_table(catalog, rows, files)
        with connect_server(work / "no-jar") as url:
            spark = SparkSession.builder.remote(url).getOrCreate()
            try:
                _reads(report, spark, catalog, repeat)
                _reads_of_helper_writes(report, spark, catalog, work, rows, repeat)
                _helper_write(report, "Connect, no jar", spark, catalog, work, rows, repeat, "<= 1.2x", 1.2)
            finally:
                spark.stop()
        jar = ["--jars", ss.jar_path(), "--conf", f"spark.sql.extensions={EXTENSIONS_CLASS}"]
        jar += [part for key, value in catalog_conf("lake", catalog).items() for part in ("--conf", f"{key}={value}")]
        with connect_server(work / "jar", jar) as url:
            spark = SparkSession.builder.remote(url).getOrCreate()
            try:
                ss.register(spark)  # for format("sleeper"); SQL on the catalog needs nothing
                _jar_reads(report, spark, catalog, repeat)
                _jar_writes(report, spark, catalog, work, rows, repeat)
            finally:
                spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
        # A Connect session marks this process as a Connect client; the benchmarks after this
        # one build classic sessions.
        for variable in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE"):
            os.environ.pop(variable, None)


def _write_table(catalog: ss.Catalog, rows: int, files: int) -> ss.Table:
    """``files // 8`` appends of Arrow data, each one file per partition value."""
    chunks = files // PARTITIONS
    table = catalog.create_table("t", _chunk(0, 1).schema, partition_by=["part"])
    for start in range(0, rows, rows // chunks):
        table.write(_chunk(start, rows // chunks))
    return table


def _chunk(start: int, rows: int) -> pa.Table:
    ids = np.arange(start, start + rows, dtype=np.int64)
    columns: dict[str, Any] = {"id": ids, "part": pa.array((ids % PARTITIONS).astype(str))}
    for i in range(COLUMNS):
        columns[f"c{i}"] = (ids * (i + 1)) % 10_007 * 0.5 if i % 2 else (ids + i) % 100_003
    return pa.table(columns)


def _server_rows(spark: Any, rows: int, tasks: int | None = None) -> Any:
    """The rows and columns of :func:`_chunk`, generated on the server: nothing crosses the wire
    (``tasks``: in that many tasks, each a range of ids)."""
    columns = ["id", f"cast(id % {PARTITIONS} AS STRING) AS part"]
    columns += [f"cast((id * {i + 1}) % 10007 AS DOUBLE) * 0.5 AS c{i}" if i % 2 else f"(id + {i}) % 100003 AS c{i}"
                for i in range(COLUMNS)]
    return spark.range(0, rows, 1, tasks).selectExpr(*columns)


def _pair(report: Report, benchmark: str, ours: Callable[[], Any], plain: Callable[[], Any], repeat: int,
          target: str, limit: float | None, warm_up: Callable[[], Any] | None = None) -> None:
    """One row: each side once unmeasured (``warm_up`` instead of ``ours`` if given), then both
    alternately."""
    (warm_up or ours)()
    plain()
    ours_m, plain_m = measure_pair(ours, plain, repeat)
    ratio = ours_m.best / plain_m.best
    report.add(Row(benchmark, seconds(ours_m), seconds(plain_m), ratio, target,
                   None if limit is None else ratio <= limit))


def _data_folder(catalog: ss.Catalog) -> tuple[str, int]:
    table = catalog.table("t")
    return "file:" + str(Path(table.location, "data").resolve()), len(table.files())


def _reads(report: Report, spark: Any, catalog: ss.Catalog, repeat: int) -> None:
    data_folder, files = _data_folder(catalog)
    for mode, target, limit in (("parquet", "<= 1.2x", 1.2), ("source", "(before)", None)):
        spark.conf.set(READ_CONF, mode)
        label = "helper read" if mode == "parquet" else "helper read through the Python data source"
        for name, query in QUERIES:
            def ours(q: Query = query) -> Any:
                return q(catalog.read(spark, "t"))

            def plain(q: Query = query) -> Any:
                return q(spark.read.parquet(data_folder))

            _pair(report, f"Connect, no jar: {label} vs spark.read.parquet, {name}, {files} files",
                  ours, plain, repeat, target, limit)
    spark.conf.unset(READ_CONF)


def _reads_of_helper_writes(report: Report, spark: Any, catalog: ss.Catalog, work: Path, rows: int,
                            repeat: int) -> None:
    """The same queries, and a 1 % range of ids, on a table the no-jar helper wrote ("h": Spark's
    writer, committed from the client) against ``partitionBy("part").parquet()`` of the same rows:
    16 tasks, each a range of ids, so 128 files, each of one partition value and a narrow range of
    ids."""
    df = _server_rows(spark, rows, tasks=16)
    catalog.write(df, "h", mode="overwrite", partition_by=["part"])
    folder = "file:" + str(work / "plain-h")
    df.write.mode("overwrite").partitionBy("part").parquet(folder)
    files = len(catalog.table("h").files())
    ids = f"id BETWEEN {rows // 2} AND {rows // 2 + rows // 100}"
    queries = [*QUERIES, ("id range of 1 %, sum(c0)", lambda d: d.where(ids).selectExpr("sum(c0)").collect())]
    spark.conf.set(READ_CONF, "parquet")
    for name, query in queries:
        def ours(q: Query = query) -> Any:
            return q(catalog.read(spark, "h"))

        def plain(q: Query = query) -> Any:
            return q(spark.read.parquet(folder))

        _pair(report, f"Connect, no jar: helper read of a helper-written table vs spark.read.parquet of a "
              f"partitionBy write, {name}, {files} files", ours, plain, repeat, "<= 1.2x", 1.2)
    spark.conf.unset(READ_CONF)


def _jar_reads(report: Report, spark: Any, catalog: ss.Catalog, repeat: int) -> None:
    data_folder, files = _data_folder(catalog)
    options = catalog.options()
    sides: list[tuple[str, Callable[[], Any]]] = [
        ('format("sleeper")', lambda: spark.read.format("sleeper").options(**options).load("t")),
        ('spark.table("lake.t")', lambda: spark.table("lake.t")),
    ]
    for label, load in sides:
        for name, query in QUERIES:
            def ours(q: Query = query, d: Callable[[], Any] = load) -> Any:
                return q(d())

            def plain(q: Query = query) -> Any:
                return q(spark.read.parquet(data_folder))

            _pair(report, f"Connect, jar: {label} vs spark.read.parquet, {name}, {files} files",
                  ours, plain, repeat, "<= 1.1x", 1.1)


def _helper_write(report: Report, server: str, spark: Any, catalog: ss.Catalog, work: Path, rows: int,
                  repeat: int, target: str, limit: float) -> None:
    df = _server_rows(spark, rows)
    folder = "file:" + str(work / "plain-w")
    _pair(report, f"{server}: helper write (overwrite) vs df.write.parquet, {rows:,} rows x 22 columns, "
          "partitioned by part",
          lambda: catalog.write(df, "w", mode="overwrite", partition_by=["part"]),
          lambda: df.write.mode("overwrite").partitionBy("part").parquet(folder), repeat, target, limit)


def _jar_writes(report: Report, spark: Any, catalog: ss.Catalog, work: Path, rows: int, repeat: int) -> None:
    df = _server_rows(spark, rows)
    options = catalog.options()
    folder = "file:" + str(work / "plain-w2")

    def sleeper_write(partition_by: Sequence[str] = ()) -> None:
        writer = df.write.format("sleeper").options(**options).mode("overwrite")
        if partition_by:  # only when the write creates the table
            writer = writer.option("partition_by", ",".join(partition_by))
        writer.save("w2")

    _pair(report, f'Connect, jar: format("sleeper") write (overwrite) vs df.write.parquet, {rows:,} rows x 22 '
          "columns, partitioned by part",
          sleeper_write, lambda: df.write.mode("overwrite").partitionBy("part").parquet(folder), repeat,
          "<= 1.1x", 1.1, warm_up=lambda: sleeper_write(["part"]))
    _helper_write(report, "Connect, jar", spark, catalog, work, rows, repeat, "<= 1.1x", 1.1)


@contextlib.contextmanager
def connect_server(folder: Path, extra: Sequence[str] = ()) -> Iterator[str]:
    """pyspark's own Connect server (local[2], ``extra`` arguments: none for no jar) on 127.0.0.1,
    its logs and pid file in ``folder``; yields its URL, stops it after."""
    import pyspark

    spark_home = Path(pyspark.__file__).parent
    folder.mkdir(parents=True, exist_ok=True)
    log4j = folder / "log4j2.properties"
    log4j.write_text(QUIET_LOG4J2)
    port = _free_port()
    pid_dir = folder / "pids"
    environment = {**os.environ, "SPARK_HOME": str(spark_home), "SPARK_LOG_DIR": str(folder / "logs"),
                   "SPARK_PID_DIR": str(pid_dir), "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    environment.pop("SPARK_NO_DAEMONIZE", None)
    # The script daemonizes the server (nohup, a pid file) and exits; the JVM stays in the group it led.
    script = subprocess.Popen(
        [str(spark_home / "sbin" / "start-connect-server.sh"), "--master", "local[2]", "--driver-memory", "2g", *extra,
         "--conf", f"spark.connect.grpc.binding.port={port}", "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
         "--conf", "spark.ui.enabled=false",
         "--conf", f"spark.driver.extraJavaOptions=-Dlog4j2.configurationFile=file:{log4j}"],
        env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        _wait_for_port(port, script, seconds=180)
        yield f"sc://127.0.0.1:{port}"
    finally:
        _stop_server(spark_home, script, environment, pid_dir)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_for_port(port: int, script: subprocess.Popen[bytes], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        script.poll()  # reap the script once it has daemonized the server
        if not _group_exists(script.pid):
            raise RuntimeError(f"the Connect server ended before it listened on port {port}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"the Connect server: nothing listens on port {port} after {seconds} s")


def _stop_server(spark_home: Path, script: subprocess.Popen[bytes], environment: dict[str, str],
                 pid_dir: Path) -> None:
    """stop-connect-server.sh, then whatever is left of the group the start script led, then the
    pid file's process if it is still the server."""
    pids = [int(path.read_text().strip()) for path in pid_dir.glob("spark-*-SparkConnectServer-1.pid")]
    subprocess.run([str(spark_home / "sbin" / "stop-connect-server.sh")], env=environment, timeout=60,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(script.pid, sig)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and _group_exists(script.pid):
            script.poll()
            time.sleep(0.1)
    for pid in pids:
        with contextlib.suppress(OSError):
            if "SparkConnectServer" in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
                os.kill(pid, signal.SIGKILL)


def _group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True

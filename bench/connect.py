"""Spark Connect: helper reads against ``spark.read.parquet`` on the same server, side by side.

One Connect server (pyspark's own ``start-connect-server.sh``, ``local[2]``, on loopback) WITHOUT
the jar, as on Databricks serverless, which takes no jars; a Connect client's helper read takes the
same path with the jar (Spark's ``parquet`` source over the version's files: the client has no JVM
to hand the jar's index anything), so one server measures both. A local warehouse the server shares
the disk of; a table of 2,000,000 rows x 22 columns, partitioned by ``part`` (8 values), in 128
files, written once with pyarrow through ``t.write`` (``--quick``: 20,000 rows in 8 files).

Each row times the same query on ``catalog.read(spark, "t")`` (the log read and the DataFrame's
plan included) and on ``spark.read.parquet(<the table's data folder>)``, alternating run by run:
count(), the sum of one column, a filter on the partition column, and a full read of every column
into the ``noop`` sink. The same four again with ``spark.sleeper_spark.connect.read=source``: the
sleeper Python data source running on the server, which helper reads used before.
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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

import sleeper_spark as ss
from bench.common import Report, Row, measure_pair, seconds
from sleeper_spark.spark.connect_read import READ_CONF

PARTITIONS = 8
COLUMNS = 20  # c0 .. c19, besides id and part: 22 in all
QUIET_LOG4J2 = ("rootLogger.level = error\nrootLogger.appenderRef.stdout.ref = console\n"
                "appender.console.type = Console\nappender.console.name = console\n"
                "appender.console.layout.type = PatternLayout\nappender.console.layout.pattern = %m%n\n")


def run(report: Report, quick: bool) -> None:
    import importlib.util

    if importlib.util.find_spec("grpc") is None:  # bench/__main__ reports this as a skipped benchmark
        raise ModuleNotFoundError("the Spark Connect client needs pyspark[connect] (grpcio)")
    from pyspark.sql import SparkSession

    rows, files = (20_000, 8) if quick else (2_000_000, 128)
    repeat = 1 if quick else 3
    work = Path(tempfile.mkdtemp(prefix="bench-connect-"))
    try:
        catalog = ss.Catalog.local(str(work / "wh"))
        _write_table(catalog, rows, files)
        with connect_server(work) as url:
            spark = SparkSession.builder.remote(url).getOrCreate()
            try:
                _reads(report, spark, catalog, repeat)
            finally:
                spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)


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


def _reads(report: Report, spark: Any, catalog: ss.Catalog, repeat: int) -> None:
    table = catalog.table("t")
    data_folder = "file:" + str(Path(table.location, "data").resolve())
    files = len(table.files())
    queries: list[tuple[str, Callable[[Any], Any]]] = [
        ("count()", lambda d: d.count()),
        ("one column of 22: sum(c0)", lambda d: d.selectExpr("sum(c0)").collect()),
        ("partition filter: part = '3', sum(c0)", lambda d: d.where("part = '3'").selectExpr("sum(c0)").collect()),
        ("full read of all 22 columns into the noop sink",
         lambda d: d.write.format("noop").mode("overwrite").save()),
    ]
    for mode, target, limit in (("parquet", "<= 1.2x", 1.2), ("source", "(before)", None)):
        spark.conf.set(READ_CONF, mode)
        for name, query in queries:
            def ours(q: Callable[[Any], Any] = query) -> Any:
                return q(catalog.read(spark, "t"))

            def plain(q: Callable[[Any], Any] = query) -> Any:
                return q(spark.read.parquet(data_folder))

            ours()  # one of each first, unmeasured: the server compiles each plan's code on its first run
            plain()
            ours_m, plain_m = measure_pair(ours, plain, repeat)
            ratio = ours_m.best / plain_m.best
            label = "helper read" if mode == "parquet" else "helper read through the Python data source"
            report.add(Row(f"Connect, no jar: {label} vs spark.read.parquet, {name}, {files} files",
                           seconds(ours_m), seconds(plain_m), ratio, target,
                           None if limit is None else ratio <= limit))
    spark.conf.unset(READ_CONF)


@contextlib.contextmanager
def connect_server(folder: Path) -> Iterator[str]:
    """pyspark's own Connect server (local[2], no jar) on 127.0.0.1; yields its URL, stops it after."""
    import pyspark

    spark_home = Path(pyspark.__file__).parent
    log4j = folder / "log4j2.properties"
    log4j.write_text(QUIET_LOG4J2)
    port = _free_port()
    pid_dir = folder / "pids"
    environment = {**os.environ, "SPARK_HOME": str(spark_home), "SPARK_LOG_DIR": str(folder / "logs"),
                   "SPARK_PID_DIR": str(pid_dir), "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable}
    environment.pop("SPARK_NO_DAEMONIZE", None)
    # The script daemonizes the server (nohup, a pid file) and exits; the JVM stays in the group it led.
    script = subprocess.Popen(
        [str(spark_home / "sbin" / "start-connect-server.sh"), "--master", "local[2]", "--driver-memory", "2g",
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

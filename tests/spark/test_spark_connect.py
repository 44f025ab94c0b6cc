"""A Spark Connect server from pyspark's own start-connect-server.sh on loopback, with the jar and
without it: its clients' format("sleeper") runs through the sleeper Python data source on the
server (a Connect client has no JVM to connect the native path to), and helper reads through
Spark's own parquet source over the version's files; both give the right rows."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyspark
import pytest

import sleeper_spark as ss
from tests.fixtures import process_groups
from tests.fixtures.servers import free_port
from tests.fixtures.spark import quiet_log4j2

pytestmark = [pytest.mark.spark, pytest.mark.slow]

pytest.importorskip("grpc", reason="the Spark Connect client needs pyspark[connect] (the test extras have it)")

SPARK_HOME = Path(pyspark.__file__).parent
HERE = Path(__file__).parent


def _connect_server_pid(pid_dir: Path) -> int | None:
    """The server's JVM, from the pid file start-connect-server.sh writes when it daemonizes it."""
    files = list(pid_dir.glob("spark-*-SparkConnectServer-1.pid"))
    return int(files[0].read_text().strip()) if files else None


def _stop_connect_server(script: subprocess.Popen[bytes], environment: dict[str, str], pid_dir: Path) -> None:
    """stop-connect-server.sh first, the way the server is meant to be stopped; then the process group
    the start script led (the daemonized JVM stays in it), and the pid file's process, whatever is left."""
    pid = _connect_server_pid(pid_dir)
    subprocess.run([str(SPARK_HOME / "sbin" / "stop-connect-server.sh")], env=environment, timeout=60,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    process_groups.stop(script, timeout_s=30)
    if pid is not None and "SparkConnectServer" in _command_line(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


@pytest.fixture(params=["jar", "no jar"])
def connect_server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """A Connect server (local[2]) on 127.0.0.1, once with the jar on its classpath and once without
    (as Databricks serverless, which takes no jars); yields its URL and the environment."""
    jars = ["--jars", ss.jar_path()] if request.param == "jar" else []
    log4j = quiet_log4j2(tmp_path)
    port = free_port()
    pid_dir = tmp_path / "pids"
    environment = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOG_DIR": str(tmp_path / "logs"),
                   "SPARK_PID_DIR": str(pid_dir), "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
                   "JDK_JAVA_OPTIONS": f"-Dlog4j2.configurationFile=file:{log4j}"}
    environment.pop("SPARK_NO_DAEMONIZE", None)
    # The script daemonizes the server (nohup, a pid file) and exits; the JVM stays in the group it led.
    script = process_groups.start(
        [str(SPARK_HOME / "sbin" / "start-connect-server.sh"), "--master", "local[2]", *jars,
         "--conf", f"spark.connect.grpc.binding.port={port}", "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
         "--conf", "spark.ui.enabled=false"],
        env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        process_groups.wait_for_port(port, lambda: process_groups.group_running(script), "the Connect server",
                                     seconds=120)
        yield f"sc://127.0.0.1:{port}", environment
    finally:
        _stop_connect_server(script, environment, pid_dir)


def test_a_connect_client_reads_and_writes_with_spark_s_parquet_source_and_the_python_source(
        connect_server: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    url, environment = connect_server
    warehouse = tmp_path / "warehouse"

    run = subprocess.run([sys.executable, str(HERE / "connect_job.py"), url, str(warehouse)], env=environment,
                         capture_output=True, text=True, timeout=600, cwd=HERE.parents[1])

    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result == {"count": 115, "part_1": 28, "at_version_2": 100, "helper_version": 4, "helper_read": 5,
                      "missing": "TableNotFoundError", "helper_rows_are_the_tables": True,
                      "helper_files_are_the_versions": True, "added_column_reads_null": True,
                      "source_read": 115, "helper_write": [2, "append", 300], "helper_write_rows": True,
                      "helper_write_by_spark": True, "helper_write_verifies": True,
                      "helper_write_parts": ["0", "1", "2", "None"]}
    table = ss.Catalog.local(str(warehouse)).table("events")
    assert table.partition_by == ("part",)
    # format("sleeper") wrote through the Python data source's tasks, the helper with Spark's own
    # writer (data/spark-<write id>/), which left nothing but the committed files in its folder
    by_spark = {f.path.split("/")[1] for f in table.files() if f.path.startswith("data/spark-")}
    assert len(by_spark) == 1 and any(not f.path.startswith("data/spark-") for f in table.files())
    assert table.verify().ok
    written = ss.Catalog.local(str(warehouse)).table("written")
    folders = {Path(written.location, f.path).parent for f in written.files()}
    assert sorted(p.name for folder in folders for p in folder.iterdir()) == sorted(
        Path(f.path).name for f in written.files())

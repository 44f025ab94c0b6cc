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
from dataclasses import dataclass
from pathlib import Path

import pytest

import sleeper_spark as ss
from sleeper_spark.spark.common.jvm import EXTENSIONS_CLASS, catalog_conf
from tests.fixtures import process_groups
from tests.fixtures.servers import free_port
from tests.fixtures.spark import java_options, quiet_log4j2, spark_home

pytestmark = [pytest.mark.spark, pytest.mark.slow]

pytest.importorskip("grpc", reason="the Spark Connect client needs pyspark[connect] (the test extras have it)")

SPARK_HOME = spark_home()
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


@dataclass(frozen=True)
class ConnectServer:
    url: str
    environment: dict[str, str]
    with_jar: bool
    pid_dir: Path
    warehouse: Path  # the warehouse of the server's SQL catalog ``lake`` (with the jar)


@pytest.fixture(scope="module", params=["jar", "no jar"])
def connect_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
                   ) -> Iterator[ConnectServer]:
    """A Connect server (local[2]) on 127.0.0.1, once with the jar on its classpath (and the SQL
    catalog ``lake`` of its ``warehouse``) and once without (as Databricks serverless, which
    takes no jars). One server of each kind serves every test of the module that asks for it: a
    server's start is most of a test's time."""
    tmp_path = tmp_path_factory.mktemp("connect-server")
    jars: list[str] = []
    if request.param == "jar":  # and a SQL catalog of the job's warehouse, as a server's settings name it
        catalog = ss.Catalog.local(str(tmp_path / "warehouse"))
        jars = ["--jars", ss.jar_path(), "--conf", f"spark.sql.extensions={EXTENSIONS_CLASS}"]
        jars += [part for key, value in catalog_conf("lake", catalog).items() for part in ("--conf", f"{key}={value}")]
    log4j = quiet_log4j2(tmp_path)
    port = free_port()
    pid_dir = tmp_path / "pids"
    environment = {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOG_DIR": str(tmp_path / "logs"),
                   "SPARK_PID_DIR": str(pid_dir), "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
                   "JDK_JAVA_OPTIONS": java_options(log4j)}
    environment.pop("SPARK_NO_DAEMONIZE", None)
    # The script daemonizes the server (nohup, a pid file) and exits; the JVM stays in the group it led.
    script = process_groups.start(
        [str(SPARK_HOME / "sbin" / "start-connect-server.sh"), "--master", "local[2]", *jars,
         "--conf", f"spark.connect.grpc.binding.port={port}", "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
         "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=2"],
        env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        process_groups.wait_for_port(port, lambda: process_groups.group_running(script), "the Connect server",
                                     seconds=120)
        yield ConnectServer(f"sc://127.0.0.1:{port}", environment, request.param == "jar", pid_dir,
                            tmp_path / "warehouse")
    finally:
        _stop_connect_server(script, environment, pid_dir)
    # Then the Python side the server's JVM started (if any) is gone with it
    assert _python_sides(pid_dir) == []


def _error_lines(stderr: str) -> str:
    """The lines of a failed job's output that say what failed, not where in Spark."""
    return "\n".join(line for line in stderr.splitlines() if not line.lstrip().startswith("at "))[-4000:]


def _python_sides(pid_dir: Path) -> list[int]:
    """The Python sides a server whose pid folder is ``pid_dir`` started (they inherit its environment)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or "jvm_started" not in _command_line(int(proc.name)):
            continue
        with contextlib.suppress(OSError):
            if f"SPARK_PID_DIR={pid_dir}".encode() in (proc / "environ").read_bytes():
                found.append(int(proc.name))
    return found


def test_a_connect_client_reads_writes_and_runs_sql_on_spark_s_own_reader_and_writer(
        connect_server: ConnectServer) -> None:
    warehouse = connect_server.warehouse
    with_jar = connect_server.with_jar

    # With the jar the client registers nothing: its first statement, a format("sleeper") write,
    # finds the Python side the server's JVM starts
    registration = "unregistered" if with_jar else "registered"
    run = subprocess.run([sys.executable, str(HERE / "connect_job.py"), connect_server.url, str(warehouse),
                          registration],
                         env=connect_server.environment,
                         capture_output=True, text=True, timeout=600, cwd=HERE.parents[1])

    assert run.returncode == 0, _error_lines(run.stderr)
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result == {"count": 115, "part_1": 28, "at_version_2": 100, "helper_version": 4, "helper_read": 5,
                      "missing": "TableNotFoundError", "helper_rows_are_the_tables": True,
                      "helper_files_are_the_versions": True, "added_column_reads_null": True,
                      "source_read": 115, "helper_write": [2, "append", 300], "helper_write_rows": True,
                      "helper_write_by_spark": True, "helper_write_verifies": True,
                      "helper_write_parts": ["0", "1", "2", "None"]}
    table = ss.Catalog.local(str(warehouse)).table("events")
    assert table.partition_by == ("part",)
    # Without the jar, format("sleeper") wrote through the Python data source's tasks; with it,
    # through Spark's own writer too, the server's JVM having started its Python side. The helper
    # always wrote with Spark's own writer (data/spark-<write id>/), which left nothing but the
    # committed files in its folder
    by_spark = {f.path.split("/")[1] for f in table.files() if f.path.startswith("data/spark-")}
    assert len(by_spark) == (3 if with_jar else 1)
    assert table.verify().ok
    written = ss.Catalog.local(str(warehouse)).table("written")
    folders = {Path(written.location, f.path).parent for f in written.files()}
    assert sorted(p.name for folder in folders for p in folder.iterdir()) == sorted(
        Path(f.path).name for f in written.files())
    if with_jar:
        sql_on_the_python_side_the_jvm_started(connect_server, warehouse)


def sql_on_the_python_side_the_jvm_started(connect_server: ConnectServer, warehouse: Path) -> None:
    """SQL on the catalog of a server with the jar, from a client that registered nothing: the
    server's JVM starts its own Python side, and starts another when that one dies."""

    def sql_job(phase: str) -> dict[str, object]:
        run = subprocess.run([sys.executable, str(HERE / "connect_sql_job.py"), connect_server.url, str(warehouse),
                              phase], env=connect_server.environment, capture_output=True, text=True, timeout=600,
                             cwd=HERE.parents[1])
        assert run.returncode == 0, _error_lines(run.stderr)
        return json.loads(run.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]

    # When a client that never registered anything runs SQL on the server's catalog
    result = sql_job("first")
    # Then every statement ran, on one Python side the server's JVM started
    assert result == {"rows": [[1, "a", "d1"], [2, "B", "d1"], [4, "d", "d2"]], "merged": [1, 1],
                      "changes": {"delete": 2, "insert": 2}, "version_2": 3, "missing": "SnapshotNotFoundError",
                      "format_read_by_spark": True}
    sides = _python_sides(connect_server.pid_dir)
    assert len(sides) == 1
    # When that process dies, Then the next statement starts another and runs
    os.kill(sides[0], signal.SIGKILL)
    assert sql_job("again") == {"count": 4}
    restarted = _python_sides(connect_server.pid_dir)
    assert len(restarted) == 1 and restarted != sides



@pytest.mark.parametrize("connect_server", ["no jar"], indirect=True)
def test_a_connect_client_s_merge_update_and_delete_read_only_the_files_their_conditions_select(
        connect_server: ConnectServer, tmp_path: Path) -> None:
    # Given 40 files of clustered ids, When a Connect client (no JVM to resolve conditions with)
    # merges two source rows on "id = source.id OR id = source.id + 100000", then updates two keys,
    # and deletes two partitions of another table
    run = subprocess.run([sys.executable, str(HERE / "connect_merge_job.py"), connect_server.url,
                          str(tmp_path / "warehouse")], env=connect_server.environment, capture_output=True, text=True,
                         timeout=600, cwd=HERE.parents[1])

    # Then each reads the files that hold its keys, 4 and 2 of 40, and the rows are those of the same changes
    assert run.returncode == 0, _error_lines(run.stderr)
    result = json.loads(run.stdout.strip().splitlines()[-1])
    merged, updated = result["merge"], result["update"]
    assert (merged["files_read"], merged["files_rewritten"], merged["rows_updated"]) == (4, 4, 4)
    assert (updated["files_read"], updated["files_rewritten"], updated["rows_updated"]) == (2, 2, 3)
    assert result["rows_are_the_truth"]
    # And a delete over the partition column alone drops the 6 files of its two days, reading none
    assert (result["delete"]["files_removed"], result["delete"]["files_read"]) == (6, 0)
    assert result["kept_days"] == ["d0", "d2"]

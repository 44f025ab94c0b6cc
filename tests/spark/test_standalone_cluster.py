"""A helper write on a standalone Spark cluster started from pyspark's own ``spark-class`` on
loopback: executors in a worker's JVMs write and describe the files, and the driver (its Python
process and its JVM) reads a small fraction of the bytes written, not the data itself; then
``format("sleeper")`` appends to the table in the same job, with no ``ss.register`` call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import sleeper_spark as ss
from tests.fixtures import process_groups
from tests.fixtures.servers import free_port
from tests.fixtures.spark import java_options, quiet_log4j2, spark_home
from tests.fixtures.summary import SUMMARY_KEY
from tests.reliability.budget import LONG_RUN

pytestmark = [pytest.mark.spark, pytest.mark.slow]

HERE = Path(__file__).parent
SPARK_CLASS = spark_home() / "bin" / "spark-class"
SPARK_SUBMIT = spark_home() / "bin" / "spark-submit"
# The driver's reads are a fixed cost (footers, class loading), so a smaller write shows the same bound.
ROWS = 600_000 if LONG_RUN else 200_000


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """A master and one worker (2 cores) on 127.0.0.1; yields the master URL and the environment."""
    log4j = quiet_log4j2(tmp_path)
    environment = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_MASTER_HOST": "127.0.0.1",
                   "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
                   "SPARK_NO_DAEMONIZE": "1", "JDK_JAVA_OPTIONS": java_options(log4j)}
    master_port, worker_port = free_port(), free_port()
    started: list[subprocess.Popen[bytes]] = []
    try:
        # Each JVM leads a process group of its own, so stopping the worker's group also stops the
        # executors it launched, and the run stops both groups if this teardown never runs.
        master = process_groups.start(
            [str(SPARK_CLASS), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
             "--port", str(master_port), "--webui-port", str(free_port())],
            env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started.append(master)
        process_groups.wait_for_port(master_port, lambda: master.poll() is None, "the Spark master")
        url = f"spark://127.0.0.1:{master_port}"
        worker = process_groups.start(
            [str(SPARK_CLASS), "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
             "--port", str(worker_port), "--webui-port", str(free_port()), "--cores", "2", "--memory", "2g",
             "--work-dir", str(tmp_path / "work")],
            env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started.append(worker)
        process_groups.wait_for_port(worker_port, lambda: worker.poll() is None, "the Spark worker")
        yield url, environment
    finally:
        for process in reversed(started):
            process_groups.stop(process, timeout_s=30)


def test_the_driver_reads_a_small_fraction_of_what_a_cluster_write_writes(
        cluster: tuple[str, dict[str, str]], tmp_path: Path, request: pytest.FixtureRequest) -> None:
    url, environment = cluster
    # When a job submitted to the cluster with the jar writes 200,000 rows (600,000 in a long run)
    # through the helper API (Spark's own writer)
    submit = [str(SPARK_SUBMIT), "--master", url, "--jars", ss.jar_path(), "--conf", "spark.ui.enabled=false",
              str(HERE / "cluster_write_job.py"), url, str(tmp_path / "warehouse"), str(ROWS)]
    run = subprocess.run(submit, env=environment, capture_output=True, text=True, timeout=600, cwd=HERE.parents[1])
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])

    # Then every row is committed once, by Spark's writer, in files the executors described
    assert result["native"] and result["rows_added"] == ROWS
    # And format("sleeper"), which the helper call registered, appended after it
    assert result["versions"] == [2, 3] and result["appended_files"] > 0 and result["scanned"] == ROWS + 1000
    # And the driver's two processes read under 10 % of the bytes written meanwhile
    driver_read = result["python_read"] + result["jvm_read"]
    request.node.user_properties.append((SUMMARY_KEY, (
        f"standalone cluster write: {result['bytes_written']:,} bytes in {result['files']} files written; the driver "
        f"read {result['python_read']:,} (Python) + {result['jvm_read']:,} (JVM) bytes meanwhile, "
        f"{driver_read / result['bytes_written']:.2%}")))
    assert driver_read < 0.1 * result["bytes_written"], result

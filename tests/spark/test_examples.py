"""The Spark examples run: the job under spark-submit, the notebook as a script."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.spark.conftest import quiet_log4j2

pytestmark = pytest.mark.spark

EXAMPLES = Path(__file__).parents[2] / "examples"


def _env(log4j_folder: Path) -> dict[str, str]:
    log4j = quiet_log4j2(log4j_folder)
    bin_dir = str(Path(sys.executable).parent)
    return {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
            "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "JDK_JAVA_OPTIONS": f"-Dlog4j2.configurationFile=file:{log4j}"}


def test_the_spark_job_runs_under_spark_submit(tmp_path: Path) -> None:
    spark_submit = Path(sys.executable).parent / "spark-submit"
    if not spark_submit.exists():
        pytest.skip("spark-submit is not installed next to this interpreter")
    run = subprocess.run([str(spark_submit), str(EXAMPLES / "spark_job.py"), str(tmp_path / "wh")],
                         capture_output=True, text=True, timeout=300, env=_env(tmp_path))
    assert run.returncode == 0, run.stderr[-3000:]
    assert "v2: wrote 10000 rows" in run.stdout
    assert "now 10500 rows" in run.stdout
    assert "time travel to v2: 10000 rows" in run.stdout
    assert "v3  append    +500 rows  {'job': 'top-up'}  app=example/1" in run.stdout


def test_the_notebook_runs_as_a_script(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, str(EXAMPLES / "notebook.py")], capture_output=True, text=True,
                         timeout=300, env=_env(tmp_path))
    assert run.returncode == 0, run.stderr[-3000:]
    assert "|      338| 250276.5|" in run.stdout
    assert "3 append 10 {}" in run.stdout

"""The spark-submit command that examples/spark_job.py documents works from a fresh shell."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.test_examples import EXAMPLES, REPO, SPARK_JOB_OUTPUT, VENV_BIN, fresh_shell

pytestmark = [pytest.mark.spark, pytest.mark.slow,
              pytest.mark.skipif(not (VENV_BIN / "spark-submit").exists(), reason="needs .venv/bin/spark-submit")]


def test_the_spark_job_runs_under_spark_submit(tmp_path: Path) -> None:
    # Given a shell in the repository whose PATH does not hold the venv, as on a fresh clone
    env = fresh_shell()
    documented = "PYSPARK_PYTHON=$PWD/.venv/bin/python .venv/bin/spark-submit examples/spark_job.py"
    assert documented in (EXAMPLES / "spark_job.py").read_text()

    # When the command of the example's docstring runs
    done = subprocess.run(["bash", "-c", f"{documented} {tmp_path / 'wh'}"], capture_output=True, text=True,
                          timeout=300, env=env, cwd=REPO)

    # Then it finds Spark and runs the job
    assert done.returncode == 0, done.stderr[-3000:]
    for line in SPARK_JOB_OUTPUT:
        assert line in done.stdout

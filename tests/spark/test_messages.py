"""Through format("sleeper"), a mistake reads as what is wrong, once, and no warehouse appears by reading."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.spark import spark_environment

pytestmark = pytest.mark.spark

JOB = Path(__file__).with_name("messages_job.py")


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, dict[str, Any]], str]:
    """The outcome of every mistake in messages_job.py, and the job's stderr (log level ERROR)."""
    work = tmp_path_factory.mktemp("messages")
    done = subprocess.run([sys.executable, str(JOB), str(work)], capture_output=True, text=True, timeout=600,
                          env=spark_environment(work))
    assert done.returncode == 0, done.stderr[-3000:]
    assert not (work / "no").exists(), "reading a missing warehouse created it"
    outcomes = {o["label"]: o for o in map(json.loads, done.stdout.splitlines())}
    return outcomes, done.stderr


def test_spark_partition_by_says_to_use_the_partition_by_option(job: tuple[dict[str, dict[str, Any]], str]) -> None:
    outcome = job[0]["partitionBy"]
    assert outcome["type"] == "ConfigError"
    assert outcome["message"].startswith("Spark's partitionBy() cannot hand partition columns to a Python data "
                                         'source such as sleeper: use .option("partition_by", "day") instead')


@pytest.mark.parametrize(("label", "error", "start"), [
    ("typo", "ConfigError", "unknown sleeper option 'partitionby' (did you mean 'partition_by'?). Catalog options:"),
    ("no table", "TableNotFoundError", "no table 'nope' in "),
    ("no warehouse", "WarehouseNotFoundError", "the warehouse "),
    ("executor write", "SchemaMismatchError", "column 'n' of table 'required' is not nullable"),
])
def test_errors_of_load_and_save_are_the_sleeper_error_message_first(
    job: tuple[dict[str, dict[str, Any]], str], label: str, error: str, start: str
) -> None:
    outcome = job[0][label]
    assert outcome["type"] == error and outcome["message"].startswith(start), outcome
    assert "Traceback" not in outcome["message"] and "\n" not in outcome["message"]


def test_an_executor_failure_is_printed_once_with_a_one_frame_traceback(
    job: tuple[dict[str, dict[str, Any]], str],
) -> None:
    # Given a read that fails inside an executor (a data file deleted behind the table's back)
    outcomes, stderr = job
    message = "is missing; run table.verify() for a full report"

    # Then the caller gets the error with a traceback of one frame, and stderr does not repeat it
    raised = outcomes["executor read"]["spark_message"]  # the exception as Spark raised it
    assert "sleeper_spark.errors.StorageError: data file " in raised and message in raised
    assert raised.count("  File ") == 1, raised
    assert message not in stderr and "not nullable" not in stderr, stderr

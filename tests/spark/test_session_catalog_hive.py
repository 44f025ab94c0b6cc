"""The sleeper session catalog over Spark's embedded Hive metastore (Derby), in a driver process
of its own (Hive support is fixed when a JVM starts): a PySpark driver that never calls
``ss.register``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import sleeper_spark as ss
from tests.fixtures.spark import spark_environment

pytestmark = pytest.mark.spark

JOB = Path(__file__).with_name("session_catalog_job.py")


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], ss.Catalog]:
    work = tmp_path_factory.mktemp("session-hive")
    done = subprocess.run([sys.executable, str(JOB), str(work)], capture_output=True, text=True,
                          timeout=600, env=spark_environment(work), cwd=work)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), ss.Catalog.local(str(work / "warehouse"))


def scanned(catalog: ss.Catalog, name: str) -> list[list[Any]]:
    table = catalog.table(name).scan()
    return sorted(list(row) for row in zip(*(table.column(n).to_pylist() for n in table.column_names), strict=True))


def test_a_format_read_as_a_sessions_first_statement_needs_no_registration(job: Any) -> None:
    assert job[0]["first read"] == [[7]]


def test_save_as_table_and_merge_are_the_python_api_table_registered_as_sleeper(job: Any) -> None:
    seen, catalog = job
    assert seen["events"] == scanned(catalog, "db.events") == [[1, "a", "d1"], [2, "B", "d2"], [3, "c", "d3"]]
    assert seen["provider"] == "sleeper"
    assert [s.operation for s in catalog.table("db.events").history()] == ["append", "merge"]


def test_a_parquet_table_sits_beside_it_as_before(job: Any) -> None:
    assert job[0]["parquet"] == [[1], [2]]
    assert job[0]["tables"] == ["events", "p"]


def test_read_stream_changes_needs_no_registration(job: Any) -> None:
    assert job[0]["changes"] == [[1, "insert", 2], [2, "delete", 3], [2, "insert", 2], [2, "insert", 3],
                                 [3, "insert", 3]]

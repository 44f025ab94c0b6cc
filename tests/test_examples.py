"""Every example runs, exactly as its docstring and the README say: ``bash scripts/examples.sh NAME``.

Each runs from a shell whose PATH does not hold the venv, as on a fresh clone; the Spark examples
are marked ``spark``. By default the examples without Spark run, and one that starts Spark
(session_catalog, the way the docs recommend); the other five Spark examples, each a Spark
application of 12-35 s of CPU whose behaviour the suite covers in its own tests, run in a long
run (``SLEEPER_LONG_RUN=1``). tests/spark/test_examples.py runs the spark-submit command of
examples/spark_job.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reliability.budget import long_run_only

REPO = Path(__file__).parents[1]
EXAMPLES = REPO / "examples"
SCRIPT = REPO / "scripts" / "examples.sh"
VENV_BIN = REPO / ".venv" / "bin"

pytestmark = pytest.mark.skipif(not (VENV_BIN / "python").exists(), reason="scripts/examples.sh runs .venv")
# The Spark examples without Spark's web UI, as tests/fixtures/spark.py runs every Spark job a
# test starts: it serves nobody here and costs each a second of CPU. Nothing else changes.
NO_UI = "--conf spark.ui.enabled=false pyspark-shell"


def fresh_shell() -> dict[str, str]:
    """The environment of a new terminal: no venv on PATH, no Spark variables left over from tests.

    ``SPARK_HOME`` stays when set: the home scripts/test.sh makes is the installed pyspark with
    compiled zips (scripts/spark_home.py), and clusters set one too; tests/test_packaging.py runs
    Spark from a new environment with none."""
    env = {key: value for key, value in os.environ.items()
           if (not key.startswith(("PYSPARK_", "SPARK_", "VIRTUAL_ENV")) or key == "SPARK_HOME")
           and key != "SLEEPER_SPARK_WAREHOUSE"}
    venv_dirs = {str(VENV_BIN), str(Path(sys.executable).parent)}
    env["PATH"] = os.pathsep.join(d for d in env.get("PATH", "").split(os.pathsep) if d not in venv_dirs)
    return env


def run_example(name: str, *args: str, timeout: int = 300) -> str:
    done = subprocess.run(["bash", str(SCRIPT), name, *args], capture_output=True, text=True, timeout=timeout,
                          env=fresh_shell() | {"PYSPARK_SUBMIT_ARGS": NO_UI}, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_every_example_has_a_test_and_its_docstring_names_its_command() -> None:
    tested = set(re.findall(r'run_example\("(\w+)"', Path(__file__).read_text()))
    for example in EXAMPLES.glob("*.py"):
        assert example.stem in tested, f"no test runs {example.name}"
        assert f"bash scripts/examples.sh {example.stem}" in example.read_text()[:1500], example.name


def test_the_readme_lists_every_example_with_the_command() -> None:
    readme = (REPO / "README.md").read_text()
    for example in EXAMPLES.glob("*.py"):
        assert f"bash scripts/examples.sh {example.stem}" in readme, f"README.md does not list {example.name}"


def test_the_script_lists_the_examples_when_given_no_name() -> None:
    done = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "  spark_job\n" in done.stderr and "  streaming\n" in done.stderr


def test_quickstart_runs_and_prints_the_history(tmp_path: Path) -> None:
    out = run_example("quickstart", str(tmp_path / "wh"))
    assert "after two appends: 5 rows in 4 files" in out
    assert "v4  overwrite" in out
    assert "verify: 1 file, ok" in out


def test_concurrent_writers_commit_everything_once(tmp_path: Path) -> None:
    out = run_example("concurrent_writers", str(tmp_path / "wh"), "--writers", "3", "--appends", "4")
    assert "12 snapshots, versions 2..13, 12 rows" in out
    assert "commits per writer: {'0': 4, '1': 4, '2': 4}" in out
    assert "history is linear: True" in out


def test_aws_moto_example_writes_reads_and_counts_requests() -> None:
    # moto's in-process server: no account, no network beyond loopback
    out = run_example("aws_moto")
    assert "at version 2: 2 rows" in out
    # the request counts docs/aws.md states for a commit
    assert "warm append: {'PutItem': 1, 'PutObject': 1}" in out
    assert "append that lost a race: {'PutItem': 2, 'PutObject': 1, 'Query': 1}" in out
    assert "v5  append" in out
    assert "verify: ok" in out


def test_maintenance_example_compacts_vacuums_truncates_and_verifies(tmp_path: Path) -> None:
    out = run_example("maintenance", str(tmp_path / "wh"))
    assert "after 24 appends: version 25, 24 files, 24 rows" in out
    assert "compact: v26 replaced 24 files with 2" in out
    assert "vacuum dry run: would delete 24 data files" in out
    assert "vacuum: deleted 24 data files" in out
    assert "truncate right away: cuts up to None" in out
    assert "deleted transactions up to 26 (26 entries); the log starts at 27" in out
    assert "time travel to v25: gone with the truncated log (SnapshotNotFoundError)" in out
    assert "verify: 3 files, ok; 25 rows at v27" in out


SPARK_JOB_OUTPUT = ("v2: wrote 10000 rows", "now 10500 rows", "time travel to v2: 10000 rows",
                    "v3  append    +500 rows  {'job': 'top-up'}  app=example/1")


@pytest.mark.spark
@pytest.mark.slow
@long_run_only  # by default tests/spark/test_examples.py runs the same job, by the spark-submit command it documents
def test_the_spark_job_runs(tmp_path: Path) -> None:
    out = run_example("spark_job", str(tmp_path / "wh"))
    for line in SPARK_JOB_OUTPUT:
        assert line in out


@pytest.mark.spark
@pytest.mark.slow
@long_run_only  # by default tests/spark/test_sql_catalog.py runs the same statements on a named catalog
def test_the_sql_example_creates_inserts_appends_merges_deletes_and_time_travels(tmp_path: Path) -> None:
    out = run_example("sql", str(tmp_path / "wh"))
    assert "MERGE INTO: 1 updated, 1 inserted" in out
    assert "|2024-05-01|     1|  9.5|" in out
    assert "|2024-05-02|     4| 43.0|" in out and "2024-05-03" not in out.split("MERGE INTO")[1]
    assert "spark.table: 5 rows" in out
    assert "VERSION AS OF 2: 2 rows" in out
    assert "tables in lake.shop: ['orders']" in out
    assert "python API history: [(2, 'append'), (3, 'append'), (4, 'merge'), (5, 'delete')]" in out


@pytest.mark.spark
@pytest.mark.slow
def test_the_session_catalog_example_saves_merges_and_lists_every_format(tmp_path: Path) -> None:
    out = run_example("session_catalog", str(tmp_path / "wh"))
    assert "|2024-05-01|     2|  34.5|" in out
    assert "|2024-05-02|     2|   8.0|" in out
    assert "VERSION AS OF 2: 2 rows" in out
    assert "tables in shop: ['orders', 'visits']" in out
    assert "orders is provider sleeper; the Python API's shop.orders: [(2, 'append'), (3, 'append'), (4, 'merge')]" \
        in out


@pytest.mark.spark
@pytest.mark.slow
@long_run_only  # by default tests/changes (test_changes_differential, test_sql_changes, test_source_changes) cover what it shows
def test_the_changes_example_keeps_a_copy_in_step_through_batch_sql_and_streaming_changes(tmp_path: Path) -> None:
    out = run_example("changes", str(tmp_path / "wh"))
    assert "applied changes up to version 3: 6 change rows; copy = [(1, 'Ada'), (2, 'Bryan'), (3, 'Cleo'), " \
           "(4, 'Dora')]" in out
    assert "applied changes up to version 4: 2 change rows; copy = [(1, 'Ada'), (2, 'Bryan'), (4, 'Dora'), " \
           "(5, 'Emil')]" in out
    assert "copy equals the table: True" in out
    assert "computeUpdates: update_postimage 2 Bryan, update_preimage 2 Brian" in out
    assert "CHANGES FROM VERSION 2: delete=2, insert=6" in out
    assert "stream: 8 change rows, then 2 after one more MERGE" in out


@pytest.mark.spark
@pytest.mark.slow
@long_run_only  # by default the session_catalog example starts Spark from scripts/examples.sh, and tests/spark what it shows
def test_the_notebook_runs_as_a_script() -> None:
    out = run_example("notebook")
    assert "|      338| 250276.5|" in out
    assert "3 append 10 {}" in out


@pytest.mark.spark
@pytest.mark.slow
@long_run_only  # by default tests/streaming/test_sink.py and test_source.py cover what it shows
def test_the_streaming_example_shows_one_snapshot_per_batch_and_each_row_once(tmp_path: Path) -> None:
    out = run_example("streaming", str(tmp_path / "work"))
    assert "v2  append  +100 rows  batch 0" in out
    assert "v4  append  +100 rows  batch 2" in out
    assert "source delivered 300 rows" in out
    assert "after one more append: 305 rows delivered in all" in out


@pytest.mark.spark
@pytest.mark.slow
@long_run_only  # by default tests/changes/test_streaming_upsert.py covers what it shows
def test_the_streaming_upsert_example_merges_each_batch_once(tmp_path: Path) -> None:
    out = run_example("streaming_upsert", str(tmp_path / "work"))
    assert "batch 0: version 2, {'rows_inserted': 3" in out
    assert "'rows_updated': 1, 'rows_deleted': 1" in out
    assert "users: [(1, 'ann'), (2, 'bobby'), (4, 'dan')]" in out
    assert "replayed batch 1: table still at version 3 (was 3)" in out


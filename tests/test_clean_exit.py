"""A process that used sleeper_spark exits 0 once its work is done, every time.

Each script of ``tests/exit_scripts/`` (the group-commit example of docs/usage.md, and parallel
scans of a table of many files) runs as a real process many times, four at once so that they
load the machine: every run must print what it should and exit 0, and its stderr must not say
that the C++ runtime or the interpreter ended it (a WARNING logged there is allowed). An
exit-time abort (``terminate called without an active exception``, exit status 134, after all
the output) hit 1 to 2 in 100 of these runs when Arrow's decoding threads could free Python's
memory after the interpreter had stopped (``sleeper_spark/storage/arrow_buffers.py``).

Each script runs 12 times by default (15 to 20 s each on 2 busy cores); ``SLEEPER_LONG_RUN=1`` makes
it 300, and ``SLEEPER_EXIT_RUNS=N`` sets the number outright (docs/reliability.md).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reliability.budget import LONG_RUN, timeout_for

pytestmark = pytest.mark.reliability

REPO = Path(__file__).parents[1]
SCRIPTS = REPO / "tests" / "exit_scripts"
RUNS = int(os.environ.get("SLEEPER_EXIT_RUNS", "").strip() or (300 if LONG_RUN else 12))
AT_ONCE = 4
RUN_TIMEOUT_S = 120  # one run takes about 2 s on a loaded machine
EXPECTED_OUTPUT = {"group_commit.py": "32\nTrue\nTrue\n", "parallel_scan.py": "24000\n"}
# What the C++ runtime and CPython write to stderr when they end a process.
FATAL_MARKS = ("terminate called", "Fatal Python error")


def _run_batch(script: Path, warehouses: list[Path]) -> list[str]:
    """Runs ``script`` once per warehouse, all at once; what went wrong with each run that failed."""
    runs = [subprocess.Popen([sys.executable, str(script), str(warehouse)], cwd=REPO, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for warehouse in warehouses]
    problems = []
    for run in runs:
        try:
            out, err = run.communicate(timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            run.kill()
            out, err = run.communicate()
        if run.returncode != 0 or out != EXPECTED_OUTPUT[script.name] or any(mark in err for mark in FATAL_MARKS):
            problems.append(f"exit {run.returncode}, stdout {out!r}, stderr {err[-1500:]!r}")
    return problems


@pytest.mark.timeout(timeout_for(RUNS * 1.5))
@pytest.mark.parametrize("script", sorted(EXPECTED_OUTPUT))
def test_every_run_exits_0_without_a_fatal_error(script: str, tmp_path: Path) -> None:
    # Given a script that uses sleeper_spark from several threads and then ends
    problems: list[str] = []
    # When it runs RUNS times, AT_ONCE processes at a time
    for first in range(0, RUNS, AT_ONCE):
        warehouses = [tmp_path / f"warehouse-{n}" for n in range(first, min(first + AT_ONCE, RUNS))]
        problems += _run_batch(SCRIPTS / script, warehouses)
    # Then every run printed its answer and exited 0, and none was ended by a fatal error at exit
    assert not problems, f"{len(problems)} of {RUNS} runs of {script} failed; the first: {problems[:3]}"

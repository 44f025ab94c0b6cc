"""How much of each reliability trial runs: small by default (CI), large through the environment.

The long run is one command (docs/reliability.md)::

    SLEEPER_LONG_RUN=1 SLEEPER_KILL_TRIALS=120 SLEEPER_FAULT_WRITES=5000 SLEEPER_TORTURE_SECONDS=600 \\
        .venv/bin/python -m pytest tests/reliability \\
        tests/storage/test_put_and_verify_interleavings.py tests/streaming/test_sink_crash.py \\
        tests/test_clean_exit.py -s

(600 kill trials, 120 per catalog kind; about 45 minutes on 2 cores.)

=========================  ==========================================================  ==========
variable                   what                                                        default
=========================  ==========================================================  ==========
SLEEPER_KILL_TRIALS        SIGKILL trials per catalog kind                              4 local, 2 others
                           (of three group-committing writers: 2 local, 1 other)
SLEEPER_KILL_SEED          seed of the kill moments and worker modes                    20261122
SLEEPER_FAULT_WRITES       writes per fault-injection run                               150
SLEEPER_FAULT_SEED         seed of the fault schedules                                  7
SLEEPER_TORTURE_SECONDS    how long the 8 torture processes run                         10
SLEEPER_TORTURE_WORKERS    how many torture processes                                   8
SLEEPER_LONG_RUN           1: also the largest interleaving searches (tests/storage)    unset
                           and the sink kill test on AWS, its random-moment kill,
                           and every streaming test on AWS (tests/streaming)
                           and every change test on AWS, a second condition seed
                           (tests/changes)
                           and 300 runs of each exit script (tests/test_clean_exit.py)
                           and more differential tables and cluster rows (tests/spark)
                           and the spilling 300-file commit on the object store
                           (tests/integration/test_aws_commits.py)
                           and refused metadata on AWS and the object store
                           and six Iceberg differential tables (tests/iceberg)
                           and the spark_job example by scripts/examples.sh too,
                           and the changes, notebook, streaming and streaming_upsert
                           examples (tests/test_examples.py)
                           and a second random table in each engine differential
                           (DuckDB, ClickHouse, delta-rs)
                           and 20 racing rounds, not 10, in the log and store contracts
                           and the multi-table transaction races with group commit
                           and on the object store (tests/transactions), and a second
                           seed of the condition-text differentials (tests/changes)
                           and the six racing writers on put-and-verify and the
                           DynamoDB lock, the group-commit races on the object
                           store (tests/integration), the pyiceberg read from the
                           object store's S3, and the sql example
=========================  ==========================================================  ==========

pytest's per-test timeout (600 s in pyproject.toml) is raised for a long run by
:func:`timeout_for`, so a long run needs no other flag.
"""

from __future__ import annotations

import os

import pytest

DEFAULT_KILL_TRIALS = {"local": 4}
DEFAULT_KILL_TRIALS_ELSEWHERE = 2
# A trial of three group-committing writers starts three processes: fewer of them by default.
DEFAULT_GROUP_KILL_TRIALS = {"local": 2}
DEFAULT_GROUP_KILL_TRIALS_ELSEWHERE = 1


def _int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    return int(value) if value else default


def kill_trials(kind: str) -> int:
    return _int("SLEEPER_KILL_TRIALS", DEFAULT_KILL_TRIALS.get(kind, DEFAULT_KILL_TRIALS_ELSEWHERE))


def group_kill_trials(kind: str) -> int:
    return _int("SLEEPER_KILL_TRIALS", DEFAULT_GROUP_KILL_TRIALS.get(kind, DEFAULT_GROUP_KILL_TRIALS_ELSEWHERE))


KILL_SEED = _int("SLEEPER_KILL_SEED", 20261122)
FAULT_WRITES = _int("SLEEPER_FAULT_WRITES", 150)
FAULT_SEED = _int("SLEEPER_FAULT_SEED", 7)
TORTURE_SECONDS = _int("SLEEPER_TORTURE_SECONDS", 10)
TORTURE_WORKERS = _int("SLEEPER_TORTURE_WORKERS", 8)
# The cases that each take minutes and add least beyond the smaller ones CI runs.
LONG_RUN = os.environ.get("SLEEPER_LONG_RUN", "").strip() == "1"
long_run_only = pytest.mark.skipif(not LONG_RUN, reason="long run only: SLEEPER_LONG_RUN=1 (docs/reliability.md)")


def backend_repeats_in_long_run(items: list[pytest.Item], folder: str, backends: tuple[str, ...],
                                by_default: frozenset[str]) -> None:
    """Outside a long run, skips the tests under ``folder`` parametrised on one of ``backends`` whose
    name is not in ``by_default``: the same behaviour runs on the local disk, and the backend's
    commits have its contract suite. For a conftest's ``pytest_collection_modifyitems``."""
    if LONG_RUN:
        return
    skip = pytest.mark.skip(reason=f"on {'/'.join(backends)} in a long run only: SLEEPER_LONG_RUN=1 "
                                   "(docs/reliability.md)")
    for item in items:
        name = getattr(item, "originalname", item.name)
        ids = item.nodeid.partition("[")[2].rstrip("]").split("-")
        if item.nodeid.startswith(folder) and any(b in ids for b in backends) and name not in by_default:
            item.add_marker(skip)


def timeout_for(seconds_of_work: float) -> int:
    """A per-test timeout with room for a slow machine, never below pyproject's 600 s."""
    return max(600, int(seconds_of_work * 3) + 300)

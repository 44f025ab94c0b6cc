"""Shared pytest options and hooks only; fixtures live in tests/fixtures/.

The summary hooks here serve the worker processes the test command runs (``pytest -n 4``):
they live in this root conftest because the process that hands out tests and prints the summary
collects no tests, so it never loads the conftests below it.
"""

from __future__ import annotations

import pytest

from tests.fixtures.summary import SUMMARY_KEY

# process_groups: no server, cluster or job a test starts outlives the run (see its docstring).
pytest_plugins = ["tests.fixtures.process_groups", "tests.fixtures.servers", "tests.fixtures.catalogs"]

# What tests measured (tests/fixtures/summary.py), in the order they ended.
_SUMMARY: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "teardown":
        _SUMMARY.extend(str(value) for key, value in report.user_properties if key == SUMMARY_KEY)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _SUMMARY:
        terminalreporter.section("measured by the tests: timings and counts")
        for line in _SUMMARY:
            terminalreporter.write_line(line)


# The modules that start Spark applications, servers or clusters of their own, each a minute or
# more of CPU. They are handed out first: collected in path order, tests/test_docs.py and
# tests/test_examples.py came last, and the run ended with a minute and a half of one or two
# of them running alone on a half-idle machine. First, they overlap with everything else.
HEAVY_FIRST = (
    "tests/test_examples.py", "tests/test_docs.py", "tests/spark/test_examples.py",
    "tests/spark/test_session_catalog_hive.py", "tests/spark/test_messages.py", "tests/spark/test_spark_connect.py",
    "tests/session_catalog/test_shared_metastore.py", "tests/streaming/test_sink_crash.py",
    "tests/streaming/test_object_store.py", "tests/spark/test_standalone_cluster.py", "tests/spark/test_failures.py",
    "tests/spark/test_differential_reads.py", "tests/changes/test_merge_races.py",
    "tests/changes/test_changes_differential.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Heavy modules first (see ``HEAVY_FIRST``), every other test in its collected order."""
    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::", 1)[0]
        return HEAVY_FIRST.index(path) if path in HEAVY_FIRST else len(HEAVY_FIRST)

    items.sort(key=rank)

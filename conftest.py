"""Shared pytest options and hooks only; fixtures live in tests/fixtures/.

The summary hooks here serve the two worker processes the test command runs (``pytest -n 2``):
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

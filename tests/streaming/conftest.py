"""The streaming tests share the SparkSession of ``tests.fixtures.spark``; they run on the local
disk and on the AWS test servers (DynamoDB Local + SeaweedFS).

The sink and the source reach a table only through its API, whose commits every backend's
contract suite checks: by default the AWS servers run the test in ``ON_AWS_BY_DEFAULT`` (one of
the sink), and a long run (``SLEEPER_LONG_RUN=1``) all.
"""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from tests.fixtures.spark import catalog, catalog_factory_over, spark
from tests.reliability.budget import backend_repeats_in_long_run

STREAMING_BACKENDS = ["local", "aws"]
catalog_factory = catalog_factory_over(STREAMING_BACKENDS)
ON_AWS_BY_DEFAULT = frozenset({"test_each_micro_batch_is_one_snapshot_tagged_with_the_query_and_batch"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    backend_repeats_in_long_run(items, "tests/streaming/", ("aws",), ON_AWS_BY_DEFAULT)


__all__ = ["STREAMING_BACKENDS", "catalog", "catalog_factory", "spark"]

"""Fixtures of the conditional-write tests: the strategies under test, and a timing report.

Every strategy is built the way a catalog builds it (:func:`open_conditional_writes` from a
:class:`CatalogConfig`); the non-native ones get a store that refuses conditional requests.
Measured durations and counts are printed at the end of the run (``-rA`` not needed).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.summary import SUMMARY_KEY
from tests.storage.workers import StrategySpec


@pytest.fixture
def report(request: pytest.FixtureRequest) -> Iterator[list[str]]:
    """Lines for the end-of-run summary; they reach it from whichever worker ran the test."""
    lines: list[str] = []
    yield lines
    request.node.user_properties.extend((SUMMARY_KEY, line) for line in lines)


@pytest.fixture(autouse=True)
def _aws_env(aws_credentials_env: dict[str, str]) -> None:
    """Every test here runs with the test servers' credentials in os.environ."""


@pytest.fixture(scope="session")
def lock_table(dynamodb_local: str) -> str:
    """A DynamoDB lock table on the session's DynamoDB Local, created once."""
    from sleeper_spark.config import CatalogConfig
    from sleeper_spark.storage.aws import make_client
    from sleeper_spark.storage.dynamodb_lock import ensure_lock_table

    name = f"locks-{uuid.uuid4().hex[:8]}"
    config = CatalogConfig(catalog="object_store", warehouse="s3://unused", endpoint_url=dynamodb_local)
    with pytest.MonkeyPatch.context() as patch:
        for key, value in {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"}.items():
            patch.setenv(key, value)
        ensure_lock_table(make_client("dynamodb", config), name)
    return name


STRATEGIES = [
    pytest.param("native-local", id="native-local"),
    pytest.param("native-seaweedfs", id="native-seaweedfs", marks=pytest.mark.integration),
    pytest.param("dynamodb-lock-seaweedfs", id="dynamodb-lock-seaweedfs", marks=pytest.mark.integration),
    pytest.param("put-and-verify-seaweedfs", id="put-and-verify-seaweedfs", marks=pytest.mark.integration),
    pytest.param("put-and-verify-local", id="put-and-verify-local"),
]


@pytest.fixture(params=STRATEGIES)
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StrategySpec]:
    """One strategy on one store, with a fresh warehouse."""
    name: str = request.param
    kind = name.rsplit("-", 1)[0]
    if name.endswith("-local"):
        yield StrategySpec(name, kind, str(tmp_path / "warehouse"))
        return
    endpoint: str = request.getfixturevalue("seaweedfs_s3")
    bucket: str = request.getfixturevalue("s3_bucket")
    table = request.getfixturevalue("lock_table") if kind == "dynamodb-lock" else None
    dynamodb = request.getfixturevalue("dynamodb_local") if kind == "dynamodb-lock" else None
    yield StrategySpec(name, kind, f"s3://{bucket}/warehouse", endpoint, dynamodb, table)

"""Backends of the contract suites that live on the loopback test servers.

Only the subclasses marked ``integration`` ask for these fixtures, so a run with
``-m "not integration"`` starts no server.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from sleeper_spark.log.aws.dynamodb_log_tables import ensure_tables
from sleeper_spark.storage.dynamodb_lock import ensure_lock_table
from tests.contract.backends import StrategySpec, dynamodb_clients
from tests.fixtures.servers import TEST_CREDENTIALS


@pytest.fixture
def local_spec(tmp_path: Path) -> StrategySpec:
    """Native conditional writes on a fresh local warehouse."""
    return StrategySpec("native-local", "native", str(tmp_path / "warehouse"))


@pytest.fixture
def seaweedfs_spec(seaweedfs_s3: str, s3_bucket: str, aws_credentials_env: dict[str, str]) -> StrategySpec:
    """Native conditional writes on a fresh bucket of the session's SeaweedFS."""
    return StrategySpec("native-seaweedfs", "native", f"s3://{s3_bucket}/warehouse", seaweedfs_s3)


@pytest.fixture
def put_and_verify_seaweedfs_spec(seaweedfs_spec: StrategySpec) -> StrategySpec:
    """put-and-verify on a fresh SeaweedFS bucket, whose own conditional requests are refused."""
    return StrategySpec("put-and-verify-seaweedfs", "put-and-verify", seaweedfs_spec.warehouse, seaweedfs_spec.s3_endpoint)


@pytest.fixture
def dynamodb_lock_seaweedfs_spec(
    seaweedfs_spec: StrategySpec, dynamodb_local: str, dynamodb_lock_table: str
) -> StrategySpec:
    """dynamodb-lock on a fresh SeaweedFS bucket (its own conditional requests refused) and DynamoDB Local."""
    return StrategySpec("dynamodb-lock-seaweedfs", "dynamodb-lock", seaweedfs_spec.warehouse,
                        seaweedfs_spec.s3_endpoint, dynamodb_local, dynamodb_lock_table)


def _with_test_credentials() -> pytest.MonkeyPatch:
    patch = pytest.MonkeyPatch()
    for key, value in TEST_CREDENTIALS.items():
        patch.setenv(key, value)
    return patch


@pytest.fixture(scope="session")
def dynamodb_tables(dynamodb_local: str) -> tuple[str, str]:
    """A transactions and a snapshots table on the session's DynamoDB Local, created once."""
    suffix = uuid.uuid4().hex[:8]
    tables = (f"contract-txn-{suffix}", f"contract-snap-{suffix}")
    patch = _with_test_credentials()
    try:
        client, _ = dynamodb_clients(dynamodb_local)
        ensure_tables(client, *tables)
    finally:
        patch.undo()
    return tables


@pytest.fixture(scope="session")
def dynamodb_lock_table(dynamodb_local: str) -> str:
    """A lock table of the dynamodb-lock strategy on the session's DynamoDB Local, created once."""
    name = f"contract-locks-{uuid.uuid4().hex[:8]}"
    patch = _with_test_credentials()
    try:
        client, _ = dynamodb_clients(dynamodb_local)
        ensure_lock_table(client, name)
    finally:
        patch.undo()
    return name

"""The log contract for the object-store log on the conditional-write strategies that are not native.

Each runs on a store that refuses conditional requests (put-and-verify on the local disk and on
SeaweedFS, dynamodb-lock on SeaweedFS with DynamoDB Local), so the strategy alone keeps one
winner per transaction number.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from tests.contract.backends import StrategySpec, open_log
from tests.contract.log_contract import LogFactory, TransactionLogContract


class TestLogOnPutAndVerifyOnLocalDisk(TransactionLogContract):
    @pytest.fixture
    def log_factory(self, tmp_path: Path) -> LogFactory:
        spec = StrategySpec("put-and-verify-local", "put-and-verify", str(tmp_path / "warehouse"))
        return functools.partial(open_log, spec, "table")


@pytest.mark.integration
class TestLogOnPutAndVerifyOnS3(TransactionLogContract):
    @pytest.fixture
    def log_factory(self, seaweedfs_spec: StrategySpec) -> LogFactory:
        spec = StrategySpec("put-and-verify-seaweedfs", "put-and-verify", seaweedfs_spec.warehouse,
                            seaweedfs_spec.s3_endpoint)
        return functools.partial(open_log, spec, "table")


@pytest.mark.integration
class TestLogOnDynamoDBLockOnS3(TransactionLogContract):
    @pytest.fixture
    def log_factory(self, seaweedfs_spec: StrategySpec, dynamodb_local: str, dynamodb_lock_table: str) -> LogFactory:
        spec = StrategySpec("dynamodb-lock-seaweedfs", "dynamodb-lock", seaweedfs_spec.warehouse,
                            seaweedfs_spec.s3_endpoint, dynamodb_local, dynamodb_lock_table)
        return functools.partial(open_log, spec, "table")

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
    def log_factory(self, put_and_verify_seaweedfs_spec: StrategySpec) -> LogFactory:
        return functools.partial(open_log, put_and_verify_seaweedfs_spec, "table")


@pytest.mark.integration
class TestLogOnDynamoDBLockOnS3(TransactionLogContract):
    @pytest.fixture
    def log_factory(self, dynamodb_lock_seaweedfs_spec: StrategySpec) -> LogFactory:
        return functools.partial(open_log, dynamodb_lock_seaweedfs_spec, "table")

"""The state pointer contract on the object store (local disk, put-and-verify, S3, dynamodb-lock) and on DynamoDB."""

from __future__ import annotations

import functools
import uuid
from pathlib import Path

import pytest

from tests.contract.backends import StrategySpec, open_dynamodb_pointer, open_pointer
from tests.contract.state_pointer_contract import OpenPointer, StatePointerContract


class TestObjectStorePointerOnLocalDisk(StatePointerContract):
    @pytest.fixture
    def open_pointer(self, local_spec: StrategySpec) -> OpenPointer:
        return functools.partial(open_pointer, local_spec)


class TestObjectStorePointerOnPutAndVerify(StatePointerContract):
    """``_state/latest`` moved by put-and-verify on a local disk that refuses conditional requests."""

    @pytest.fixture
    def open_pointer(self, tmp_path: Path) -> OpenPointer:
        return functools.partial(open_pointer, StrategySpec("pv", "put-and-verify", str(tmp_path / "warehouse")))


@pytest.mark.integration
class TestObjectStorePointerOnS3(StatePointerContract):
    @pytest.fixture
    def open_pointer(self, seaweedfs_spec: StrategySpec) -> OpenPointer:
        return functools.partial(open_pointer, seaweedfs_spec)


@pytest.mark.integration
class TestObjectStorePointerOnDynamoDBLock(StatePointerContract):
    """``_state/latest`` moved under DynamoDB lock records on SeaweedFS that refuses conditional requests."""

    @pytest.fixture
    def open_pointer(self, dynamodb_lock_seaweedfs_spec: StrategySpec) -> OpenPointer:
        return functools.partial(open_pointer, dynamodb_lock_seaweedfs_spec)


@pytest.mark.integration
@pytest.mark.usefixtures("aws_credentials_env")
class TestDynamoDBPointer(StatePointerContract):
    @pytest.fixture
    def open_pointer(self, dynamodb_local: str, dynamodb_tables: tuple[str, str]) -> OpenPointer:
        _transactions, snapshots = dynamodb_tables
        return functools.partial(open_dynamodb_pointer, dynamodb_local, snapshots, uuid.uuid4().hex)

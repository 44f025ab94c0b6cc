"""The table registry contract on the object store (local disk, put-and-verify, S3, dynamodb-lock) and on DynamoDB."""

from __future__ import annotations

import functools
import uuid
from pathlib import Path

import pytest

from tests.contract.backends import StrategySpec, open_dynamodb_registry, open_registry
from tests.contract.registry_contract import OpenRegistry, TableRegistryContract, entry


class TestObjectStoreRegistryOnLocalDisk(TableRegistryContract):
    @pytest.fixture
    def open_registry(self, local_spec: StrategySpec) -> OpenRegistry:
        return functools.partial(open_registry, local_spec)


class TestObjectStoreRegistryOnPutAndVerify(TableRegistryContract):
    """``_catalog/<name>.json`` created by put-and-verify on a local disk that refuses conditional requests."""

    @pytest.fixture
    def open_registry(self, tmp_path: Path) -> OpenRegistry:
        return functools.partial(open_registry, StrategySpec("pv", "put-and-verify", str(tmp_path / "warehouse")))


@pytest.mark.integration
class TestObjectStoreRegistryOnS3(TableRegistryContract):
    @pytest.fixture
    def open_registry(self, seaweedfs_spec: StrategySpec) -> OpenRegistry:
        return functools.partial(open_registry, seaweedfs_spec)


@pytest.mark.integration
class TestObjectStoreRegistryOnDynamoDBLock(TableRegistryContract):
    """``_catalog/<name>.json`` created under DynamoDB lock records on SeaweedFS that refuses conditional requests."""

    @pytest.fixture
    def open_registry(self, dynamodb_lock_seaweedfs_spec: StrategySpec) -> OpenRegistry:
        return functools.partial(open_registry, dynamodb_lock_seaweedfs_spec)


@pytest.mark.integration
@pytest.mark.usefixtures("aws_credentials_env")
class TestDynamoDBRegistry(TableRegistryContract):
    """The registry items of one warehouse in a snapshots table that other warehouses share."""

    @pytest.fixture
    def snapshots_table(self, dynamodb_tables: tuple[str, str]) -> str:
        return dynamodb_tables[1]

    @pytest.fixture
    def open_registry(self, dynamodb_local: str, snapshots_table: str) -> OpenRegistry:
        warehouse = f"s3://bucket-{uuid.uuid4().hex[:8]}/warehouse"
        return functools.partial(open_dynamodb_registry, dynamodb_local, snapshots_table, warehouse)

    def test_warehouses_sharing_a_table_do_not_see_each_others_names(
        self, dynamodb_local: str, snapshots_table: str
    ) -> None:
        # Given the registries of two warehouses in one DynamoDB table, each with an "events" table
        one = open_dynamodb_registry(dynamodb_local, snapshots_table, f"s3://one-{uuid.uuid4().hex[:8]}/w")
        two = open_dynamodb_registry(dynamodb_local, snapshots_table, f"s3://two-{uuid.uuid4().hex[:8]}/w")
        mine, theirs = entry("events"), entry("events")
        one.register(mine)
        two.register(theirs)
        one.register(entry("clicks"))
        # When each is asked, Then it sees only its own names and entries
        assert one.names() == ["clicks", "events"] and two.names() == ["events"]
        assert one.lookup("events") == mine and two.lookup("events") == theirs
        assert two.lookup("clicks") is None
        # And unregistering in one leaves the other's table of the same name
        one.unregister("events")
        assert one.lookup("events") is None and two.lookup("events") == theirs

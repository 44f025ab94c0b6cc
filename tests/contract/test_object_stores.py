"""The object store contract on the local disk, on S3 (SeaweedFS), and through put-and-verify."""

from __future__ import annotations

from pathlib import Path

import pytest

from sleeper_spark.storage import LocalObjectStore, ObjectStore
from tests.contract.backends import StrategySpec, open_store
from tests.contract.object_store_contract import ObjectStoreContract


class TestLocalObjectStore(ObjectStoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> ObjectStore:
        return LocalObjectStore(tmp_path / "warehouse")


class TestPutAndVerifyOnLocalDisk(ObjectStoreContract):
    """A store whose conditional methods come from put-and-verify over plain GET/HEAD/PUT/DELETE/LIST."""

    @pytest.fixture
    def store(self, tmp_path: Path) -> ObjectStore:
        return open_store(StrategySpec("put-and-verify-local", "put-and-verify", str(tmp_path / "warehouse")))


@pytest.mark.integration
class TestS3ObjectStore(ObjectStoreContract):
    @pytest.fixture
    def store(self, seaweedfs_spec: StrategySpec) -> ObjectStore:
        return open_store(seaweedfs_spec)

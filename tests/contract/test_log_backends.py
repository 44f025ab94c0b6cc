"""The log contract on the in-memory log and on the object-store log on the local disk."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from sleeper_spark.log import InMemoryTransactionLog, ObjectStoreTransactionLog, TransactionLog
from sleeper_spark.storage import LocalObjectStore, NativeConditionalWrites
from tests.contract.log_contract import LogFactory, TransactionLogContract


def open_local_log(root: str) -> TransactionLog:
    store = LocalObjectStore(root)
    return ObjectStoreTransactionLog(store, NativeConditionalWrites(store), "table")


class TestInMemoryLog(TransactionLogContract):
    supports_processes = False

    @pytest.fixture
    def log_factory(self) -> LogFactory:
        log = InMemoryTransactionLog()
        return lambda: log


class TestLocalObjectStoreLog(TransactionLogContract):
    @pytest.fixture
    def log_factory(self, tmp_path: Path) -> LogFactory:
        return functools.partial(open_local_log, str(tmp_path / "warehouse"))

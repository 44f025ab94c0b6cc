"""The pending appends contract in memory, on the object store (local disk, S3) and on DynamoDB."""

from __future__ import annotations

import functools
import uuid
from pathlib import Path

import pytest

from sleeper_spark.log.aws.dynamodb_log import DynamoDBTransactionLog
from sleeper_spark.log.aws.pending_dynamodb import DynamoDBPendingAppends
from sleeper_spark.log.pending import InMemoryPendingAppends, PendingAppends
from sleeper_spark.log.pending_objectstore import ObjectStorePendingAppends
from tests.contract.backends import StrategySpec, dynamodb_clients
from tests.contract.pending_contract import OpenPending, PendingAppendsContract


def open_object_store_pending(spec: StrategySpec, table_root: str) -> PendingAppends:
    store, _conditional = spec.build()
    return ObjectStorePendingAppends(store, table_root)


def open_dynamodb_pending(endpoint: str, transactions_table: str, run: str, table: str) -> PendingAppends:
    """The records of ``table`` under the table id ``<run>/<table>``, so that tests sharing the DynamoDB table never meet."""
    client, conditional = dynamodb_clients(endpoint)
    return DynamoDBPendingAppends(client, transactions_table, f"{run}/{table}", conditional_client=conditional)


class TestInMemoryPendingAppends(PendingAppendsContract):
    supports_processes = False

    @pytest.fixture
    def open_pending(self) -> OpenPending:
        tables: dict[str, InMemoryPendingAppends] = {}
        return lambda table: tables.setdefault(table, InMemoryPendingAppends())


class TestObjectStorePendingAppendsOnLocalDisk(PendingAppendsContract):
    @pytest.fixture
    def open_pending(self, local_spec: StrategySpec) -> OpenPending:
        return functools.partial(open_object_store_pending, local_spec)


@pytest.mark.integration
class TestObjectStorePendingAppendsOnS3(PendingAppendsContract):
    @pytest.fixture
    def open_pending(self, seaweedfs_spec: StrategySpec) -> OpenPending:
        return functools.partial(open_object_store_pending, seaweedfs_spec)


@pytest.mark.integration
@pytest.mark.usefixtures("aws_credentials_env")
class TestDynamoDBPendingAppends(PendingAppendsContract):
    @pytest.fixture
    def open_pending(self, dynamodb_local: str, dynamodb_tables: tuple[str, str]) -> OpenPending:
        transactions, _snapshots = dynamodb_tables
        return functools.partial(open_dynamodb_pending, dynamodb_local, transactions, uuid.uuid4().hex)


def test_object_store_records_live_under_the_log_folder_of_their_table(tmp_path: Path) -> None:
    # Given a record of the table at "events" on a local warehouse
    spec = StrategySpec("native-local", "native", str(tmp_path / "warehouse"))
    key = uuid.uuid4().hex
    open_object_store_pending(spec, "events").put(key, b"{}")
    # Then it is the one object of the table, where the layout says
    store, _ = spec.build()
    assert [info.key for info in store.list("")] == [f"events/_log/pending/{key}.json"]


@pytest.mark.integration
@pytest.mark.usefixtures("aws_credentials_env")
def test_dynamodb_records_never_meet_the_log_of_their_table(dynamodb_local: str,
                                                           dynamodb_tables: tuple[str, str]) -> None:
    # Given a table's log and its pending appends, in the one transactions table
    transactions, _snapshots = dynamodb_tables
    table_id = uuid.uuid4().hex
    client, conditional = dynamodb_clients(dynamodb_local)
    log = DynamoDBTransactionLog(client, transactions, table_id, conditional_client=conditional)
    pending = DynamoDBPendingAppends(client, transactions, table_id, conditional_client=conditional)
    key = "0" * 32  # its range key, 0, is below every log number
    # When a record is put and a transaction appended
    pending.put(key, b"pending")
    log.append(1, b"committed")
    # Then the log reads only its transaction, and the listing only the record
    assert [(r.number, r.body) for r in log.read()] == [(1, b"committed")] and log.first_number() == 1
    assert [(r.key, r.body) for r in pending.list()] == [(key, b"pending")]
    # And truncating the log leaves the record, dropping the records leaves the log
    assert log.delete_up_to(1) == 1
    assert [r.key for r in pending.list()] == [key]
    log.append(2, b"next")
    pending.drop()
    assert pending.list() == [] and [r.number for r in log.read(after=1)] == [2]

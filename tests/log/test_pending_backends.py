"""What each pending appends backend does beyond the contract: races of LIST and GET, and failures.

The DynamoDB store is driven by a fake client that fails as scripted: its errors must come out
as ours (``StorageError``, ``LogThrottledError``), retried where a retry can help, and the
waits between attempts go through the injected sleep.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError

from sleeper_spark.config import StoreRetryPolicy
from sleeper_spark.errors import LogThrottledError, StorageError
from sleeper_spark.log.aws.pending_dynamodb import DynamoDBPendingAppends
from sleeper_spark.log.pending import PendingRecord
from sleeper_spark.log.pending_objectstore import ObjectStorePendingAppends
from sleeper_spark.storage import LocalObjectStore, ObjectInfo


class DeletedAfterListing(LocalObjectStore):
    """A store on which a committer deletes the first listed record just after a LIST."""

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        found = list(super().list(prefix))
        if found:
            self.delete(found[0].key)
        return iter(found)


def test_a_record_deleted_between_list_and_get_is_left_out(tmp_path: Path) -> None:
    # Given three records, the first of which is committed and deleted right after the LIST
    pending = ObjectStorePendingAppends(DeletedAfterListing(tmp_path), "t")
    keys = sorted(uuid.uuid4().hex for _ in range(3))
    for key in keys:
        pending.put(key, key.encode())
    # When they are listed, Then the other two come back, and no error
    assert sorted(pending.list(), key=lambda r: r.key) == [PendingRecord(k, k.encode()) for k in keys[1:]]


def test_objects_in_the_pending_folder_that_are_no_records_are_not_listed(tmp_path: Path) -> None:
    # Given a record, and objects beside it that no put of a record writes
    store = LocalObjectStore(tmp_path)
    pending = ObjectStorePendingAppends(store, "t")
    key = uuid.uuid4().hex
    pending.put(key, b"{}")
    store.put(f"t/_log/pending/{key}.json.INTENT.1", b"{}")
    store.put("t/_log/pending/notes.txt", b"")
    store.put(f"t/_log/pending/nested/{key}.json", b"{}")
    # Then only the record is listed
    assert pending.list() == [PendingRecord(key, b"{}")]


def _error(code: str, status: int = 400) -> ClientError:
    response: Any = {"Error": {"Code": code, "Message": "scripted"}, "ResponseMetadata": {"HTTPStatusCode": status}}
    return ClientError(response, "Operation")


class ScriptedDynamoDB:
    """Raises the scripted failures of each operation in turn, then answers as DynamoDB would."""

    def __init__(self, **failures: list[Exception]) -> None:
        self.failures = failures
        self.calls: dict[str, int] = {}
        self.items: dict[tuple[str, str], dict[str, Any]] = {}

    def _call(self, operation: str) -> None:
        self.calls[operation] = self.calls.get(operation, 0) + 1
        queue = self.failures.get(operation, [])
        if queue:
            raise queue.pop(0)

    def put_item(self, **request: Any) -> dict[str, Any]:
        self._call("put_item")
        item = request["Item"]
        self.items[(item["table_id"]["S"], item["number"]["N"])] = item
        return {}

    def query(self, **request: Any) -> dict[str, Any]:
        self._call("query")
        return {"Items": list(self.items.values())}

    def delete_item(self, **request: Any) -> dict[str, Any]:
        self._call("delete_item")
        self.items.pop((request["Key"]["table_id"]["S"], request["Key"]["number"]["N"]), None)
        return {}


def _pending(client: ScriptedDynamoDB, waits: list[float]) -> DynamoDBPendingAppends:
    return DynamoDBPendingAppends(client, "transactions", "3f2c",  # type: ignore[arg-type]
                                  retry=StoreRetryPolicy(max_attempts=4), sleep=waits.append)


def test_a_put_that_was_throttled_or_lost_is_tried_again() -> None:
    # Given DynamoDB that throttles a put, then loses the answer of the next attempt
    client = ScriptedDynamoDB(put_item=[_error("ProvisionedThroughputExceededException"),
                                        _error("InternalServerError", 500)])
    waits: list[float] = []
    pending = _pending(client, waits)
    key = uuid.uuid4().hex
    # When a record is put, Then the third attempt stores it, after two waits
    pending.put(key, b"body")
    assert client.calls["put_item"] == 3 and len(waits) == 2
    assert pending.list() == [PendingRecord(key, b"body")]


@pytest.mark.parametrize(("failure", "expected"), [
    (_error("ThrottlingException"), LogThrottledError),
    (_error("InternalServerError", 500), StorageError),
    (EndpointConnectionError(endpoint_url="http://127.0.0.1:1"), StorageError),
])
def test_a_put_that_keeps_failing_ends_in_our_error_after_the_policy_attempts(
    failure: Exception, expected: type[StorageError]
) -> None:
    client = ScriptedDynamoDB(put_item=[failure] * 10)
    waits: list[float] = []
    with pytest.raises(expected) as raised:
        _pending(client, waits).put(uuid.uuid4().hex, b"body")
    assert client.calls["put_item"] == 4 and len(waits) == 3
    assert not isinstance(raised.value, (ClientError, BotoCoreError))


def test_a_missing_table_is_not_retried_and_says_how_to_create_it() -> None:
    client = ScriptedDynamoDB(put_item=[_error("ResourceNotFoundException")])
    with pytest.raises(StorageError, match="sleeper-spark init"):
        _pending(client, []).put(uuid.uuid4().hex, b"body")
    assert client.calls["put_item"] == 1


@pytest.mark.parametrize(("failure", "expected"), [
    (_error("ThrottlingException"), LogThrottledError),
    (_error("AccessDeniedException"), StorageError),
])
def test_failed_listings_and_deletes_end_in_our_errors(failure: Exception, expected: type[StorageError]) -> None:
    client = ScriptedDynamoDB(query=[failure], delete_item=[failure])
    pending = _pending(client, [])
    with pytest.raises(expected):
        pending.list()
    with pytest.raises(expected):
        pending.delete(uuid.uuid4().hex)


def test_a_key_that_is_no_uuid_in_hex_is_refused() -> None:
    pending = _pending(ScriptedDynamoDB(), [])
    for bad in ("not-hex" * 4 + "abcd", "0F" * 16, "0f" * 15):
        with pytest.raises(ValueError, match="pending append key"):
            pending.put(bad, b"body")

"""Loops of the log backends end, with a typed error, when the store keeps misbehaving.

Each fake gives up after a generous number of calls with a ``RuntimeError``, so that a loop
without a bound fails here instead of hanging.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sleeper_spark.config import StoreRetryPolicy
from sleeper_spark.errors import LogThrottledError, PreconditionFailedError, StorageError
from sleeper_spark.log.aws.dynamodb_log import DynamoDBTransactionLog
from sleeper_spark.log.state_snapshots import ObjectStoreStatePointer
from sleeper_spark.storage import LocalObjectStore, NativeConditionalWrites

RUNAWAY = 10_000


class AlwaysOvertaken(NativeConditionalWrites):
    """Every compare-and-swap finds that another writer moved the object first."""

    def __init__(self, store: LocalObjectStore) -> None:
        super().__init__(store)
        self.calls = 0

    def replace_if_match(self, key: str, data: bytes, etag: str) -> str:
        self.calls += 1
        if self.calls > RUNAWAY:
            raise RuntimeError("the loop never ended")
        raise PreconditionFailedError(f"{key} changed since it was read")


def test_a_state_pointer_that_keeps_moving_under_us_ends_in_storage_error(tmp_path: Path) -> None:
    # Given a pointer at 5 and a store on which every compare-and-swap is overtaken
    store = LocalObjectStore(tmp_path)
    store.put("t/_state/latest", b"5")
    conditional = AlwaysOvertaken(store)
    waits: list[float] = []
    pointer = ObjectStoreStatePointer(store, conditional, "t", retry=StoreRetryPolicy(max_attempts=6),
                                      sleep=waits.append)
    # When it is moved to 9
    with pytest.raises(StorageError, match="other writers kept moving it"):
        pointer.advance(9)
    # Then it tried the policy's attempts, backing off through the injected sleep
    assert conditional.calls == 6 and len(waits) == 5
    assert pointer.get() == 5


def test_the_state_pointer_still_moves_forward_only(tmp_path: Path) -> None:
    store = LocalObjectStore(tmp_path)
    pointer = ObjectStoreStatePointer(store, NativeConditionalWrites(store), "t")
    assert pointer.advance(3) and pointer.advance(7)
    assert not pointer.advance(5) and not pointer.advance(7)
    assert pointer.get() == 7


class MisbehavingDynamoDB:
    """Queries that name the same next page for ever; batch writes that never process anything."""

    def __init__(self) -> None:
        self.calls = 0

    def _count(self) -> None:
        self.calls += 1
        if self.calls > RUNAWAY:
            raise RuntimeError("the loop never ended")

    def query(self, **request: Any) -> dict[str, Any]:
        self._count()
        start = request.get("ExclusiveStartKey") or {"table_id": {"S": "t"}, "number": {"N": "1"}}
        items = [] if "ExclusiveStartKey" in request else [{"number": {"N": "1"}, "body": {"B": b"x"}}]
        return {"Items": items, "LastEvaluatedKey": start}

    def batch_write_item(self, **request: Any) -> dict[str, Any]:
        self._count()
        return {"UnprocessedItems": request["RequestItems"]}


def test_a_page_key_named_twice_ends_a_query_in_storage_error() -> None:
    client = MisbehavingDynamoDB()
    log = DynamoDBTransactionLog(client, "transactions", "t")  # type: ignore[arg-type]
    with pytest.raises(StorageError, match="page key"):
        list(log.read())
    assert client.calls == 2


def test_unprocessed_deletes_are_retried_within_bounds_then_throttled(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a table that never processes a batch, and a log whose waits are recorded
    client = MisbehavingDynamoDB()
    waits: list[float] = []
    log = DynamoDBTransactionLog(client, "transactions", "t", retry=StoreRetryPolicy(max_attempts=4),  # type: ignore[arg-type]
                                 sleep=waits.append)
    monkeypatch.setattr(log, "_query", lambda *args, **kwargs: iter([{"table_id": {"S": "t"}, "number": {"N": "1"}}]))
    # When the head of the log is deleted
    with pytest.raises(LogThrottledError, match="stayed unprocessed"):
        log.delete_up_to(1)
    # Then the batch was sent the policy's number of times, backing off in between
    assert client.calls == 4 and len(waits) == 3

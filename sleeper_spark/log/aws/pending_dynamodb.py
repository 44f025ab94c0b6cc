"""Pending appends of the AWS backend: items in the transactions table, beside the log.

Each record is a :class:`~sleeper_spark.models.dynamodb_items.PendingItem` under the hash key
``<table id>#pending`` and the range key ``int(key[:15], 16)``, so a listing is one strongly
consistent query of that hash key, and the log's own queries (hash key ``<table id>``) never
see a record. ``expires_at``, seven days after the put, lets the table's TTL remove records
that nobody deleted (a committer that died between committing and cleaning up).

A put has no condition: the key is the writer's own and a repeated put writes the same item.
So it is safe to retry blindly, and it is retried under the store retry policy on the client
without automatic retries (one policy owns the attempts). Keys of two writers that agree in
their first 15 hex digits would share an item: those digits of a uuid4 hold 56 random bits
(the 13th is its version), so even a million records pending at once collide with odds
below one in 10**5.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from sleeper_spark.config import StoreRetryPolicy
from sleeper_spark.errors import LogThrottledError, StorageError
from sleeper_spark.layout import is_pending_key
from sleeper_spark.log.aws.dynamodb_log import BATCH_WRITE_MAX
from sleeper_spark.log.aws.dynamodb_log_tables import NUMBER, TABLE_ID
from sleeper_spark.log.aws.dynamodb_requests import DynamoDBTableAccess, mapped_errors, raise_unretryable
from sleeper_spark.log.pending import PendingAppends, PendingRecord
from sleeper_spark.models.dynamodb_items import PendingItem, attribute_value, plain_values
from sleeper_spark.storage.aws import failure_kind
from sleeper_spark.storage.retry import StoreRetries

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

PENDING_SUFFIX = "#pending"
RANGE_KEY_HEX_DIGITS = 15  # 60 bits: a DynamoDB number keeps 38 significant digits, 2**128 needs 39
EXPIRY = timedelta(days=7)  # far beyond any commit; only records nobody deleted live that long
KEY = "key"
BODY = "body"

__all__ = ["DynamoDBPendingAppends", "pending_hash_key", "pending_range_key"]


def pending_hash_key(table_id: str) -> str:
    return f"{table_id}{PENDING_SUFFIX}"


def pending_range_key(key: str) -> int:
    if not is_pending_key(key):
        raise ValueError(f"{key!r} is no pending append key (32 lowercase hex digits)")
    return int(key[:RANGE_KEY_HEX_DIGITS], 16)


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


class DynamoDBPendingAppends(PendingAppends):
    """The pending appends of ``table_id``, in the transactions table ``table``.

    ``client`` serves listings and deletes (botocore's standard retries suit them); puts go
    through ``conditional_client`` if given (automatic retries off), retried under ``retry``.
    ``now`` is the clock of ``written_at`` and ``expires_at``.
    """

    def __init__(
        self,
        client: DynamoDBClient,
        table: str,
        table_id: str,
        *,
        conditional_client: DynamoDBClient | None = None,
        retry: StoreRetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        now: Callable[[], datetime] = _utc_now,
    ) -> None:
        # Only for its paged queries: its put is the conditional one, and ours has no condition.
        self._access = DynamoDBTableAccess(client, table, conditional_client, retry, sleep)
        self._client = client
        self._put_client = conditional_client or client
        self._table = table
        self._retry = retry or StoreRetryPolicy()
        self._sleep = sleep  # injectable so that tests record the waits between attempts
        self._table_id = table_id
        self._hash_key = pending_hash_key(table_id)
        self._now = now

    def _what(self, action: str) -> str:
        return f"DynamoDB {action} in table {self._table!r} for table id {self._table_id}"

    def put(self, key: str, body: bytes) -> None:
        written_at = self._now()
        item = PendingItem(table_id=self._hash_key, number=pending_range_key(key), key=key, body=body,
                           written_at=written_at, expires_at=int((written_at + EXPIRY).timestamp()))
        request: Any = {"TableName": self._table, "Item": item.to_item()}
        what = self._what(f"put of pending append {key}")
        retries = StoreRetries(self._retry, what, sleep=self._sleep)
        for attempt in retries:
            with attempt:
                try:
                    self._put_client.put_item(**request)
                    return
                except (ClientError, BotoCoreError) as error:
                    retries.failed(error, failure_kind(error))
                    raise_unretryable(what, error)
        if retries.throttled:
            raise LogThrottledError(f"{what}: throttled ({retries.describe()})")
        raise StorageError(f"{what} failed ({retries.describe()})")

    def list(self) -> list[PendingRecord]:
        request: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "#t = :t",
            "ExpressionAttributeNames": {"#t": TABLE_ID, "#k": KEY, "#b": BODY},
            "ExpressionAttributeValues": {":t": attribute_value(self._hash_key)},
            "ProjectionExpression": "#k, #b",
            "ConsistentRead": True,
        }
        records = []
        for item in self._access.pages(self._client.query, request, self._what("query of pending appends")):
            values = plain_values(item)
            records.append(PendingRecord(values[KEY], values[BODY]))
        return records

    def delete(self, key: str) -> None:
        item_key = {TABLE_ID: attribute_value(self._hash_key), NUMBER: attribute_value(pending_range_key(key))}
        with mapped_errors(self._what(f"delete of pending append {key}")):
            self._client.delete_item(TableName=self._table, Key=item_key)

    def delete_many(self, keys: Iterable[str]) -> None:
        """BatchWriteItem, 25 keys a request; what stays unprocessed (throttling) is deleted one by one."""
        wanted = list(dict.fromkeys(keys))
        for start in range(0, len(wanted), BATCH_WRITE_MAX):
            chunk = wanted[start:start + BATCH_WRITE_MAX]
            requests: Any = [{"DeleteRequest": {"Key": {TABLE_ID: attribute_value(self._hash_key),
                                                        NUMBER: attribute_value(pending_range_key(key))}}}
                             for key in chunk]
            with mapped_errors(self._what(f"batch delete of {len(chunk)} pending appends")):
                response = self._client.batch_write_item(RequestItems={self._table: requests})
            unprocessed = response.get("UnprocessedItems", {}).get(self._table, [])
            if unprocessed:
                left = {int(plain_values(r["DeleteRequest"]["Key"])[NUMBER]) for r in unprocessed}
                for key in chunk:
                    if pending_range_key(key) in left:
                        self.delete(key)

"""The AWS backend's transaction log: one item per transaction in the transactions table.

As in Sleeper's transaction log state store: hash key ``table_id`` (S), range key ``number``
(N), the ``body`` (B) and ``written_at`` (see :class:`~sleeper_spark.models.dynamodb_items.TransactionItem`).
An append is one ``PutItem`` with ``attribute_not_exists(number)``, so DynamoDB lets exactly
one writer in per number. Reads are strongly consistent queries of the tail, paged lazily. An
append whose answer cannot be learnt is :class:`AppendOutcomeUnknownError` (see
:mod:`~sleeper_spark.log.aws.dynamodb_requests`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from itertools import islice
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from sleeper_spark.config import StoreRetryPolicy
from sleeper_spark.errors import (
    AppendOutcomeUnknownError,
    LogThrottledError,
    StorageError,
    TransactionNumberTakenError,
)
from sleeper_spark.log.aws.dynamodb_log_tables import NUMBER, TABLE_ID
from sleeper_spark.log.aws.dynamodb_requests import DynamoDBTableAccess, Item, Unanswered, mapped_errors
from sleeper_spark.log.transaction_log import LogRecord, TransactionLog
from sleeper_spark.models.dynamodb_items import AttributeValue, TransactionItem, attribute_value, plain_values
from sleeper_spark.storage.aws import error_code
from sleeper_spark.storage.retry import FailureKind, StoreRetries

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

BODY = "body"
BATCH_WRITE_MAX = 25  # BatchWriteItem takes at most 25 requests

__all__ = ["DynamoDBTransactionLog"]


class DynamoDBTransactionLog(DynamoDBTableAccess, TransactionLog):
    """The log of one table: the items of ``table_id`` in the transactions table.

    ``client`` serves reads and deletes (botocore's standard retries suit them);
    ``conditional_client``, if given, should have automatic retries off and serves appends.
    Without it appends still learn their outcome, only more cautiously: any hidden retry
    counts as an attempt that may have landed.
    """

    def __init__(
        self,
        client: DynamoDBClient,
        table: str,
        table_id: str,
        *,
        conditional_client: DynamoDBClient | None = None,
        page_size: int | None = None,
        retry: StoreRetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__(client, table, conditional_client, retry, sleep)
        self._table_id = table_id
        self._page_size = page_size

    def _what(self, action: str) -> str:
        return f"DynamoDB {action} in table {self._table!r} for table id {self._table_id}"

    def append(self, number: int, body: bytes) -> None:
        item = TransactionItem(table_id=self._table_id, number=number, body=body)
        what = self._what(f"append of transaction {number}")
        try:
            written = self.put(
                item, "attribute_not_exists(#n)", {"#n": NUMBER}, {},
                is_ours=lambda old: old.get(BODY) == body, what=what,
            )
        except Unanswered as failure:
            if failure.maybe_applied:
                raise AppendOutcomeUnknownError(f"{what}: the outcome is unknown ({failure})") from None
            if failure.throttled:
                raise LogThrottledError(f"{what}: throttled ({failure})") from None
            raise StorageError(f"{what} failed ({failure})") from None
        if not written:
            raise TransactionNumberTakenError(f"transaction {number} exists")

    def replace_damaged(self, number: int, damaged: bytes, body: bytes) -> None:
        item = TransactionItem(table_id=self._table_id, number=number, body=body,
                               written_at=datetime.now(timezone.utc)).to_item()
        with mapped_errors(self._what(f"repair of transaction {number}")):
            try:
                self._client.put_item(TableName=self._table, Item=item, ConditionExpression="#b = :old",
                                      ExpressionAttributeNames={"#b": BODY},
                                      ExpressionAttributeValues={":old": attribute_value(damaged)})
            except ClientError as error:
                if error_code(error) != "ConditionalCheckFailedException":
                    raise
                raise TransactionNumberTakenError(f"transaction {number} no longer holds the damaged bytes") from None

    def read(self, after: int = 0, up_to: int | None = None) -> Iterator[LogRecord]:
        if up_to is not None and up_to <= after:
            return
        condition = "#t = :t AND #n >= :lo" if up_to is None else "#t = :t AND #n BETWEEN :lo AND :hi"
        values = {":t": attribute_value(self._table_id), ":lo": attribute_value(after + 1)}
        if up_to is not None:
            values[":hi"] = attribute_value(up_to)
        expected = after + 1
        for item in self._query(condition, values, projection="#n, #b"):
            entry = plain_values(item)
            if entry[NUMBER] != expected:
                return  # numbers have no gaps, so what follows a hole (a truncated head) is not read
            yield LogRecord(expected, entry[BODY])
            expected += 1

    def delete_up_to(self, number: int) -> int:
        condition = "#t = :t AND #n <= :hi"
        values = {":t": attribute_value(self._table_id), ":hi": attribute_value(number)}
        # Oldest first, so that an interrupted truncation never leaves a hole below kept entries.
        found = self._query(condition, values, projection="#t, #n")
        keys = ({TABLE_ID: item[TABLE_ID], NUMBER: item[NUMBER]} for item in found)
        deleted = 0
        while batch := list(islice(keys, BATCH_WRITE_MAX)):
            deleted += self._delete_batch(batch)
        return deleted

    def first_number(self) -> int | None:
        values = {":t": attribute_value(self._table_id)}
        for item in self._query("#t = :t", values, projection="#n", limit=1):
            return int(plain_values(item)[NUMBER])
        return None

    def _query(
        self, condition: str, values: dict[str, AttributeValue], projection: str, limit: int | None = None
    ) -> Iterator[Item]:
        """Items of this table id in number order, one page per request, fetched lazily."""
        request: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": condition,
            "ExpressionAttributeNames": {"#t": TABLE_ID, "#n": NUMBER},
            "ExpressionAttributeValues": values,
            "ProjectionExpression": projection,
            "ConsistentRead": True,
            "ScanIndexForward": True,
        }
        if "#b" in projection:
            request["ExpressionAttributeNames"]["#b"] = BODY
        page_size = limit or self._page_size
        if page_size:
            request["Limit"] = page_size
        return self.pages(self._client.query, request, self._what("query"), first_only=limit is not None)

    def _delete_batch(self, keys: list[dict[str, Any]]) -> int:
        pending: list[Any] = [{"DeleteRequest": {"Key": key}} for key in keys]
        what = self._what("batch delete")
        retries = StoreRetries(self._retry, what, sleep=self._sleep)
        for attempt in retries:
            with attempt:
                with mapped_errors(what):
                    response = self._client.batch_write_item(RequestItems={self._table: pending})
                pending = list(response.get("UnprocessedItems", {}).get(self._table, []))
                if not pending:
                    return len(keys)
                # Unprocessed items mean throttling: slow down, then send only those again.
                retries.failed(StorageError(f"{len(pending)} items unprocessed"), FailureKind.THROTTLED)
        raise LogThrottledError(f"{what}: {len(pending)} items stayed unprocessed ({retries.describe()})")

"""The AWS backend's snapshots table: each table's state-snapshot pointer, beside the catalog registry.

The table is keyed by ``table_id`` (S) alone. It holds each table's state-snapshot pointer
``{table_id, number}`` (a :class:`~sleeper_spark.models.dynamodb_items.StatePointerItem`), moved
with ``attribute_not_exists(table_id) OR number < :n`` (strictly less, so it only ever moves
forward), and the catalog's registry of tables and namespaces, whose items
:mod:`sleeper_spark.log.aws.dynamodb_registry` reads and writes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from sleeper_spark.config import StoreRetryPolicy
from sleeper_spark.errors import LogThrottledError, StorageError
from sleeper_spark.log.aws.dynamodb_log_tables import NUMBER, TABLE_ID
from sleeper_spark.log.aws.dynamodb_requests import DynamoDBTableAccess, Unanswered, mapped_errors
from sleeper_spark.log.state_snapshots import StatePointer
from sleeper_spark.models.dynamodb_items import StatePointerItem, attribute_value, plain_values

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

__all__ = ["DynamoDBStatePointer"]


class DynamoDBStatePointer(DynamoDBTableAccess, StatePointer):
    """``{table_id, number}`` in the snapshots table; it only moves forward."""

    def __init__(
        self,
        client: DynamoDBClient,
        table: str,
        table_id: str,
        *,
        conditional_client: DynamoDBClient | None = None,
        retry: StoreRetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__(client, table, conditional_client, retry, sleep)
        self._table_id = table_id

    def _what(self, action: str) -> str:
        return f"DynamoDB {action} of the state pointer of table id {self._table_id} (table {self._table!r})"

    def get(self) -> int | None:
        with mapped_errors(self._what("read")):
            response = self._client.get_item(
                TableName=self._table,
                Key={TABLE_ID: attribute_value(self._table_id)},
                ProjectionExpression="#number",
                ExpressionAttributeNames={"#number": NUMBER},
                ConsistentRead=True,
            )
        item = response.get("Item")
        return int(plain_values(item)[NUMBER]) if item else None

    def advance(self, number: int) -> bool:
        item = StatePointerItem(table_id=self._table_id, number=number)
        what = self._what(f"advance to {number}")
        try:
            return self.put(
                item,
                # Strictly less: an equal number is "already as new", and never moves it back.
                f"attribute_not_exists({TABLE_ID}) OR #number < :n",
                {"#number": NUMBER},
                {":n": attribute_value(number)},
                is_ours=lambda old: old.get(NUMBER) == number, what=what,
            )
        except Unanswered as failure:
            error = LogThrottledError if failure.throttled and not failure.maybe_applied else StorageError
            raise error(f"{what} failed ({failure})") from None

    def drop(self) -> None:
        with mapped_errors(self._what("delete")):
            self._client.delete_item(TableName=self._table, Key={TABLE_ID: attribute_value(self._table_id)})

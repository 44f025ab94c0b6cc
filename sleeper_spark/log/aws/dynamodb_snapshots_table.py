"""The AWS backend's snapshots table: each table's state-snapshot pointer, and the catalog registry.

The table is keyed by ``table_id`` (S) alone. It holds each table's state-snapshot pointer
``{table_id, number}``, moved with ``attribute_not_exists(table_id) OR number < :n`` (strictly
less, so it only ever moves forward), and the catalog's table registry, one item per table
name under ``table_id = "catalog#<warehouse>#<name>"`` with ``kind = "catalog-entry"``. The
warehouse is part of the key because catalogs of different warehouses commonly share the
default table names. The items are :class:`~sleeper_spark.models.dynamodb_items.StatePointerItem`
and :class:`~sleeper_spark.models.dynamodb_items.CatalogEntryItem`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from sleeper_spark.config import StoreRetryPolicy
from sleeper_spark.errors import CorruptLogError, LogThrottledError, StorageError, TableAlreadyExistsError
from sleeper_spark.log.aws.dynamodb_log_tables import NUMBER, TABLE_ID
from sleeper_spark.log.aws.dynamodb_requests import DynamoDBTableAccess, Unanswered, mapped_errors
from sleeper_spark.log.registry import TableEntry, TableRegistry
from sleeper_spark.log.state_snapshots import StatePointer
from sleeper_spark.models.dynamodb_items import (
    CATALOG_ENTRY_KIND,
    CatalogEntryItem,
    StatePointerItem,
    attribute_value,
    plain_values,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

__all__ = ["DynamoDBStatePointer", "DynamoDBTableRegistry"]


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


class DynamoDBTableRegistry(DynamoDBTableAccess, TableRegistry):
    """One item per table name in the snapshots table (see the module doc)."""

    def __init__(
        self,
        client: DynamoDBClient,
        table: str,
        namespace: str = "",
        *,
        conditional_client: DynamoDBClient | None = None,
        retry: StoreRetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__(client, table, conditional_client, retry, sleep)
        self._namespace = namespace

    def _key(self, name: str) -> str:
        return f"catalog#{self._namespace}#{name}" if self._namespace else f"catalog#{name}"

    def _what(self, action: str) -> str:
        return f"DynamoDB {action} in the catalog registry (table {self._table!r})"

    def register(self, entry: TableEntry) -> None:
        body = entry.model_dump_json()
        item = CatalogEntryItem(table_id=self._key(entry.name), catalog=self._namespace, name=entry.name, entry=body)
        what = self._what(f"registration of {entry.name!r}")
        try:
            written = self.put(
                item, f"attribute_not_exists({TABLE_ID})", {}, {},
                is_ours=lambda old: old.get("entry") == body, what=what,
            )
        except Unanswered as failure:
            raise StorageError(f"{what} failed ({failure})") from None
        if not written:
            raise TableAlreadyExistsError(f"table {entry.name!r} exists already")

    def lookup(self, name: str) -> TableEntry | None:
        with mapped_errors(self._what(f"lookup of {name!r}")):
            response = self._client.get_item(
                TableName=self._table, Key={TABLE_ID: attribute_value(self._key(name))}, ConsistentRead=True
            )
        item = response.get("Item")
        if not item:
            return None
        try:
            return TableEntry.model_validate_json(CatalogEntryItem.from_item(item).entry)
        except ValidationError as error:
            raise CorruptLogError(f"the catalog entry of table {name!r} cannot be read: {error}") from None

    def names(self) -> list[str]:
        # A scan is fine here: listing tables is rare and never on a commit's path.
        request: dict[str, Any] = {
            "TableName": self._table,
            "FilterExpression": "#kind = :kind AND #catalog = :catalog",
            "ProjectionExpression": "#name",
            "ExpressionAttributeNames": {"#kind": "kind", "#catalog": "catalog", "#name": "name"},
            "ExpressionAttributeValues": {":kind": attribute_value(CATALOG_ENTRY_KIND),
                                          ":catalog": attribute_value(self._namespace)},
            "ConsistentRead": True,
        }
        found = self.pages(self._client.scan, request, self._what("scan"))
        return sorted(str(plain_values(item)["name"]) for item in found)

    def unregister(self, name: str) -> None:
        with mapped_errors(self._what(f"removal of {name!r}")):
            self._client.delete_item(TableName=self._table, Key={TABLE_ID: attribute_value(self._key(name))})

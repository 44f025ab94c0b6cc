"""The AWS backend's catalog registry: table entries and namespace records in the snapshots table.

The snapshots table is keyed by ``table_id`` (S) alone (see
:mod:`sleeper_spark.log.aws.dynamodb_snapshots_table`). A catalog's table registry is one item
per table name under ``table_id = "catalog#<warehouse>#<name>"`` with ``kind =
"catalog-entry"``; its namespace records, one item per created namespace under ``table_id =
"namespace#<warehouse>#<name>"`` with ``kind = "namespace"``. The warehouse is part of the key
because catalogs of different warehouses commonly share the default table names. The items are
:class:`~sleeper_spark.models.dynamodb_items.CatalogEntryItem` and
:class:`~sleeper_spark.models.dynamodb_items.NamespaceItem`.

A namespace record changes by a conditional put on the entry it replaces (``entry = :old``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from sleeper_spark.config import StoreRetryPolicy
from sleeper_spark.errors import CorruptLogError, NamespaceAlreadyExistsError, StorageError, TableAlreadyExistsError
from sleeper_spark.log.aws.dynamodb_log_tables import TABLE_ID
from sleeper_spark.log.aws.dynamodb_requests import DynamoDBTableAccess, Item, Unanswered, mapped_errors
from sleeper_spark.log.registry import NamespaceChange, TableEntry, TableRegistry, swap_namespace
from sleeper_spark.models import Namespace
from sleeper_spark.models.dynamodb_items import (
    CATALOG_ENTRY_KIND,
    NAMESPACE_KIND,
    CatalogEntryItem,
    NamespaceItem,
    attribute_value,
    plain_values,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

__all__ = ["DynamoDBTableRegistry"]


class DynamoDBTableRegistry(DynamoDBTableAccess, TableRegistry):
    """The items of one warehouse's tables and namespaces in the snapshots table (see the module doc)."""

    def __init__(
        self,
        client: DynamoDBClient,
        table: str,
        warehouse: str = "",
        *,
        conditional_client: DynamoDBClient | None = None,
        retry: StoreRetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__(client, table, conditional_client, retry, sleep)
        self._warehouse = warehouse

    def _key(self, name: str, kind: str = "catalog") -> str:
        return f"{kind}#{self._warehouse}#{name}" if self._warehouse else f"{kind}#{name}"

    def _what(self, action: str) -> str:
        return f"DynamoDB {action} in the catalog registry (table {self._table!r})"

    def _get(self, key: str, what: str) -> Item | None:
        with mapped_errors(self._what(what)):
            response = self._client.get_item(
                TableName=self._table, Key={TABLE_ID: attribute_value(key)}, ConsistentRead=True
            )
        return response.get("Item") or None

    def _names(self, kind: str) -> list[str]:
        # A scan is fine here: listing tables and namespaces is rare and never on a commit's path.
        request: dict[str, Any] = {
            "TableName": self._table,
            "FilterExpression": "#kind = :kind AND #catalog = :catalog",
            "ProjectionExpression": "#name",
            "ExpressionAttributeNames": {"#kind": "kind", "#catalog": "catalog", "#name": "name"},
            "ExpressionAttributeValues": {":kind": attribute_value(kind), ":catalog": attribute_value(self._warehouse)},
            "ConsistentRead": True,
        }
        found = self.pages(self._client.scan, request, self._what("scan"))
        return sorted(str(plain_values(item)["name"]) for item in found)

    def _delete(self, key: str, what: str) -> None:
        with mapped_errors(self._what(what)):
            self._client.delete_item(TableName=self._table, Key={TABLE_ID: attribute_value(key)})

    # -- tables --------------------------------------------------------------------------

    def register(self, entry: TableEntry) -> None:
        body = entry.model_dump_json()
        item = CatalogEntryItem(table_id=self._key(entry.name), catalog=self._warehouse, name=entry.name, entry=body)
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
        item = self._get(self._key(name), f"lookup of {name!r}")
        if item is None:
            return None
        try:
            return TableEntry.model_validate_json(CatalogEntryItem.from_item(item).entry)
        except ValidationError as error:
            raise CorruptLogError(f"the catalog entry of table {name!r} cannot be read: {error}") from None

    def names(self) -> list[str]:
        return self._names(CATALOG_ENTRY_KIND)

    def unregister(self, name: str) -> None:
        self._delete(self._key(name), f"removal of {name!r}")

    # -- namespaces ----------------------------------------------------------------------

    def _namespace_item(self, namespace: Namespace) -> NamespaceItem:
        return NamespaceItem(table_id=self._key(namespace.name, NAMESPACE_KIND), catalog=self._warehouse,
                             name=namespace.name, entry=namespace.model_dump_json())

    def register_namespace(self, namespace: Namespace) -> None:
        item = self._namespace_item(namespace)
        what = self._what(f"record of namespace {namespace.name!r}")
        try:
            written = self.put(
                item, f"attribute_not_exists({TABLE_ID})", {}, {},
                is_ours=lambda old: old.get("entry") == item.entry, what=what,
            )
        except Unanswered as failure:
            raise StorageError(f"{what} failed ({failure})") from None
        if not written:
            raise NamespaceAlreadyExistsError(f"namespace {namespace.name!r} exists already")

    def _read_namespace(self, name: str) -> tuple[Namespace, str] | None:
        """The record and the stored text it was read from (what a change must find to replace it)."""
        item = self._get(self._key(name, NAMESPACE_KIND), f"lookup of namespace {name!r}")
        if item is None:
            return None
        try:
            entry = NamespaceItem.from_item(item).entry
            return Namespace.model_validate_json(entry), entry
        except ValidationError as error:
            raise CorruptLogError(f"the record of namespace {name!r} cannot be read: {error}; delete its item "
                                  "to leave the namespace without comment and properties") from None

    def lookup_namespace(self, name: str) -> Namespace | None:
        found = self._read_namespace(name)
        return found[0] if found is not None else None

    def namespace_names(self) -> list[str]:
        return self._names(NAMESPACE_KIND)

    def update_namespace(self, name: str, change: NamespaceChange) -> Namespace | None:
        def replace(stored: str, changed: Namespace) -> bool:
            item = self._namespace_item(changed)
            what = self._what(f"change of namespace {name!r}")
            try:
                return self.put(item, "#entry = :stored", {"#entry": "entry"}, {":stored": attribute_value(stored)},
                                is_ours=lambda old: old.get("entry") == item.entry, what=what)
            except Unanswered as failure:
                raise StorageError(f"{what} failed ({failure}); it may have landed: read the namespace, and change "
                                   "it again if it did not") from None

        return swap_namespace(name, lambda: self._read_namespace(name), replace, change, self._retry, self._sleep)

    def unregister_namespace(self, name: str) -> None:
        self._delete(self._key(name, NAMESPACE_KIND), f"removal of namespace {name!r}")

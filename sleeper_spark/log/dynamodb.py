"""The AWS backend's log, state pointer and table registry, in two DynamoDB tables.

The transactions table holds one item per transaction, as in Sleeper's transaction log state
store: hash key ``table_id`` (S), range key ``number`` (N), the ``body`` (B) and ``written_at``.
An append is one ``PutItem`` with ``attribute_not_exists(number)``, so DynamoDB lets exactly
one writer in per number. Reads are strongly consistent queries of the tail, paged lazily.

The snapshots table is keyed by ``table_id`` (S) alone. It holds each table's state-snapshot
pointer ``{table_id, number}``, moved with ``attribute_not_exists(table_id) OR number < :n``
(strictly less, so it only ever moves forward), and the catalog's table registry, one item per
table name under ``table_id = "catalog#<warehouse>#<name>"`` with ``kind = "catalog-entry"``.
The warehouse is part of the key because catalogs of different warehouses commonly share the
default table names.

Conditional puts and lost answers: a put whose answer was lost (a timeout, a dropped
connection, a 5xx) may have landed, and a blind retry would then fail its condition against
our own item. So conditional puts go through :meth:`_DynamoDBTable._put`, which retries by hand
on a client without automatic retries, remembers whether an attempt may have landed, and on a
failed condition after such an attempt compares the stored item (returned by
``ReturnValuesOnConditionCheckFailure=ALL_OLD``) with ours. Bodies of racing writers differ
(each carries a unique snapshot id), so an equal item is our own. An answer that cannot be
learnt becomes :class:`AppendOutcomeUnknownError` for the log.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from itertools import islice
from typing import TYPE_CHECKING, Any, NoReturn, cast

from botocore.exceptions import BotoCoreError, ClientError
from pydantic import ValidationError

from sleeper_spark.config import StoreRetryPolicy
from sleeper_spark.errors import CorruptLogError, StorageError, TableAlreadyExistsError
from sleeper_spark.log.dynamodb_log_tables import NUMBER, TABLE_ID, ensure_tables
from sleeper_spark.log.registry import TableEntry, TableRegistry
from sleeper_spark.log.state_snapshots import StatePointer
from sleeper_spark.log.transaction_log import (
    AppendOutcomeUnknownError,
    LogRecord,
    LogThrottledError,
    TransactionLog,
    TransactionNumberTakenError,
)
from sleeper_spark.models.dynamodb_items import (
    CATALOG_ENTRY_KIND,
    AttributeValue,
    CatalogEntryItem,
    DynamoDBItem,
    StatePointerItem,
    TransactionItem,
    attribute_value,
    plain_values,
)
from sleeper_spark.storage.aws import describe, error_code, failure_kind
from sleeper_spark.storage.retry import FailureKind, StoreRetries

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

BODY = "body"
WRITTEN_AT = "written_at"
BATCH_WRITE_MAX = 25  # BatchWriteItem takes at most 25 requests
_Item = Mapping[str, Any]

__all__ = ["DynamoDBStatePointer", "DynamoDBTableRegistry", "DynamoDBTransactionLog", "ensure_tables"]


class _DynamoDBTable:
    """The DynamoDB table that holds a class's items, the clients that reach it, and how calls are retried."""

    def __init__(
        self,
        client: DynamoDBClient,
        table: str,
        conditional_client: DynamoDBClient | None,
        retry: StoreRetryPolicy | None,
        sleep: Callable[[float], None],
    ) -> None:
        self._client = client
        self._conditional_client = conditional_client or client
        self._table = table
        self._retry = retry or StoreRetryPolicy()
        self._sleep = sleep  # injectable so that tests record the waits between attempts

    def _pages(
        self, call: Callable[..., Any], request: dict[str, Any], what: str, *, first_only: bool = False
    ) -> Iterator[_Item]:
        """The items a query or scan finds, one page per request, fetched lazily.

        Each page starts where the last ended; a server that names one start key twice would
        send us round in circles, so that is a :class:`StorageError`.
        """
        seen: set[str] = set()
        while True:
            with _mapped(what):
                page = call(**request)
            yield from page.get("Items", [])
            start = page.get("LastEvaluatedKey")
            if not start or first_only:
                return
            fingerprint = repr(sorted(start.items()))
            if fingerprint in seen:
                raise StorageError(f"{what}: DynamoDB returned the page key {fingerprint} twice; the server "
                                   "is misbehaving, try again later")
            seen.add(fingerprint)
            request["ExclusiveStartKey"] = start

    def _put(
        self,
        item: DynamoDBItem,
        condition: str,
        names: dict[str, str],
        values: dict[str, Any],
        *,
        is_ours: Callable[[dict[str, Any]], bool],
        what: str,
    ) -> bool:
        """Writes ``item`` with ``written_at`` now: ``True``, or ``False`` if the condition failed against another.

        See the module doc for why it retries by hand. Raises :class:`_Unanswered` when no attempt
        got an answer, and :class:`StorageError` for a failure no retry can fix.
        """
        request: dict[str, Any] = {
            "TableName": self._table,
            "Item": item.model_copy(update={WRITTEN_AT: datetime.now(timezone.utc)}).to_item(),
            "ConditionExpression": condition,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if names:
            request["ExpressionAttributeNames"] = names
        if values:
            request["ExpressionAttributeValues"] = values
        retries = StoreRetries(self._retry, what, sleep=self._sleep)
        for attempt in retries:
            with attempt:
                try:
                    self._conditional_client.put_item(**request)
                    return True
                except (ClientError, BotoCoreError) as error:
                    if isinstance(error, ClientError):
                        # A client with automatic retries may have sent this request more than once.
                        hidden = int(error.response.get("ResponseMetadata", {}).get("RetryAttempts", 0) or 0)
                        retries.maybe_applied = retries.maybe_applied or hidden > 0
                        if error_code(error) == "ConditionalCheckFailedException":
                            stored = plain_values(cast(Any, error.response).get("Item") or {})
                            return retries.maybe_applied and is_ours(stored)
                    retries.failed(error, failure_kind(error))
                    _raise_unretryable(what, error)
        raise _Unanswered(retries)


class DynamoDBTransactionLog(_DynamoDBTable, TransactionLog):
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
            written = self._put(
                item, "attribute_not_exists(#n)", {"#n": NUMBER}, {},
                is_ours=lambda old: old.get(BODY) == body, what=what,
            )
        except _Unanswered as failure:
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
        with _mapped(self._what(f"repair of transaction {number}")):
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
    ) -> Iterator[_Item]:
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
        return self._pages(self._client.query, request, self._what("query"), first_only=limit is not None)

    def _delete_batch(self, keys: list[dict[str, Any]]) -> int:
        pending: list[Any] = [{"DeleteRequest": {"Key": key}} for key in keys]
        what = self._what("batch delete")
        retries = StoreRetries(self._retry, what, sleep=self._sleep)
        for attempt in retries:
            with attempt:
                with _mapped(what):
                    response = self._client.batch_write_item(RequestItems={self._table: pending})
                pending = list(response.get("UnprocessedItems", {}).get(self._table, []))
                if not pending:
                    return len(keys)
                # Unprocessed items mean throttling: slow down, then send only those again.
                retries.failed(StorageError(f"{len(pending)} items unprocessed"), FailureKind.THROTTLED)
        raise LogThrottledError(f"{what}: {len(pending)} items stayed unprocessed ({retries.describe()})")


class DynamoDBStatePointer(_DynamoDBTable, StatePointer):
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
        with _mapped(self._what("read")):
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
            return self._put(
                item,
                # Strictly less: an equal number is "already as new", and never moves it back.
                f"attribute_not_exists({TABLE_ID}) OR #number < :n",
                {"#number": NUMBER},
                {":n": attribute_value(number)},
                is_ours=lambda old: old.get(NUMBER) == number, what=what,
            )
        except _Unanswered as failure:
            error = LogThrottledError if failure.throttled and not failure.maybe_applied else StorageError
            raise error(f"{what} failed ({failure})") from None

    def drop(self) -> None:
        with _mapped(self._what("delete")):
            self._client.delete_item(TableName=self._table, Key={TABLE_ID: attribute_value(self._table_id)})


class DynamoDBTableRegistry(_DynamoDBTable, TableRegistry):
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
            written = self._put(
                item, f"attribute_not_exists({TABLE_ID})", {}, {},
                is_ours=lambda old: old.get("entry") == body, what=what,
            )
        except _Unanswered as failure:
            raise StorageError(f"{what} failed ({failure})") from None
        if not written:
            raise TableAlreadyExistsError(f"table {entry.name!r} exists already")

    def lookup(self, name: str) -> TableEntry | None:
        with _mapped(self._what(f"lookup of {name!r}")):
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
        found = self._pages(self._client.scan, request, self._what("scan"))
        return sorted(str(plain_values(item)["name"]) for item in found)

    def unregister(self, name: str) -> None:
        with _mapped(self._what(f"removal of {name!r}")):
            self._client.delete_item(TableName=self._table, Key={TABLE_ID: attribute_value(self._key(name))})


# -- shared plumbing ---------------------------------------------------------------------


class _Unanswered(Exception):
    """Every attempt of a conditional put failed without an answer to its condition."""

    def __init__(self, retries: StoreRetries) -> None:
        super().__init__(f"no answer after {retries.attempts} attempts: {describe(retries.last)}")
        self.maybe_applied = retries.maybe_applied
        self.throttled = retries.throttled


def _raise_unretryable(what: str, error: Exception) -> NoReturn:
    if isinstance(error, ClientError):
        code = error_code(error)
        if code == "ResourceNotFoundException":
            raise StorageError(
                f"{what}: the DynamoDB table does not exist; create it with `sleeper-spark init` "
                "(or Catalog.ensure_infrastructure() in Python)"
            ) from error
        if code == "ValidationException" and "size" in describe(error).lower():
            raise StorageError(
                f"{what}: the item is too large for DynamoDB (400 KB at most); "
                "bodies this big must be spilled to the object store"
            ) from error
    raise StorageError(f"{what} failed ({describe(error)})") from error


@contextmanager
def _mapped(what: str) -> Iterator[None]:
    """Maps botocore failures of a call that botocore retries itself."""
    try:
        yield
    except (ClientError, BotoCoreError) as error:
        if failure_kind(error) is FailureKind.THROTTLED:
            raise LogThrottledError(f"{what}: throttled ({describe(error)})") from error
        _raise_unretryable(what, error)

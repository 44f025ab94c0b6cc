"""How the DynamoDB classes of the AWS backend reach their table: paged reads, conditional puts, errors.

Conditional puts and lost answers: a put whose answer was lost (a timeout, a dropped
connection, a 5xx) may have landed, and a blind retry would then fail its condition against
our own item. So conditional puts go through :meth:`DynamoDBTableAccess.put`, which retries by
hand on a client without automatic retries, remembers whether an attempt may have landed, and
on a failed condition after such an attempt compares the stored item (returned by
``ReturnValuesOnConditionCheckFailure=ALL_OLD``) with ours. Bodies of racing writers differ
(each carries a unique snapshot id), so an equal item is our own. An answer that cannot be
learnt is :class:`Unanswered`, which each class maps to its own error.

Botocore's failures end here: above this module there are only our errors.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, NoReturn, cast

from botocore.exceptions import BotoCoreError, ClientError

from sleeper_spark.config import StoreRetryPolicy
from sleeper_spark.errors import LogThrottledError, StorageError
from sleeper_spark.models.dynamodb_items import DynamoDBItem, plain_values
from sleeper_spark.storage.aws import describe, error_code, failure_kind
from sleeper_spark.storage.retry import FailureKind, StoreRetries

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

WRITTEN_AT = "written_at"
Item = Mapping[str, Any]


class DynamoDBTableAccess:
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

    def pages(
        self, call: Callable[..., Any], request: dict[str, Any], what: str, *, first_only: bool = False
    ) -> Iterator[Item]:
        """The items a query or scan finds, one page per request, fetched lazily.

        Each page starts where the last ended; a server that names one start key twice would
        send us round in circles, so that is a :class:`StorageError`.
        """
        seen: set[str] = set()
        while True:
            with mapped_errors(what):
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

    def put(
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

        See the module doc for why it retries by hand. Raises :class:`Unanswered` when no attempt
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
                    raise_unretryable(what, error)
        raise Unanswered(retries)


class Unanswered(Exception):
    """Every attempt of a conditional put failed without an answer to its condition."""

    def __init__(self, retries: StoreRetries) -> None:
        super().__init__(f"no answer after {retries.attempts} attempts: {describe(retries.last)}")
        self.maybe_applied = retries.maybe_applied
        self.throttled = retries.throttled


def raise_unretryable(what: str, error: Exception) -> NoReturn:
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
def mapped_errors(what: str) -> Iterator[None]:
    """Maps botocore failures of a call that botocore retries itself."""
    try:
        yield
    except (ClientError, BotoCoreError) as error:
        if failure_kind(error) is FailureKind.THROTTLED:
            raise LogThrottledError(f"{what}: throttled ({describe(error)})") from error
        raise_unretryable(what, error)

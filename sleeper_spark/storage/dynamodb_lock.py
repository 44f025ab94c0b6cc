"""Conditional writes on any S3-compatible store through a DynamoDB lock (object_store's DynamoCommit).

The lock table has a string partition key ``path`` (the object's full URI, so one table serves
many buckets), a string sort key ``etag`` (the etag a replace expects, ``*`` for a create), and
the numbers ``generation``, ``timeout`` (milliseconds) and ``ttl`` (epoch seconds, DynamoDB's
TTL attribute, so that records left behind disappear by themselves). :func:`ensure_lock_table`
creates it. A conditional write of ``key``:

1. HEADs the object and fails at once if the condition does not hold (create: it exists,
   :class:`PathExistsError`; replace: it is missing or has another etag,
   :class:`PreconditionFailedError`).
2. Puts the lock record ``(path, etag)`` with ``attribute_not_exists``. If that succeeds:
   HEADs again under the lock (a writer that finished and released between our first HEAD and
   our lock is seen here), PUTs the object with a plain PUT, which is all the store needs to
   offer, and deletes the record (conditionally on being its owner).
3. If the record exists, polls HEAD every ``test_interval_s`` and fails as soon as the
   condition no longer holds (the holder's write landed). Once ``timeout * max_clock_skew_rate``
   has passed on our clock since we first saw that record, the holder is taken for dead: the
   record is taken over by putting it again with ``generation + 1``, on condition that its
   generation (and owner) are still the ones we saw; of several waiters exactly one wins, the
   others see the new generation and wait for it in turn. Then step 2 goes on.

Only the holder's clock *rate* matters, not its time: a holder must finish its PUT within
``timeout`` by its own clock, and no waiter takes over before ``timeout * max_clock_skew_rate``
by its clock, so clocks may run up to ``max_clock_skew_rate`` times faster than each other.
A blind retry of a lost PutItem answer is harmless: each write puts a random ``owner`` token in
its record, and a record that turns out to carry our own token is our lock.

Limits (those of DynamoCommit):

* Only writes through this class are synchronised. An unconditional PUT or DELETE of the same
  key, or a conditional write through another strategy or another lock table, races with it.
* A holder that stalls past the timeout (a long pause, a PUT that hangs) can overwrite the
  object after a waiter took over and wrote it. A holder notices when its own PUT returned
  late and raises :class:`WriteOutcomeUnknownError` rather than claim a clean win.
* A failed PUT may still land, so it leaves the lock record in place (and raises
  :class:`WriteOutcomeUnknownError`): later writers of that key wait out
  ``timeout * max_clock_skew_rate`` (60 s by default) before taking it over. A crashed holder
  costs the same wait.
* Records are keyed differently from other DynamoCommit implementations (full URIs, records
  removed after a write): do not share a lock table with them.
* The store's HEAD, PUT and GET must be strongly consistent (S3 and SeaweedFS are).

Requests per uncontended write: two HEADs and one PUT on the store, one PutItem and one
DeleteItem on DynamoDB.
"""

from __future__ import annotations

import logging
import math
import os
import secrets
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from sleeper_spark.config import CatalogConfig, StoreRetryPolicy
from sleeper_spark.errors import (
    ConfigError,
    LockHeldError,
    PathExistsError,
    PreconditionFailedError,
    StorageError,
    WriteOutcomeUnknownError,
)
from sleeper_spark.models.dynamodb_items import AttributeValue, LockRecordItem, attribute_value
from sleeper_spark.storage.aws import describe, error_code, make_client
from sleeper_spark.storage.base import ObjectStore
from sleeper_spark.storage.conditional import ConditionalWriteStrategy
from sleeper_spark.storage.lock_table import ensure_lock_table
from sleeper_spark.storage.put_and_verify import normal_etag

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

log = logging.getLogger(__name__)

PATH = "path"
ETAG = "etag"
GENERATION = "generation"
OWNER = "owner"
CREATE = "*"  # the sort key of a create's record
CONFLICT = "ConditionalCheckFailedException"

DEFAULT_TIMEOUT_S = 20.0
DEFAULT_MAX_CLOCK_SKEW_RATE = 3.0
DEFAULT_TTL_S = 3600.0
DEFAULT_TEST_INTERVAL_S = 0.1

T = TypeVar("T")

__all__ = ["DynamoDBLockConditionalWrites", "ensure_lock_table"]


def _key(path: str, sort_key: str) -> dict[str, AttributeValue]:
    return {PATH: attribute_value(path), ETAG: attribute_value(sort_key)}


@dataclass(frozen=True)
class _Lease:
    generation: int
    owner: str
    timeout_s: float
    since: float  # our clock: when we asked for it, or when we first saw someone else's


class DynamoDBLockConditionalWrites(ConditionalWriteStrategy):
    """Create-if-absent and replace-if-match on a store without them (see the module doc).

    The DynamoDB client comes from :func:`~sleeper_spark.storage.aws.make_client` for
    ``config`` on each call, so that the object can be pickled into Spark executors; tests may
    pass a ``client`` instead. ``clock`` (monotonic seconds), ``sleep`` and ``wall_clock``
    (epoch seconds, for ``ttl`` only) are injectable so that tests need not wait. ``retry``
    (default: ``config.store_retry``) bounds the rounds of taking the lock and, with one wait
    for a stale lease, the time a write may take; past them: :class:`LockHeldError`.
    """

    def __init__(
        self,
        store: ObjectStore,
        table: str,
        *,
        config: CatalogConfig | None = None,
        client: DynamoDBClient | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_clock_skew_rate: float = DEFAULT_MAX_CLOCK_SKEW_RATE,
        ttl_s: float = DEFAULT_TTL_S,
        test_interval_s: float = DEFAULT_TEST_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        wall_clock: Callable[[], float] = time.time,
        retry: StoreRetryPolicy | None = None,
    ) -> None:
        if config is None and client is None:
            raise ConfigError("DynamoDBLockConditionalWrites needs a config or a DynamoDB client")
        if timeout_s <= 0 or max_clock_skew_rate < 1 or ttl_s < timeout_s * max_clock_skew_rate:
            raise ConfigError("need timeout_s > 0, max_clock_skew_rate >= 1 and ttl_s >= timeout_s * skew rate")
        self._store = store
        self._table = table
        self._config = config
        self._explicit_client = client
        self.timeout_s = timeout_s
        self.max_clock_skew_rate = max_clock_skew_rate
        self.ttl_s = ttl_s
        self.test_interval_s = test_interval_s
        self._clock = clock
        self._sleep = sleep
        self._wall_clock = wall_clock
        # Bounds the rounds of taking the lock and the time spent (see _write).
        self._retry = retry or (config.store_retry if config is not None else StoreRetryPolicy())

    @property
    def table(self) -> str:
        return self._table

    def ensure_infrastructure(self) -> None:
        """Creates the lock table if it is missing (idempotent)."""
        ensure_lock_table(self._client(), self._table)

    def create_if_absent(self, key: str, data: bytes) -> str:
        return self._write(key, data, None)

    def replace_if_match(self, key: str, data: bytes, etag: str) -> str:
        return self._write(key, data, normal_etag(etag))

    # -- the protocol ----------------------------------------------------------------------

    def _write(self, key: str, data: bytes, etag: str | None) -> str:
        self._check(key, etag)
        path = self._store.uri(key)
        sort_key = CREATE if etag is None else etag
        token = secrets.token_hex(16)
        seen: _Lease | None = None
        # Each round takes the lock or waits out its holder. Holders that keep dying (or a table
        # that misbehaves) must not keep us here for ever: the rounds are bounded by the store
        # retry policy, and the time by its budget plus one wait for a stale lease.
        deadline = self._clock() + self._retry.max_elapsed_s + self.timeout_s * self.max_clock_skew_rate
        for _ in range(self._retry.max_attempts):
            lease = self._try_lock(path, sort_key, token, seen)
            if lease is None:  # the record we meant to take over is gone: start afresh
                seen = None
                self._check(key, etag)
                continue
            if lease.owner != token:
                seen = self._wait(key, etag, lease, deadline)
                continue
            return self._write_locked(key, data, etag, path, sort_key, lease)
        raise LockHeldError(
            f"{self._store.uri(key)}: the DynamoDB lock {path} changed hands {self._retry.max_attempts} times "
            f"without becoming ours (last seen: {seen.owner if seen else 'none'}); try again later, or raise "
            "store_retry.max_attempts"
        )

    def _write_locked(self, key: str, data: bytes, etag: str | None, path: str, sort_key: str, lease: _Lease) -> str:
        try:
            self._check(key, etag)
        except (PathExistsError, PreconditionFailedError):
            self._release(path, sort_key, lease.owner)
            raise
        if self._clock() - lease.since >= lease.timeout_s:
            # Too slow to write safely before a waiter may take over; nothing was written.
            self._release(path, sort_key, lease.owner)
            raise StorageError(f"{self._store.uri(key)}: the lock was held for {lease.timeout_s:g}s before the write")
        try:
            new_etag = self._store.put(key, data)
        except Exception as error:
            # The record stays: waiters hold off until the PUT can no longer land.
            raise WriteOutcomeUnknownError(
                f"PUT of {self._store.uri(key)} under a DynamoDB lock failed and may have landed ({error})"
            ) from error
        late = self._clock() - lease.since >= lease.timeout_s
        self._release(path, sort_key, lease.owner)
        if late:
            raise WriteOutcomeUnknownError(
                f"PUT of {self._store.uri(key)} returned after the lock timeout of {lease.timeout_s:g}s; "
                "another writer may have taken the lock over and written too"
            )
        return new_etag

    def _check(self, key: str, etag: str | None) -> None:
        """Raises unless the condition holds now (one HEAD)."""
        info = self._store.head(key)
        if etag is None:
            if info is not None:
                raise PathExistsError(f"{self._store.uri(key)} exists already")
        elif info is None:
            raise PreconditionFailedError(f"{self._store.uri(key)} does not exist")
        elif normal_etag(info.etag) != etag:
            raise PreconditionFailedError(f"{self._store.uri(key)} changed since it was read")

    def _wait(self, key: str, etag: str | None, lease: _Lease, deadline: float) -> _Lease:
        """Polls until the condition fails (raised) or ``lease`` has gone stale (returned).

        :class:`LockHeldError` at ``deadline``, or after as many polls as fit before it.
        """
        stale_after = lease.timeout_s * self.max_clock_skew_rate
        polls = math.ceil(max(0.0, deadline - self._clock()) / max(self.test_interval_s, 1e-3)) + 1
        for _ in range(polls):
            self._sleep(self.test_interval_s)
            self._check(key, etag)
            if self._clock() - lease.since > stale_after:
                log.warning(
                    "taking over the lock of %s from %s after %.1fs", self._store.uri(key), lease.owner, stale_after
                )
                return lease
            if self._clock() >= deadline:
                break
        raise LockHeldError(
            f"{self._store.uri(key)}: the DynamoDB lock is still held by {lease.owner} (generation "
            f"{lease.generation}) and the condition still holds; try again later"
        )

    def _try_lock(self, path: str, sort_key: str, token: str, seen: _Lease | None) -> _Lease | None:
        """Our lease, the lease of whoever holds the record, or ``None`` if ``seen`` vanished."""
        generation = 0 if seen is None else seen.generation + 1
        record = LockRecordItem(
            path=path,
            etag=sort_key,
            generation=generation,
            timeout=round(self.timeout_s * 1000),
            ttl=int(self._wall_clock() + self.ttl_s),
            owner=token,
            holder=f"{socket.gethostname()}:{os.getpid()}",
        )
        names = {"#path": PATH}
        values: dict[str, Any] = {}
        condition = "attribute_not_exists(#path)"
        if seen is not None:
            # The owner too: records are deleted after use, so a generation alone can recur.
            condition = "attribute_exists(#path) AND #generation = :generation AND #owner = :owner"
            names.update({"#generation": GENERATION, "#owner": OWNER})
            values.update({":generation": attribute_value(seen.generation), ":owner": attribute_value(seen.owner)})
        request: dict[str, Any] = {
            "TableName": self._table,
            "Item": record.to_item(),
            "ConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if values:
            request["ExpressionAttributeValues"] = values
        since = self._clock()
        current: LockRecordItem | None
        try:
            self._client().put_item(**request)
            return _Lease(generation, token, self.timeout_s, since)
        except ClientError as error:
            if error_code(error) != CONFLICT:
                self._fail(f"locking {path}", error)
            old: Any = error.response.get("Item")
            # The record that failed our condition has our key, whether or not the answer repeats it.
            current = LockRecordItem.from_item({**_key(path, sort_key), **old}) if old else self._read(path, sort_key)
        except BotoCoreError as error:
            self._fail(f"locking {path}", error)
        if not current:
            return None
        record_since = since if current.owner == token else self._clock()  # ours: a retried request had landed
        timeout_s = current.timeout / 1000 or self.timeout_s
        return _Lease(current.generation, current.owner, timeout_s, record_since)

    def _read(self, path: str, sort_key: str) -> LockRecordItem | None:
        # Servers without ReturnValuesOnConditionCheckFailure: read the record ourselves.
        response = self._call(
            f"reading the lock of {path}",
            lambda: self._client().get_item(
                TableName=self._table, Key=_key(path, sort_key), ConsistentRead=True
            ),
        )
        item: Any = response.get("Item")
        return LockRecordItem.from_item({**_key(path, sort_key), **item}) if item else None

    def _release(self, path: str, sort_key: str, token: str) -> None:
        """Deletes our record; a failure only makes later writers wait for it to go stale."""
        try:
            self._client().delete_item(
                TableName=self._table,
                Key=_key(path, sort_key),
                ConditionExpression="#owner = :owner",
                ExpressionAttributeNames={"#owner": OWNER},
                ExpressionAttributeValues={":owner": attribute_value(token)},
            )
        except ClientError as error:
            if error_code(error) == CONFLICT:
                log.warning("the lock of %s was taken over before it was released", path)
            else:
                log.warning("could not release the lock of %s: %s", path, describe(error))
        except BotoCoreError as error:
            log.warning("could not release the lock of %s: %s", path, describe(error))

    # -- DynamoDB --------------------------------------------------------------------------

    def _client(self) -> DynamoDBClient:
        if self._explicit_client is not None:
            return self._explicit_client
        assert self._config is not None
        # Retrying is safe here: a lock record that carries our token is recognised as ours.
        return make_client("dynamodb", self._config)

    def _call(self, action: str, request: Callable[[], T]) -> T:
        try:
            return request()
        except (ClientError, BotoCoreError) as error:
            self._fail(action, error)

    def _fail(self, action: str, error: Exception) -> NoReturn:
        code = error_code(error) if isinstance(error, ClientError) else ""
        if code == "ResourceNotFoundException":
            raise ConfigError(
                f"{action}: the DynamoDB lock table {self._table!r} does not exist; create it with "
                "`sleeper-spark init` (or Catalog.ensure_infrastructure() in Python)"
            ) from error
        if code in ("AccessDeniedException", "UnrecognizedClientException"):
            raise ConfigError(
                f"{action}: access to DynamoDB table {self._table!r} denied ({describe(error)})"
            ) from error
        raise StorageError(f"{action} in DynamoDB table {self._table!r} failed ({describe(error)})") from error

    def __getstate__(self) -> dict[str, Any]:
        if self._explicit_client is not None:
            raise TypeError("a DynamoDBLockConditionalWrites built with a client cannot be pickled; pass config")
        return self.__dict__.copy()

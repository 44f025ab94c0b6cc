"""S3 (and S3-compatible servers) as an object store: ``s3://bucket/prefix``.

Conditional writes are S3's own: create-if-absent is a PUT with ``If-None-Match: *`` and
replace-if-match a PUT with ``If-Match: <etag>``; the server lets exactly one of racing writers
in. How their answers are read:

* 412 Precondition Failed: the condition did not hold. A replace-if-match of a missing key is
  answered 412 by some servers (SeaweedFS) and 404 by AWS; both mean the same.
* 409 ConditionalRequestConflict: another conditional write of the key was in flight and ours
  did not land. It is no answer to "who won", so the PUT is tried again, briefly, and the
  server's next answer (success or 412) decides. Calling a 409 a loss could leave a key with
  no winner at all when the other writer fails too.
* A timeout, a dropped connection or a 5xx may hide a PUT that landed. These writes therefore
  run on a client without automatic retries and retry themselves: a 412 after such a failure
  may be our own earlier attempt, so the object is read back, and if it holds our bytes the
  write succeeded. Bodies of racing writers differ (log entries carry unique ids, data files
  unique names), so equal bytes mean our write. If the outcome cannot be learnt:
  :class:`WriteOutcomeUnknownError`.

The object is held in no client: the store keeps only its config (it is pickled into Spark
executors) and takes a cached client per call from :mod:`sleeper_spark.storage.aws`.
"""

from __future__ import annotations

import builtins
import io
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from typing import IO, TYPE_CHECKING, Any, BinaryIO, NoReturn

import pyarrow as pa
from botocore.exceptions import BotoCoreError, ClientError

from sleeper_spark.config import CatalogConfig, resolve_warehouse
from sleeper_spark.errors import (
    ConfigError,
    PathExistsError,
    PreconditionFailedError,
    StorageError,
    WriteOutcomeUnknownError,
)
from sleeper_spark.storage.arrow_buffers import arrow_reader
from sleeper_spark.storage.aws import describe, error_code, failure_kind, http_status, make_client
from sleeper_spark.storage.base import SPOOL_IN_MEMORY_BYTES, NewObject, ObjectInfo, ObjectStore, SpooledNewObject
from sleeper_spark.storage.retry import StoreRetries

if TYPE_CHECKING:
    from mypy_boto3_s3.client import S3Client

DELETE_BATCH = 1000  # DeleteObjects takes at most 1000 keys
MAX_SINGLE_PUT_BYTES = 5 * 2**30  # S3's limit for one PUT
_COMPARE_CHUNK = 2**20

_Body = bytes | IO[bytes]


def parse_s3_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/some/prefix`` (or ``s3a://``, ``s3n://``) -> ``("bucket", "some/prefix")``."""
    return resolve_warehouse(uri).bucket_and_prefix


class S3ObjectStore(ObjectStore):
    """``sleep`` waits between the attempts of a conditional PUT (injectable for tests)."""

    def __init__(self, uri: str, config: CatalogConfig, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self._bucket, self._prefix = parse_s3_uri(uri)
        self._config = config
        self._sleep = sleep

    @property
    def root_uri(self) -> str:
        return f"s3://{self._bucket}/{self._prefix}" if self._prefix else f"s3://{self._bucket}"

    @property
    def bucket(self) -> str:
        return self._bucket

    def _client(self, *, retries: bool = True) -> S3Client:
        return make_client("s3", self._config, retries=retries)

    def _full(self, key: str) -> str:
        return f"{self._prefix}/{key}" if self._prefix else key

    def _fail(self, operation: str, key: str, error: Exception) -> NoReturn:
        if isinstance(error, ClientError) and error_code(error) == "NoSuchBucket":
            raise StorageError(
                f"S3 {operation} of {self.uri(key)} failed: bucket {self._bucket!r} does not exist"
            ) from error
        raise StorageError(f"S3 {operation} of {self.uri(key)} failed ({describe(error)})") from error

    # -- reads ---------------------------------------------------------------------------

    def get(self, key: str) -> bytes:
        try:
            response = self._client().get_object(Bucket=self._bucket, Key=self._full(key))
            return response["Body"].read()
        except ClientError as error:
            if _is_missing(error):
                raise FileNotFoundError(key) from None
            self._fail("GET", key, error)
        except BotoCoreError as error:
            self._fail("GET", key, error)

    def head(self, key: str) -> ObjectInfo | None:
        try:
            response = self._client().head_object(Bucket=self._bucket, Key=self._full(key))
        except ClientError as error:
            if _is_missing(error):
                return None
            self._fail("HEAD", key, error)
        except BotoCoreError as error:
            self._fail("HEAD", key, error)
        return ObjectInfo(key, response["ContentLength"], response["LastModified"], response["ETag"])

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        """Every object under ``prefix``, in key order.

        Some S3-compatible servers list folder by folder rather than in key order (SeaweedFS
        puts ``a/b`` before ``a-c``), so the listing is collected and sorted. Listing is
        never on the hot path; a table's keys fit in memory.
        """
        root = f"{self._prefix}/" if self._prefix else ""
        found: builtins.list[ObjectInfo] = []
        try:
            pages = self._client().get_paginator("list_objects_v2")
            for page in pages.paginate(Bucket=self._bucket, Prefix=root + prefix):
                for item in page.get("Contents", []):
                    key = item["Key"][len(root):]
                    found.append(ObjectInfo(key, item["Size"], item["LastModified"], item["ETag"]))
        except (ClientError, BotoCoreError) as error:
            self._fail("LIST", prefix + "*", error)
        yield from sorted(found, key=lambda info: info.key)

    def open_input(self, key: str) -> pa.NativeFile:
        return arrow_reader(self.get(key))

    def check_bucket(self) -> None:
        """:class:`ConfigError` unless the bucket exists and can be reached."""
        try:
            self._client().head_bucket(Bucket=self._bucket)
        except ClientError as error:
            status = http_status(error)
            if status == 404 or error_code(error) in ("NoSuchBucket", "404"):
                raise ConfigError(
                    f"bucket {self._bucket!r} does not exist; create it first "
                    f"(for example: aws s3 mb s3://{self._bucket})"
                ) from None
            if status == 403:
                raise ConfigError(
                    f"access to bucket {self._bucket!r} was denied; check the credentials and the "
                    "bucket policy"
                ) from None
            self._fail("HEAD bucket", "", error)
        except BotoCoreError as error:
            self._fail("HEAD bucket", "", error)

    # -- writes --------------------------------------------------------------------------

    def put(self, key: str, data: bytes) -> str:
        try:
            response = self._client().put_object(Bucket=self._bucket, Key=self._full(key), Body=data)
        except (ClientError, BotoCoreError) as error:
            self._fail("PUT", key, error)
        return response["ETag"]

    def create_if_absent(self, key: str, data: bytes) -> str:
        return self._conditional_put(key, lambda: data, etag=None)

    def replace_if_match(self, key: str, data: bytes, etag: str) -> str:
        return self._conditional_put(key, lambda: data, etag=_quoted(etag))

    def delete(self, key: str) -> None:
        try:
            self._client().delete_object(Bucket=self._bucket, Key=self._full(key))
        except ClientError as error:
            if not _is_missing(error):
                self._fail("DELETE", key, error)
        except BotoCoreError as error:
            self._fail("DELETE", key, error)

    def delete_many(self, keys: builtins.list[str]) -> None:
        for start in range(0, len(keys), DELETE_BATCH):
            batch = keys[start:start + DELETE_BATCH]
            objects: Any = [{"Key": self._full(key)} for key in batch]
            try:
                response = self._client().delete_objects(
                    Bucket=self._bucket, Delete={"Objects": objects, "Quiet": True}
                )
            except (ClientError, BotoCoreError) as error:
                self._fail("DELETE (batch)", batch[0], error)
            errors = [e for e in response.get("Errors", []) if e.get("Code") != "NoSuchKey"]
            if errors:
                first = errors[0]
                raise StorageError(
                    f"S3 DELETE (batch) could not delete {len(errors)} object(s) under {self.root_uri}, "
                    f"e.g. {first.get('Key')!r}: {first.get('Code')}: {first.get('Message')}"
                )

    def new_object(self, key: str) -> NewObject:
        """Spooled in memory (then in a temporary file), published with create-if-absent."""
        return SpooledNewObject(self.uri(key), lambda spool: self._publish_spool(key, spool), SPOOL_IN_MEMORY_BYTES)

    def _publish_spool(self, key: str, spool: BinaryIO) -> None:
        size = spool.seek(0, 2)
        if size > MAX_SINGLE_PUT_BYTES:
            raise StorageError(
                f"{self.uri(key)} is {size} bytes; one S3 PUT takes at most 5 GiB: write smaller files"
            )
        self._conditional_put(key, lambda: spool, etag=None)

    # -- conditional PUT -----------------------------------------------------------------

    def _conditional_put(self, key: str, body: Callable[[], _Body], etag: str | None) -> str:
        """One conditional PUT, retried by hand (see the module doc); returns the new etag."""
        client = self._client(retries=False)
        retries = StoreRetries(self._config.store_retry, f"S3 conditional PUT of {self.uri(key)}", sleep=self._sleep)
        for attempt in retries:
            with attempt:
                try:
                    full, data = self._full(key), _rewound(body())
                    if etag is None:
                        response = client.put_object(Bucket=self._bucket, Key=full, Body=data, IfNoneMatch="*")
                    else:
                        response = client.put_object(Bucket=self._bucket, Key=full, Body=data, IfMatch=etag)
                    return response["ETag"]
                except (ClientError, BotoCoreError) as error:
                    if isinstance(error, ClientError) and _condition_failed(error, etag):
                        # After an attempt that may have landed, the object we lost to may be ours.
                        ours = self._holds(key, body) if retries.maybe_applied else None
                        if ours is not None:
                            return ours
                        self._lost(key, etag)
                    retries.failed(error, failure_kind(error))
                    self._fail("conditional PUT", key, error)
        return self._after_retries(key, body, etag, retries)

    def _after_retries(self, key: str, body: Callable[[], _Body], etag: str | None, retries: StoreRetries) -> str:
        """Every attempt failed without an answer: one look at the object decides, if it can."""
        maybe_applied, last = retries.maybe_applied, retries.last
        try:
            current = self.head(key)
            ours = self._holds(key, body) if maybe_applied and current is not None else None
        except StorageError:
            raise WriteOutcomeUnknownError(
                f"S3 conditional PUT of {self.uri(key)}: no answer after {retries.attempts} attempts "
                f"({describe(last)}), and the object cannot be read to learn whether it landed"
            ) from last
        if ours is not None:
            return ours
        # A delayed copy of our PUT can still land only while its condition still holds.
        still_possible = (current is None) if etag is None else (current is not None and current.etag == etag)
        if maybe_applied and still_possible:
            raise WriteOutcomeUnknownError(
                f"S3 conditional PUT of {self.uri(key)}: no answer after {retries.attempts} attempts "
                f"({describe(last)}); it may still land"
            ) from last
        if not still_possible:
            self._lost(key, etag)
        self._fail(f"conditional PUT (after {retries.attempts} attempts)", key, last)

    def _holds(self, key: str, body: Callable[[], _Body]) -> str | None:
        """The object's etag if it holds exactly ``body``'s bytes, else ``None``."""
        try:
            response = self._client().get_object(Bucket=self._bucket, Key=self._full(key))
        except ClientError as error:
            if _is_missing(error):
                return None
            self._fail("GET", key, error)
        except BotoCoreError as error:
            self._fail("GET", key, error)
        expected = _rewound(body())
        mine = io.BytesIO(expected) if isinstance(expected, bytes) else expected
        with closing(response["Body"]) as theirs:
            while True:
                chunk = theirs.read(_COMPARE_CHUNK)
                # At the end, one more byte of ours would mean that theirs is shorter.
                if mine.read(len(chunk) if chunk else 1) != chunk:
                    return None
                if not chunk:
                    return response["ETag"]

    def _lost(self, key: str, etag: str | None) -> NoReturn:
        if etag is None:
            raise PathExistsError(f"{self.uri(key)} exists already")
        raise PreconditionFailedError(f"{self.uri(key)} changed since it was read, or is gone")


def _rewound(body: _Body) -> _Body:
    if not isinstance(body, bytes):
        body.seek(0)
    return body


def _quoted(etag: str) -> str:
    # S3 answers etags in quotes; accept one without them too.
    return etag if etag.startswith(('"', "W/")) else f'"{etag}"'


def _is_missing(error: ClientError) -> bool:
    return http_status(error) == 404 and error_code(error) != "NoSuchBucket"


def _condition_failed(error: ClientError, etag: str | None) -> bool:
    if http_status(error) == 412 or error_code(error) == "PreconditionFailed":
        return True
    # AWS answers a replace-if-match of a missing key with 404.
    return etag is not None and _is_missing(error)

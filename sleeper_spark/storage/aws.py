"""The one place boto3 clients are built, and how their failures are classified.

Clients are cached per (service, endpoint, region, retry mode) at module level: a Spark worker
process is reused across tasks, so it builds each client once, while the objects that Spark
pickles (stores, readers, writers) keep only a :class:`CatalogConfig` and ask here for a client
on every call. The cache is emptied in a forked child, whose inherited connection pools would
share sockets with the parent.

Settings: the region comes from the config, else from the environment or profile, else
``us-east-1``; credentials come from boto3's standard chain and are never logged or put in an
error message; a custom endpoint (moto, LocalStack, SeaweedFS, MinIO) gets path-style S3
addressing and checksums only where the operation requires them, which every S3-compatible
server understands.

Two retry modes. ``retries=True`` is botocore's ``standard`` mode, right for reads and for
writes that may be repeated blindly. A conditional write must not be retried blindly: if the
first attempt landed but its answer was lost, the retry is refused by the condition and the
writer would wrongly conclude that someone else won. Those writes use ``retries=False`` and
run their own loop (:class:`~sleeper_spark.storage.retry.StoreRetries`, under the catalog's
``store_retry`` policy), with :func:`failure_kind`, which tells whether a failed attempt may
still have taken effect.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, overload

import boto3
from botocore.config import Config
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    HTTPClientError,
    ProxyConnectionError,
    ReadTimeoutError,
)
from botocore.exceptions import ConnectionError as BotoConnectionError

from sleeper_spark.config import CatalogConfig
from sleeper_spark.process_state import AWS_CLIENTS
from sleeper_spark.storage.retry import FailureKind

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient
    from mypy_boto3_s3.client import S3Client

Service = Literal["s3", "dynamodb"]

DEFAULT_REGION = "us-east-1"
CONNECT_TIMEOUT_S = 10
READ_TIMEOUT_S = 30
MAX_POOL_CONNECTIONS = 32

THROTTLING_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "Throttling",
        "RequestLimitExceeded",
        "SlowDown",
        "TooManyRequestsException",
        "RequestThrottled",
        "RequestThrottledException",
    }
)

@overload
def make_client(service: Literal["s3"], config: CatalogConfig, *, retries: bool = True) -> S3Client: ...


@overload
def make_client(
    service: Literal["dynamodb"], config: CatalogConfig, *, retries: bool = True
) -> DynamoDBClient: ...


def make_client(service: Service, config: CatalogConfig, *, retries: bool = True) -> Any:
    """A cached client for ``service`` as ``config`` describes it (see the module doc)."""
    endpoint = config.s3_endpoint if service == "s3" else config.dynamodb_endpoint
    key = (service, endpoint, config.region, retries)
    return AWS_CLIENTS.get_or_create(key, lambda: _build(service, endpoint, config.region, retries))


def _build(service: Service, endpoint: str | None, region: str | None, retries: bool) -> Any:
    # A session per client: boto3's default session is shared state and not safe to build
    # clients from in several threads at once.
    session = boto3.session.Session()
    resolved_region = region or session.region_name or DEFAULT_REGION
    options: dict[str, Any] = {
        "region_name": resolved_region,
        "connect_timeout": CONNECT_TIMEOUT_S,
        "read_timeout": READ_TIMEOUT_S,
        "max_pool_connections": MAX_POOL_CONNECTIONS,
        "retries": {"mode": "standard"} if retries else {"mode": "standard", "total_max_attempts": 1},
        "user_agent_extra": "sleeper-spark",
    }
    if service == "s3" and endpoint:
        # Virtual-host addressing needs DNS for every bucket, which local and self-hosted
        # servers do not have; and not all of them accept checksums on every request.
        options["s3"] = {"addressing_style": "path"}
        options["request_checksum_calculation"] = "when_required"
        options["response_checksum_validation"] = "when_required"
    return session.client(service, endpoint_url=endpoint, config=Config(**options))


def clear_client_cache() -> None:
    """Forgets every cached client (tests that change credentials or endpoints)."""
    AWS_CLIENTS.clear()


# -- classifying failures ----------------------------------------------------------------


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def error_message(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Message", "")) or "no message"


def http_status(error: ClientError) -> int:
    return int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))


def failure_kind(error: Exception) -> FailureKind | None:
    """How a failed call may be retried; ``None`` for a failure no retry will fix."""
    if isinstance(error, ClientError):
        code = error_code(error)
        status = http_status(error)
        if code in THROTTLING_CODES or status == 429:
            return FailureKind.THROTTLED
        if code in ("ConditionalRequestConflict", "TransactionConflictException"):
            # S3's 409: a concurrent conditional write of the key was in flight; ours did not land.
            return FailureKind.NOT_APPLIED
        if status >= 500 or code in ("InternalError", "InternalServerError", "ServiceUnavailable"):
            # A server error says nothing about whether the write was applied.
            return FailureKind.MAYBE_APPLIED
        return None
    if isinstance(error, (ConnectTimeoutError, EndpointConnectionError, ProxyConnectionError)):
        return FailureKind.NOT_APPLIED  # no connection, so the request was never sent
    if isinstance(error, (ReadTimeoutError, ConnectionClosedError, HTTPClientError, BotoConnectionError)):
        # Sent (or possibly sent: an SSL error can strike mid-exchange), but the answer was lost.
        return FailureKind.MAYBE_APPLIED
    return None


def describe(error: Exception) -> str:
    """A message for an error from botocore, without credentials or request signatures."""
    if isinstance(error, ClientError):
        # Only the code and message: other fields of an error response can carry the access key id.
        return f"{error_code(error) or http_status(error)}: {error_message(error)}"
    # botocore's own messages name the endpoint or the missing setting, never secrets.
    return f"{type(error).__name__}: {error}"

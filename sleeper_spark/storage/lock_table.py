"""The DynamoDB table of the ``dynamodb-lock`` strategy, and how it is created.

Key schema: partition key ``path`` (S), sort key ``etag`` (S); TTL on ``ttl``; on-demand
billing. :func:`ensure_lock_table` is idempotent and safe from many processes at once: an
existing table is only checked, losing a creation race to another process is fine, and TTL is
turned on only where it is off.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, NoReturn

from botocore.exceptions import BotoCoreError, ClientError, WaiterError

from sleeper_spark.errors import ConfigError, StorageError
from sleeper_spark.storage.aws import describe, error_code

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

log = logging.getLogger(__name__)

KEYS = (("path", "S", "HASH"), ("etag", "S", "RANGE"))
TTL_ATTRIBUTE = "ttl"
WAIT_DELAY_S = 1
WAIT_ATTEMPTS = 300


def ensure_lock_table(client: DynamoDBClient, name: str) -> None:
    """Creates the lock table ``name`` if it is missing, waits until it is ACTIVE, turns TTL on."""
    try:
        table = client.describe_table(TableName=name)["Table"]
    except ClientError as error:
        if error_code(error) != "ResourceNotFoundException":
            _fail(f"describing DynamoDB lock table {name!r}", error)
        _create(client, name)
        table = _wait_until_active(client, name)
    except BotoCoreError as error:
        _fail(f"describing DynamoDB lock table {name!r}", error)
    if table.get("TableStatus") != "ACTIVE":
        table = _wait_until_active(client, name)
    _check_keys(name, table)
    _ensure_ttl(client, name)


def _create(client: DynamoDBClient, name: str) -> None:
    definitions: Any = [{"AttributeName": attr, "AttributeType": kind} for attr, kind, _ in KEYS]
    schema: Any = [{"AttributeName": attr, "KeyType": key_type} for attr, _, key_type in KEYS]
    try:
        client.create_table(
            TableName=name, AttributeDefinitions=definitions, KeySchema=schema, BillingMode="PAY_PER_REQUEST"
        )
        log.info("created DynamoDB lock table %s", name)
    except ClientError as error:
        if error_code(error) != "ResourceInUseException":  # another process created it just now
            _fail(f"creating DynamoDB lock table {name!r}", error)
    except BotoCoreError as error:
        _fail(f"creating DynamoDB lock table {name!r}", error)


def _wait_until_active(client: DynamoDBClient, name: str) -> Any:
    try:
        client.get_waiter("table_exists").wait(
            TableName=name, WaiterConfig={"Delay": WAIT_DELAY_S, "MaxAttempts": WAIT_ATTEMPTS}
        )
        return client.describe_table(TableName=name)["Table"]
    except WaiterError as error:
        raise StorageError(f"DynamoDB lock table {name!r} did not become ACTIVE: {error}") from error
    except (ClientError, BotoCoreError) as error:
        _fail(f"describing DynamoDB lock table {name!r}", error)


def _check_keys(name: str, table: Any) -> None:
    types = {d["AttributeName"]: d["AttributeType"] for d in table.get("AttributeDefinitions", [])}
    found = sorted((k["AttributeName"], types.get(k["AttributeName"], "?"), k["KeyType"]) for k in table["KeySchema"])
    if found != sorted(KEYS):
        raise ConfigError(
            f"DynamoDB table {name!r} exists with another key schema than a lock table needs "
            "(path (S, HASH), etag (S, RANGE)); choose another lock_table"
        )


def _ensure_ttl(client: DynamoDBClient, name: str) -> None:
    if _ttl_on(client, name):
        return
    try:
        client.update_time_to_live(
            TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE}
        )
        log.info("enabled TTL on %s.%s", name, TTL_ATTRIBUTE)
    except ClientError as error:
        # "already enabled", or another process turning it on at the same moment.
        if error_code(error) != "ValidationException" or not _ttl_on(client, name):
            _fail(f"enabling TTL on DynamoDB lock table {name!r}", error)
    except BotoCoreError as error:
        _fail(f"enabling TTL on DynamoDB lock table {name!r}", error)


def _ttl_on(client: DynamoDBClient, name: str) -> bool:
    try:
        ttl = client.describe_time_to_live(TableName=name).get("TimeToLiveDescription", {})
    except (ClientError, BotoCoreError) as error:
        _fail(f"describing TTL of DynamoDB lock table {name!r}", error)
    if ttl.get("TimeToLiveStatus") in ("ENABLED", "ENABLING"):
        if ttl.get("AttributeName") != TTL_ATTRIBUTE:
            log.warning("DynamoDB lock table %s has TTL on %s, not %s; leaving it", name, ttl.get("AttributeName"),
                        TTL_ATTRIBUTE)
        return True
    return False


def _fail(action: str, error: Exception) -> NoReturn:
    if isinstance(error, ClientError) and error_code(error) in ("AccessDeniedException", "UnrecognizedClientException"):
        raise ConfigError(
            f"{action}: access denied ({describe(error)}); check the credentials and the IAM policy"
        ) from error
    raise StorageError(f"{action} failed ({describe(error)})") from error

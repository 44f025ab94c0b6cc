"""The two DynamoDB tables of the AWS backend, and how they are created.

* transactions: hash key ``table_id`` (S), range key ``number`` (N); TTL on ``expires_at``.
* snapshots: hash key ``table_id`` (S) only; state pointers and catalog entries.

:func:`ensure_tables` is idempotent and safe to run from many processes at once: a table that
exists is only checked, a creation that loses a race to another creator is fine, and TTL is
turned on only where it is not on already. Both tables are on-demand (``PAY_PER_REQUEST``).
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

TABLE_ID = "table_id"
NUMBER = "number"
EXPIRES_AT = "expires_at"

# (attribute, type, key type) of each table's key schema.
TRANSACTIONS_KEYS = ((TABLE_ID, "S", "HASH"), (NUMBER, "N", "RANGE"))
SNAPSHOTS_KEYS = ((TABLE_ID, "S", "HASH"),)
_KeySchema = tuple[tuple[str, str, str], ...]

WAIT_DELAY_S = 1
WAIT_ATTEMPTS = 300  # five minutes: creating an on-demand table takes seconds


def ensure_tables(client: DynamoDBClient, transactions_table: str, snapshots_table: str) -> None:
    """Creates both tables if missing, waits until they are ACTIVE, and turns TTL on."""
    _ensure_table(client, transactions_table, TRANSACTIONS_KEYS)
    _ensure_table(client, snapshots_table, SNAPSHOTS_KEYS)
    _ensure_ttl(client, transactions_table, EXPIRES_AT)


def _ensure_table(client: DynamoDBClient, name: str, keys: _KeySchema) -> None:
    try:
        table = client.describe_table(TableName=name)["Table"]
    except ClientError as error:
        if error_code(error) != "ResourceNotFoundException":
            _fail(f"describing DynamoDB table {name!r}", error)
        _create(client, name, keys)
        table = _wait_until_active(client, name)
    except BotoCoreError as error:
        _fail(f"describing DynamoDB table {name!r}", error)
    if table.get("TableStatus") != "ACTIVE":
        table = _wait_until_active(client, name)
    _check_keys(name, table, keys)


def _create(client: DynamoDBClient, name: str, keys: _KeySchema) -> None:
    definitions: Any = [{"AttributeName": attr, "AttributeType": kind} for attr, kind, _ in keys]
    schema: Any = [{"AttributeName": attr, "KeyType": key_type} for attr, _, key_type in keys]
    try:
        client.create_table(
            TableName=name, AttributeDefinitions=definitions, KeySchema=schema, BillingMode="PAY_PER_REQUEST"
        )
        log.info("created DynamoDB table %s", name)
    except ClientError as error:
        # Another process created it between our describe and our create: that is fine.
        if error_code(error) != "ResourceInUseException":
            _fail(f"creating DynamoDB table {name!r}", error)
    except BotoCoreError as error:
        _fail(f"creating DynamoDB table {name!r}", error)


def _wait_until_active(client: DynamoDBClient, name: str) -> Any:
    try:
        client.get_waiter("table_exists").wait(
            TableName=name, WaiterConfig={"Delay": WAIT_DELAY_S, "MaxAttempts": WAIT_ATTEMPTS}
        )
        return client.describe_table(TableName=name)["Table"]
    except WaiterError as error:
        raise StorageError(f"DynamoDB table {name!r} did not become ACTIVE: {error}") from error
    except (ClientError, BotoCoreError) as error:
        _fail(f"describing DynamoDB table {name!r}", error)


def _check_keys(name: str, table: Any, keys: _KeySchema) -> None:
    types = {d["AttributeName"]: d["AttributeType"] for d in table.get("AttributeDefinitions", [])}
    found = tuple(
        (key["AttributeName"], types.get(key["AttributeName"], "?"), key["KeyType"])
        for key in table["KeySchema"]
    )
    if sorted(found) != sorted(keys):
        expected = ", ".join(f"{attr} ({kind}, {key_type})" for attr, kind, key_type in keys)
        raise ConfigError(
            f"DynamoDB table {name!r} exists with another key schema than this catalog needs "
            f"({expected}); choose another table name"
        )


def _ensure_ttl(client: DynamoDBClient, name: str, attribute: str) -> None:
    if _ttl_on(client, name, attribute):
        return
    try:
        client.update_time_to_live(
            TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": attribute}
        )
        log.info("enabled TTL on %s.%s", name, attribute)
    except ClientError as error:
        # "already enabled", or a concurrent process changing it: fine if it is on now.
        if error_code(error) != "ValidationException" or not _ttl_on(client, name, attribute):
            _fail(f"enabling TTL on DynamoDB table {name!r}", error)
    except BotoCoreError as error:
        _fail(f"enabling TTL on DynamoDB table {name!r}", error)


def _ttl_on(client: DynamoDBClient, name: str, attribute: str) -> bool:
    try:
        ttl = client.describe_time_to_live(TableName=name).get("TimeToLiveDescription", {})
    except (ClientError, BotoCoreError) as error:
        _fail(f"describing TTL of DynamoDB table {name!r}", error)
    status = ttl.get("TimeToLiveStatus")
    if status in ("ENABLED", "ENABLING"):
        if ttl.get("AttributeName") != attribute:
            current = ttl.get("AttributeName")
            log.warning("DynamoDB table %s has TTL on %s, not %s; leaving it", name, current, attribute)
        return True
    return False


def _fail(action: str, error: Exception) -> NoReturn:
    if isinstance(error, ClientError) and error_code(error) in (
        "AccessDeniedException",
        "UnrecognizedClientException",
    ):
        raise ConfigError(
            f"{action}: access denied ({describe(error)}); check the credentials and the IAM policy"
        ) from error
    raise StorageError(f"{action} failed ({describe(error)})") from error

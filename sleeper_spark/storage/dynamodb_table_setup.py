"""Creating a DynamoDB table this package needs, or checking the one that is there.

:func:`ensure_dynamodb_table` serves every table of the package (the lock table of the
``dynamodb-lock`` strategy, the AWS backend's transactions and snapshots tables). It is
idempotent and safe to run from many processes at once: a table that exists is only checked,
a creation that loses a race to another creator is fine, and TTL is turned on only where it is
not on already. Tables are created on-demand (``PAY_PER_REQUEST``).
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

# (attribute, type, key type) of each attribute of a table's key schema.
KeySchema = tuple[tuple[str, str, str], ...]

WAIT_DELAY_S = 1
WAIT_ATTEMPTS = 300  # five minutes: creating an on-demand table takes seconds


def ensure_dynamodb_table(
    client: DynamoDBClient, name: str, keys: KeySchema, *, purpose: str, ttl_attribute: str | None = None
) -> None:
    """Creates table ``name`` with ``keys`` if it is missing, waits until it is ACTIVE, checks its keys.

    ``purpose`` names the table's role in messages (``"lock table"``); with ``ttl_attribute``,
    TTL is turned on for that attribute.
    """
    table = _Table(client, name, purpose)
    table.ensure(keys)
    if ttl_attribute is not None:
        table.ensure_ttl(ttl_attribute)


class _Table:
    def __init__(self, client: DynamoDBClient, name: str, purpose: str) -> None:
        self._client = client
        self._name = name
        self._purpose = purpose
        self._what = f"DynamoDB {purpose} {name!r}"

    def ensure(self, keys: KeySchema) -> None:
        try:
            table = self._client.describe_table(TableName=self._name)["Table"]
        except ClientError as error:
            if error_code(error) != "ResourceNotFoundException":
                self._fail(f"describing {self._what}", error)
            self._create(keys)
            table = self._wait_until_active()
        except BotoCoreError as error:
            self._fail(f"describing {self._what}", error)
        if table.get("TableStatus") != "ACTIVE":
            table = self._wait_until_active()
        self._check_keys(table, keys)

    def _create(self, keys: KeySchema) -> None:
        definitions: Any = [{"AttributeName": attr, "AttributeType": kind} for attr, kind, _ in keys]
        schema: Any = [{"AttributeName": attr, "KeyType": key_type} for attr, _, key_type in keys]
        try:
            self._client.create_table(
                TableName=self._name,
                AttributeDefinitions=definitions,
                KeySchema=schema,
                BillingMode="PAY_PER_REQUEST",
            )
            log.info("created DynamoDB %s %s", self._purpose, self._name)
        except ClientError as error:
            # Another process created it between our describe and our create: that is fine.
            if error_code(error) != "ResourceInUseException":
                self._fail(f"creating {self._what}", error)
        except BotoCoreError as error:
            self._fail(f"creating {self._what}", error)

    def _wait_until_active(self) -> Any:
        try:
            self._client.get_waiter("table_exists").wait(
                TableName=self._name, WaiterConfig={"Delay": WAIT_DELAY_S, "MaxAttempts": WAIT_ATTEMPTS}
            )
            return self._client.describe_table(TableName=self._name)["Table"]
        except WaiterError as error:
            raise StorageError(f"{self._what} did not become ACTIVE: {error}") from error
        except (ClientError, BotoCoreError) as error:
            self._fail(f"describing {self._what}", error)

    def _check_keys(self, table: Any, keys: KeySchema) -> None:
        types = {d["AttributeName"]: d["AttributeType"] for d in table.get("AttributeDefinitions", [])}
        found = tuple(
            (key["AttributeName"], types.get(key["AttributeName"], "?"), key["KeyType"])
            for key in table["KeySchema"]
        )
        if sorted(found) != sorted(keys):
            expected = ", ".join(f"{attr} ({kind}, {key_type})" for attr, kind, key_type in keys)
            raise ConfigError(
                f"DynamoDB table {self._name!r} exists with another key schema than a {self._purpose} "
                f"needs ({expected}); choose another {self._purpose} name"
            )

    def ensure_ttl(self, attribute: str) -> None:
        if self._ttl_on(attribute):
            return
        try:
            self._client.update_time_to_live(
                TableName=self._name, TimeToLiveSpecification={"Enabled": True, "AttributeName": attribute}
            )
            log.info("enabled TTL on %s.%s", self._name, attribute)
        except ClientError as error:
            # "already enabled", or a concurrent process changing it: fine if it is on now.
            if error_code(error) != "ValidationException" or not self._ttl_on(attribute):
                self._fail(f"enabling TTL on {self._what}", error)
        except BotoCoreError as error:
            self._fail(f"enabling TTL on {self._what}", error)

    def _ttl_on(self, attribute: str) -> bool:
        try:
            ttl = self._client.describe_time_to_live(TableName=self._name).get("TimeToLiveDescription", {})
        except (ClientError, BotoCoreError) as error:
            self._fail(f"describing TTL of {self._what}", error)
        if ttl.get("TimeToLiveStatus") in ("ENABLED", "ENABLING"):
            current = ttl.get("AttributeName")
            if current != attribute:
                log.warning("%s has TTL on %s, not %s; leaving it", self._what, current, attribute)
            return True
        return False

    @staticmethod
    def _fail(action: str, error: Exception) -> NoReturn:
        if isinstance(error, ClientError) and error_code(error) in (
            "AccessDeniedException",
            "UnrecognizedClientException",
        ):
            raise ConfigError(
                f"{action}: access denied ({describe(error)}); check the credentials and the IAM policy"
            ) from error
        raise StorageError(f"{action} failed ({describe(error)})") from error

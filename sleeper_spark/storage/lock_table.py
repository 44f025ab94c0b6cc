"""The DynamoDB table of the ``dynamodb-lock`` strategy, and how it is created.

Key schema: partition key ``path`` (S), sort key ``etag`` (S); TTL on ``ttl``; on-demand
billing. :func:`ensure_lock_table` is idempotent and safe from many processes at once (see
:mod:`sleeper_spark.storage.dynamodb_table_setup`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sleeper_spark.storage.dynamodb_table_setup import ensure_dynamodb_table

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

KEYS = (("path", "S", "HASH"), ("etag", "S", "RANGE"))
TTL_ATTRIBUTE = "ttl"


def ensure_lock_table(client: DynamoDBClient, name: str) -> None:
    """Creates the lock table ``name`` if it is missing, waits until it is ACTIVE, turns TTL on."""
    ensure_dynamodb_table(client, name, KEYS, purpose="lock table", ttl_attribute=TTL_ATTRIBUTE)

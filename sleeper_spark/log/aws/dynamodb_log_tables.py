"""The two DynamoDB tables of the AWS backend, and how they are created.

* transactions: hash key ``table_id`` (S), range key ``number`` (N); TTL on ``expires_at``.
* snapshots: hash key ``table_id`` (S) only; state pointers and catalog entries.

:func:`ensure_tables` is idempotent and safe to run from many processes at once (see
:mod:`sleeper_spark.storage.dynamodb_table_setup`). Both tables are on-demand (``PAY_PER_REQUEST``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sleeper_spark.storage.dynamodb_table_setup import ensure_dynamodb_table

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

TABLE_ID = "table_id"
NUMBER = "number"
EXPIRES_AT = "expires_at"

# (attribute, type, key type) of each table's key schema.
TRANSACTIONS_KEYS = ((TABLE_ID, "S", "HASH"), (NUMBER, "N", "RANGE"))
SNAPSHOTS_KEYS = ((TABLE_ID, "S", "HASH"),)


def ensure_tables(client: DynamoDBClient, transactions_table: str, snapshots_table: str) -> None:
    """Creates both tables if missing, waits until they are ACTIVE, and turns TTL on."""
    ensure_dynamodb_table(
        client, transactions_table, TRANSACTIONS_KEYS, purpose="transactions table", ttl_attribute=EXPIRES_AT
    )
    ensure_dynamodb_table(client, snapshots_table, SNAPSHOTS_KEYS, purpose="snapshots table")

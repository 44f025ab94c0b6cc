"""The items this package stores in DynamoDB, one model per item kind.

boto3's own serializer turns a model into DynamoDB's typed attribute values (``str`` → ``S``,
``int`` → ``N``, ``bytes`` → ``B``) and back, so no attribute is marshalled by hand. Field
order is attribute order; golden files pin every item kind, since tables outlive the code.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal

from boto3.dynamodb.types import Binary, TypeDeserializer, TypeSerializer
from typing_extensions import Self

from sleeper_spark.models.iso_times import IsoTimesModel

# A low-level attribute value, as the DynamoDB client takes and returns it: {"S": "..."}.
AttributeValue = dict[str, Any]

_SERIALIZER = TypeSerializer()
_DESERIALIZER = TypeDeserializer()

CATALOG_ENTRY_KIND: Literal["catalog-entry"] = "catalog-entry"
NAMESPACE_KIND: Literal["namespace"] = "namespace"


def attribute_value(value: str | int | bytes) -> AttributeValue:
    """One typed attribute value, for keys and expression values."""
    serialized: AttributeValue = dict(_SERIALIZER.serialize(value))
    return serialized


def plain_values(item: Mapping[str, Any]) -> dict[str, Any]:
    """A low-level item (or the attributes a projection returned) as Python values.

    Numbers come back as ``int`` where they are whole, binary values as ``bytes``.
    """
    return {name: _plain(_DESERIALIZER.deserialize(value)) for name, value in item.items()}


def _plain(value: Any) -> Any:
    if isinstance(value, Binary):
        return bytes(value)  # type: ignore[call-overload]  # Binary has __bytes__; its stub does not say so
    if isinstance(value, Decimal) and value == value.to_integral_value():
        return int(value)
    return value


class DynamoDBItem(IsoTimesModel):
    """An item kind: its attributes are the model's fields; ``None`` fields are not stored."""

    def to_item(self) -> dict[str, AttributeValue]:
        return {name: attribute_value(value) for name, value in self.model_dump(exclude_none=True).items()}

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> Self:
        return cls.model_validate(plain_values(item))


# -- the AWS backend's transactions table ----------------------------------------------------


class TransactionItem(DynamoDBItem):
    """One log entry: hash key ``table_id``, range key ``number``; ``body`` is a transaction or a spill pointer."""

    table_id: str
    number: int
    body: bytes
    written_at: datetime | None = None  # when this writer put it (set on every put; for people)


class PendingItem(DynamoDBItem):
    """An append waiting for a group commit (see :mod:`sleeper_spark.log.pending`).

    Hash key ``<table id>#pending``, so a table's records are one query and never meet its log;
    range key ``number``, the first 60 bits of ``key`` (a DynamoDB number holds 38 digits, too
    few for all 128). ``expires_at`` (epoch seconds) lets DynamoDB's TTL remove a record that
    no committer deleted.
    """

    table_id: str
    number: int
    key: str
    body: bytes
    written_at: datetime | None = None
    expires_at: int | None = None


# -- the AWS backend's snapshots table -------------------------------------------------------


class StatePointerItem(DynamoDBItem):
    """The number of a table's newest state snapshot, keyed by the table id."""

    table_id: str
    number: int
    written_at: datetime | None = None


class CatalogEntryItem(DynamoDBItem):
    """A catalog's table, keyed ``catalog#<warehouse>#<name>``; ``entry`` is the :class:`TableEntry` JSON.

    ``catalog`` and ``name`` are copies kept so that a scan can filter and list names.
    """

    table_id: str
    kind: Literal["catalog-entry"] = CATALOG_ENTRY_KIND
    catalog: str
    name: str
    entry: str
    written_at: datetime | None = None


class NamespaceItem(DynamoDBItem):
    """A catalog's created namespace, keyed ``namespace#<warehouse>#<name>``; ``entry`` is the
    :class:`~sleeper_spark.models.Namespace` JSON.

    ``catalog`` and ``name`` are copies kept so that a scan can filter and list names. The key's
    first part keeps it apart from the table entries (``catalog#...``) and from the table ids
    (uuids) of the state pointers.
    """

    table_id: str
    kind: Literal["namespace"] = NAMESPACE_KIND
    catalog: str
    name: str
    entry: str
    written_at: datetime | None = None


# -- the lock table of the dynamodb-lock strategy --------------------------------------------


class LockRecordItem(DynamoDBItem):
    """A lock on one conditional write: partition key ``path`` (full URI), sort key ``etag`` (``*``: create).

    Defaults are what a reader assumes of a record that lacks the attribute.
    """

    path: str
    etag: str
    generation: int = 0
    timeout: int = 0  # milliseconds
    ttl: int | None = None  # epoch seconds: DynamoDB's TTL removes records left behind
    owner: str = ""  # random per write: a record with our own token is our lock
    holder: str = ""  # host:pid, only for people looking at the table

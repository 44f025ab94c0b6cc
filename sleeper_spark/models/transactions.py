"""The transactions of the log: one frozen model per kind, discriminated by ``type``.

A ``type`` string is part of the stored format and never changes once released, whatever the
class is called (golden files in ``tests/golden/`` pin each). Every transaction carries the
fields of the snapshot it makes: ``parent_id`` is filled in by the commit loop on each attempt,
since a rebase onto a newer head changes it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from sleeper_spark.models.files import FileRef
from sleeper_spark.models.schema import TableSchema


class TransactionMember(BaseModel):
    """What makes a log entry one table's part of a multi-table transaction (ADR 0016).

    The entry counts only once the transaction's decision record says ``committed`` and lists
    the entry's number; ``aborted`` (or a decision that does not list it) folds it as a no-op.
    ``decide_by``: until then a reader that finds no decision waits; after it, the reader puts
    ``aborted`` itself, so a writer killed mid-way holds the table up for at most the lease.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    transaction_id: str
    tables: tuple[str, ...] = Field(min_length=1)  # the table ids of every table in the transaction
    decide_by: datetime


class TransactionBase(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    snapshot_id: str
    parent_id: str | None = None
    committed_at: datetime
    operation: str
    metadata: dict[str, str] = Field(default_factory=dict)
    write_id: str
    app_id: str | None = None
    app_version: int | None = None
    # Counts of what the operation did (a merge: rows_inserted, rows_updated, ...); absent when none.
    operation_metrics: dict[str, int] | None = None
    # Set on each table's entry of a multi-table transaction; absent (and not stored) otherwise.
    member_of: TransactionMember | None = None


class CreateTable(TransactionBase):
    """Transaction 1 of every table: its identity, schema and layout. Not a data snapshot."""

    type: Literal["create_table"] = "create_table"
    table_id: str
    name: str
    schema_: TableSchema = Field(alias="schema")
    partition_by: tuple[str, ...] = ()
    properties: dict[str, str] = Field(default_factory=dict)
    event_time_column: str | None = None

    model_config = ConfigDict(
        frozen=True, extra="forbid", validate_by_name=True, validate_by_alias=True, serialize_by_alias=True
    )


class AddFiles(TransactionBase):
    """An append: new files, nothing removed. Never conflicts; rebases on any newer head.

    ``schema`` (a write with ``merge_schema`` whose data adds columns): the table's schema from
    this transaction on, applied before the files; absent otherwise.
    """

    type: Literal["add_files"] = "add_files"
    files: tuple[FileRef, ...]
    min_event_time: datetime | None = None
    max_event_time: datetime | None = None
    schema_: TableSchema | None = Field(default=None, alias="schema")

    model_config = ConfigDict(
        frozen=True, extra="forbid", validate_by_name=True, validate_by_alias=True, serialize_by_alias=True
    )


class AppendGroup(TransactionBase):
    """The appends of several writers in one version (group commit).

    Each member is a whole :class:`AddFiles` of one writer, with its own write id, metadata and
    ``(app_id, app_version)``; the group's own fields describe the version (its ``write_id`` is
    the proposer's, never a member's). Members never set a schema: a write that evolves the
    schema commits alone. Added in format 2 of the log; a reader that predates it says the log
    needs a newer sleeper_spark (see ``TransactionCodec``).
    """

    type: Literal["append_group"] = "append_group"
    members: tuple[AddFiles, ...] = Field(min_length=1)

    @property
    def files(self) -> tuple[FileRef, ...]:
        """Every member's files, in member order."""
        return tuple(f for member in self.members for f in member.files)


class ReplaceFiles(TransactionBase):
    """Removes files and adds others (overwrite, compaction, delete).

    Invalid when a file it removes is no longer in the table: someone else replaced it first.
    """

    type: Literal["replace_files"] = "replace_files"
    removed: tuple[str, ...]
    added: tuple[FileRef, ...]
    min_event_time: datetime | None = None
    max_event_time: datetime | None = None
    schema_: TableSchema | None = Field(default=None, alias="schema")  # as in AddFiles

    model_config = ConfigDict(
        frozen=True, extra="forbid", validate_by_name=True, validate_by_alias=True, serialize_by_alias=True
    )


class SetSchema(TransactionBase):
    """Evolves the schema; only new nullable columns at the end are allowed."""

    type: Literal["set_schema"] = "set_schema"
    schema_: TableSchema = Field(alias="schema")

    model_config = ConfigDict(
        frozen=True, extra="forbid", validate_by_name=True, validate_by_alias=True, serialize_by_alias=True
    )


class SetProperties(TransactionBase):
    """Sets and removes table properties."""

    type: Literal["set_properties"] = "set_properties"
    set: dict[str, str] = Field(default_factory=dict)
    unset: tuple[str, ...] = ()


class VoidedEntry(TransactionBase):
    """An entry of a multi-table transaction that was aborted, as the fold sees it: its number is
    used and nothing changes. Never stored: the log keeps the entry as it was written, and each
    reader voids it after reading the transaction's decision."""

    type: Literal["voided"] = "voided"


Transaction = Annotated[
    CreateTable | AddFiles | AppendGroup | ReplaceFiles | SetSchema | SetProperties,
    Field(discriminator="type"),
]

# The ``type`` of each transaction this version reads; a log entry of another type was written
# by a newer version (see TransactionCodec.decode).
KNOWN_TYPES = frozenset({"create_table", "add_files", "append_group", "replace_files", "set_schema",
                         "set_properties"})

# What a reader folds: a stored transaction, or in place of an aborted transaction's entry, a VoidedEntry.
FoldedTransaction = CreateTable | AddFiles | AppendGroup | ReplaceFiles | SetSchema | SetProperties | VoidedEntry

TRANSACTION_ADAPTER: TypeAdapter[Transaction] = TypeAdapter(Transaction)


def encode_transaction(txn: Transaction) -> bytes:
    # None fields are left out: they decode to their defaults, and the stored form stays small.
    return txn.model_dump_json(by_alias=True, exclude_none=True).encode()


def decode_transaction(data: bytes | str) -> Transaction:
    return TRANSACTION_ADAPTER.validate_json(data)


# -- the decision record of a multi-table transaction ---------------------------------------

DecisionOutcome = Literal["committed", "aborted"]


class TransactionDecision(BaseModel):
    """Entry 1 of the log ``_transactions/<id>``: whether a multi-table transaction counts.

    Exactly one decision is ever stored per transaction (the log's one winner per number), so a
    decision never changes once read. ``committed`` lists, per table id, the numbers of the
    transaction's entries in that table's log; an entry of the transaction at any other number
    (none is ever written, but a reader does not rely on that) folds as a no-op, as every entry
    of an ``aborted`` transaction does.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    transaction_id: str
    outcome: DecisionOutcome
    decided_at: datetime
    # "writer": the transaction's own writer; "reader": a reader or writer that found it undecided
    # after its lease (decide_by) and rolled it back.
    decided_by: Literal["writer", "reader"]
    # table id -> the numbers of the transaction's entries in that table's log (committed only)
    versions: dict[str, tuple[int, ...]] = Field(default_factory=dict)

    def counts(self, table_id: str, number: int) -> bool:
        """Whether the entry ``number`` of table ``table_id`` folds as written."""
        return self.outcome == "committed" and number in self.versions.get(table_id, ())

    def encode(self) -> bytes:
        return self.model_dump_json(exclude_defaults=True).encode()

    @classmethod
    def decode(cls, data: bytes) -> TransactionDecision:
        return cls.model_validate_json(data)

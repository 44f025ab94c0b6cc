"""What the head hands out of its log: entries, decoded on demand, and records of loss."""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime

from sleeper_spark.commit.decisions import MemberEntries
from sleeper_spark.errors import ConfigError, CorruptLogError
from sleeper_spark.log import TransactionCodec
from sleeper_spark.models import FoldedTransaction, SetProperties, Transaction


class LogEntry:
    """One stored transaction: its number, where its body was spilled, and the transaction itself."""

    __slots__ = ("_body", "_codec", "_members", "number")

    def __init__(self, number: int, body: bytes, codec: TransactionCodec, members: MemberEntries) -> None:
        self.number = number
        self._body = body
        self._codec = codec
        self._members = members

    @property
    def spilled_body(self) -> str | None:
        """The table-relative key of the body this entry points to, if it was too big for the log."""
        return self._codec.spilled_key(self._body)

    def transaction(self) -> FoldedTransaction:
        """The decoded transaction, as the fold takes it (an entry of an aborted multi-table
        transaction: a :class:`~sleeper_spark.models.VoidedEntry`); :class:`CorruptLogError`
        naming the entry if it cannot be decoded."""
        return self._members.resolved(self.number, self._codec.decode(self.number, self._body))

    def stored_transaction(self) -> Transaction:
        """The transaction as stored, without waiting for or applying its decision."""
        return self._codec.decode(self.number, self._body)


def loss_record(number: int, damaged: bytes, reason: str, parent_id: str | None, at: datetime) -> SetProperties:
    """A transaction that changes nothing and records that transaction ``number`` was lost."""
    return SetProperties(
        snapshot_id=uuid.uuid4().hex, parent_id=parent_id, committed_at=at, operation="repair",
        write_id=uuid.uuid4().hex,
        metadata={"lost_transaction": str(number), "reason": reason, "damaged_bytes": str(len(damaged)),
                  "damaged_sha256": hashlib.sha256(damaged).hexdigest()},
    )


def refuse_repair(table: str, number: int, state_snapshots: list[int]) -> None:
    """Raises unless transaction ``number`` may be recorded as lost (see ``TableHead.repair``)."""
    if number == 1:
        raise CorruptLogError(
            f"table {table!r}: transaction 1 creates the table and cannot be recorded as lost; restore it from a "
            "backup"
        )
    covering = [n for n in state_snapshots if n >= number]
    if covering:
        raise ConfigError(
            f"table {table!r}: state snapshot {min(covering)} already holds what transaction {number} did, so "
            "versions from it on read without the damaged entry; truncate the log (sleeper-spark truncate) to cut "
            "the entry away instead of repairing it"
        )

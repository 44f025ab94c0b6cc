"""The transaction log contract.

A log holds the numbered transactions of ONE table (its ``table_id``), as opaque bytes. Every
backend keeps these rules, and ``tests/contract/log_contract.py`` checks them:

* **Mutual exclusion per number.** ``append(n, body)`` succeeds for exactly one caller per
  ``n``; every other caller gets :class:`TransactionNumberTakenError`, however they race.
* **No gaps.** ``append(n, ...)`` is only ever called after reading ``n - 1`` (the commit loop
  ensures it), so numbers run 1, 2, 3, ... ; a reader that finds ``n`` missing may assume no
  later number exists.
* **Consistent tail reads.** ``read(after)`` returns every transaction with a number above
  ``after`` that was acknowledged before the call began, in order. A backend whose reads may be
  stale must read strongly (DynamoDB: ``ConsistentRead``).
* **Appended bytes are immutable.** Only log truncation deletes entries, and only ones below a
  state snapshot. The one exception is an explicit repair: ``replace_damaged`` swaps an entry
  that cannot be decoded for a record of its loss, and only while it still holds those bytes.

Backends map their own failures onto these errors at the boundary; nothing backend-specific
travels above this package.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class LogRecord:
    number: int
    body: bytes


class TransactionLog(ABC):
    """The log of one table."""

    @abstractmethod
    def append(self, number: int, body: bytes) -> None:
        """Stores ``body`` as transaction ``number`` if no transaction has that number yet."""

    @abstractmethod
    def read(self, after: int = 0, up_to: int | None = None) -> Iterator[LogRecord]:
        """Transactions numbered ``after + 1`` onwards (to ``up_to`` inclusive), in order."""

    @abstractmethod
    def delete_up_to(self, number: int) -> int:
        """Deletes transactions ``<= number`` (log truncation); returns how many were deleted."""

    @abstractmethod
    def first_number(self) -> int | None:
        """The lowest number still stored (1 unless truncated), or ``None`` for an empty log."""

    @abstractmethod
    def replace_damaged(self, number: int, damaged: bytes, body: bytes) -> None:
        """Replaces entry ``number`` with ``body`` only while it still holds exactly ``damaged``.

        :class:`TransactionNumberTakenError` if the entry holds other bytes or is gone (someone
        repaired or restored it first). Deciding that the bytes are damaged is the caller's job.
        """

    def read_one(self, number: int) -> LogRecord | None:
        for record in self.read(after=number - 1, up_to=number):
            return record
        return None

    def drop(self) -> None:
        """Deletes the whole log (drop table)."""
        self.delete_up_to(2**62)

"""The transaction log as files on an object store: ``<table>/_log/<20-digit number>.json``.

Each append is one create-if-absent, so the store (or the conditional-write strategy in front
of it) decides the single winner per number. Tail reads GET the next numbers until one is
missing: no LIST on the hot path, and a warm reader pays one GET to learn it is up to date.
"""

from __future__ import annotations

from collections.abc import Iterator

from sleeper_spark.errors import (
    AppendOutcomeUnknownError,
    PathExistsError,
    PreconditionFailedError,
    TransactionNumberTakenError,
    WriteOutcomeUnknownError,
)
from sleeper_spark.layout import decision_key, log_entry_key, log_entry_number, log_prefix
from sleeper_spark.log.transaction_log import LogRecord, TransactionLog
from sleeper_spark.storage import ConditionalWriteStrategy, ObjectStore


class ObjectStoreTransactionLog(TransactionLog):
    def __init__(self, store: ObjectStore, conditional: ConditionalWriteStrategy, table_root: str) -> None:
        self._store = store
        self._conditional = conditional
        self._root = table_root

    def append(self, number: int, body: bytes) -> None:
        try:
            self._conditional.create_if_absent(log_entry_key(self._root, number), body)
        except PathExistsError:
            raise TransactionNumberTakenError(f"transaction {number} exists") from None
        except WriteOutcomeUnknownError as error:
            raise AppendOutcomeUnknownError(f"transaction {number}: {error}") from error

    def replace_damaged(self, number: int, damaged: bytes, body: bytes) -> None:
        key = log_entry_key(self._root, number)
        info = self._store.head(key)
        try:
            if info is None or self._store.get(key) != damaged:
                raise PreconditionFailedError(key)
            # The etag read before the bytes were compared: a restore in between changes it.
            self._conditional.replace_if_match(key, body, info.etag)
        except (PreconditionFailedError, FileNotFoundError):
            raise TransactionNumberTakenError(f"transaction {number} no longer holds the damaged bytes") from None

    def read(self, after: int = 0, up_to: int | None = None) -> Iterator[LogRecord]:
        number = after + 1
        while up_to is None or number <= up_to:
            try:
                body = self._store.get(log_entry_key(self._root, number))
            except FileNotFoundError:
                return
            yield LogRecord(number, body)
            number += 1

    def _numbers(self) -> list[int]:
        prefix = log_prefix(self._root)
        numbers = (log_entry_number(info.key[len(prefix):]) for info in self._store.list(prefix))
        return [number for number in numbers if number is not None]

    def delete_up_to(self, number: int) -> int:
        doomed = [n for n in self._numbers() if n <= number]
        # Oldest first, so that an interrupted truncation never leaves a hole below kept entries.
        for n in sorted(doomed):
            self._store.delete(log_entry_key(self._root, n))
        return len(doomed)

    def first_number(self) -> int | None:
        return min(self._numbers(), default=None)


class ObjectStoreDecisionLog(TransactionLog):
    """The decision log of one multi-table transaction as one object, ``_transactions/<id>.json``:
    entry 1 is all it ever holds (a decision), so a folder of its own per transaction would only
    cost a few more requests (and on a local disk, directories) per commit."""

    def __init__(self, store: ObjectStore, conditional: ConditionalWriteStrategy, transaction_id: str) -> None:
        self._store = store
        self._conditional = conditional
        self._key = decision_key(transaction_id)

    def append(self, number: int, body: bytes) -> None:
        if number != 1:
            raise ValueError(f"a decision log holds entry 1 only, not {number}")
        try:
            self._conditional.create_if_absent(self._key, body)
        except PathExistsError:
            raise TransactionNumberTakenError("the transaction is decided already") from None
        except WriteOutcomeUnknownError as error:
            raise AppendOutcomeUnknownError(f"decision: {error}") from error

    def read(self, after: int = 0, up_to: int | None = None) -> Iterator[LogRecord]:
        if after >= 1 or (up_to is not None and up_to < 1):
            return
        try:
            body = self._store.get(self._key)
        except FileNotFoundError:
            return
        yield LogRecord(1, body)

    def delete_up_to(self, number: int) -> int:
        if number < 1 or self._store.head(self._key) is None:
            return 0
        self._store.delete(self._key)
        return 1

    def first_number(self) -> int | None:
        return 1 if self._store.head(self._key) is not None else None

    def replace_damaged(self, number: int, damaged: bytes, body: bytes) -> None:
        raise TransactionNumberTakenError("a decision is never replaced")

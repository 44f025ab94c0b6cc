"""State snapshots: the table state at transaction N as one file, plus a forward-only pointer.

Files live at ``<table>/_state/<20-digit N>.parquet`` on the object store (write-once); the
name predates format 2, which is Arrow IPC — the first bytes say which format a file holds
(see :mod:`sleeper_spark.log.state_codec`).
The pointer names the newest one; it only ever moves forward, so a slow writer of an old state
snapshot can never hide a newer one. A reader loads the pointed-to state and then the log tail.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable

from sleeper_spark.config import StoreRetryPolicy
from sleeper_spark.errors import CorruptLogError, PathExistsError, PreconditionFailedError, StorageError
from sleeper_spark.layout import state_pointer_key, state_prefix, state_snapshot_key, state_snapshot_number
from sleeper_spark.log.state_codec import decode_state, encode_state
from sleeper_spark.state import TableState
from sleeper_spark.storage import ConditionalWriteStrategy, ObjectStore
from sleeper_spark.storage.retry import FailureKind, StoreRetries

log = logging.getLogger(__name__)



class StatePointer(ABC):
    """The number of the newest state snapshot of one table."""

    @abstractmethod
    def get(self) -> int | None:
        """The newest state snapshot's number, or ``None`` if none was written."""

    @abstractmethod
    def advance(self, number: int) -> bool:
        """Moves the pointer to ``number`` if that is newer; ``False`` if it already was as new."""

    @abstractmethod
    def drop(self) -> None:
        """Deletes the pointer (drop table)."""


class ObjectStoreStatePointer(StatePointer):
    """``<table>/_state/latest`` holding the number, moved with replace-if-match.

    Moving it is a compare-and-swap that a racing writer can make fail; it is tried again under
    the store retry policy (``retry``, waiting with ``sleep``), and a pointer that keeps moving
    under us past its bounds is a :class:`StorageError` rather than a loop without end.
    """

    def __init__(self, store: ObjectStore, conditional: ConditionalWriteStrategy, table_root: str, *,
                 retry: StoreRetryPolicy | None = None, sleep: Callable[[float], None] = time.sleep) -> None:
        self._store = store
        self._conditional = conditional
        self._key = state_pointer_key(table_root)
        self._retry = retry or StoreRetryPolicy()
        self._sleep = sleep

    def get(self) -> int | None:
        try:
            return int(self._store.get(self._key))
        except FileNotFoundError:
            return None

    def advance(self, number: int) -> bool:
        body = str(number).encode()
        what = f"moving the state pointer {self._store.uri(self._key)} to {number}"
        retries = StoreRetries(self._retry, what, sleep=self._sleep)
        for attempt in retries:
            with attempt:
                try:
                    return self._try_advance(number, body)
                except (PathExistsError, PreconditionFailedError) as error:
                    retries.failed(error, FailureKind.NOT_APPLIED)  # another writer moved it; look again
        raise StorageError(f"{what}: other writers kept moving it ({retries.describe()}); the state snapshot is "
                           "written and the next one moves the pointer, or retry create_state_snapshot()")

    def _try_advance(self, number: int, body: bytes) -> bool:
        """One compare-and-swap; :class:`PathExistsError` / :class:`PreconditionFailedError` if it lost."""
        current = self._store.head(self._key)
        if current is None:
            self._conditional.create_if_absent(self._key, body)
            return True
        stored = int(self._store.get(self._key))
        if stored >= number:
            return False
        self._conditional.replace_if_match(self._key, body, current.etag)
        return True

    def drop(self) -> None:
        self._store.delete(self._key)


class StateSnapshotStore:
    """Reads and writes the state snapshot files of one table."""

    def __init__(self, store: ObjectStore, table_root: str, pointer: StatePointer) -> None:
        self._store = store
        self._root = table_root
        self.pointer = pointer

    def key(self, number: int) -> str:
        return state_snapshot_key(self._root, number)

    def write(self, state: TableState) -> int:
        """Writes the state at ``state.version`` and moves the pointer to it."""
        try:
            self._store.create_if_absent(self.key(state.version), encode_state(state))
        except PathExistsError:
            pass  # another process captured the same version: same content
        self.pointer.advance(state.version)
        return state.version

    def read(self, number: int) -> TableState:
        key = self.key(number)
        try:
            data = self._store.get(key)
        except FileNotFoundError:
            raise CorruptLogError(f"state snapshot {self._store.uri(key)} is missing") from None
        return decode_state(data, self._store.uri(key))

    def numbers(self) -> list[int]:
        """All state snapshots stored, oldest first (a LIST: not for the hot path)."""
        prefix = state_prefix(self._root)
        numbers = (state_snapshot_number(info.key[len(prefix):]) for info in self._store.list(prefix))
        return sorted(number for number in numbers if number is not None)

    def load_newest(self, at_most: int | None = None) -> TableState | None:
        """The newest readable state snapshot (at most ``at_most``), or ``None``.

        A damaged or missing one is skipped with a warning in favour of an older one; the log
        tail makes up the difference.
        """
        latest = self.pointer.get()
        if latest is not None and (at_most is None or latest <= at_most):
            try:
                return self.read(latest)
            except CorruptLogError as error:
                log.warning("%s; falling back to an older state snapshot or the log", error)
                at_most = latest - 1
        elif latest is None and at_most is None:
            return None  # none was ever written: spare the LIST
        for number in reversed([n for n in self.numbers() if at_most is None or n <= at_most]):
            try:
                return self.read(number)
            except CorruptLogError as error:
                log.warning("%s; falling back to an older state snapshot or the log", error)
        return None

    def delete(self, number: int) -> None:
        self._store.delete(self.key(number))

"""Appends waiting for a group commit: records any writer of the table can see and commit.

With ``group_commit`` on, a writer that lost a race for the next log number records its append
here (one record per batch of appends, under a key of its own), then proposes the next number
with every pending append not yet in the log (see :mod:`sleeper_spark.commit.group`). The
records are hints, never the truth: whether an append is committed is decided by the log alone,
so a record may be listed after its append was committed, or appear late (a delayed put), and
nothing goes wrong. Every backend keeps these rules, checked by
``tests/contract/pending_contract.py``:

* ``put(key, body)`` stores the record durably; putting the same key and body again is harmless.
* ``list()`` returns every record whose put was acknowledged before the call began (a strongly
  consistent listing), in no particular order; records deleted meanwhile may or may not appear.
* ``delete(key)`` removes a record; deleting one that is gone is no error. ``delete_many``
  removes several, in as few requests as the backend allows.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass

PENDING_KEY_LENGTH = 32  # a uuid4 in hex: the writer's own key, unique without coordination


@dataclass(frozen=True)
class PendingRecord:
    key: str
    body: bytes


class PendingAppends(ABC):
    """The pending appends of one table."""

    @abstractmethod
    def put(self, key: str, body: bytes) -> None:
        """Stores a record; :class:`~sleeper_spark.errors.StorageError` if it may not have been stored."""

    @abstractmethod
    def list(self) -> list[PendingRecord]:
        """Every record stored before the call began (see the module doc)."""

    @abstractmethod
    def delete(self, key: str) -> None:
        """Removes the record ``key`` if it is there."""

    def delete_many(self, keys: Iterable[str]) -> None:
        """Removes the records ``keys`` (one request per key unless the backend batches)."""
        for key in keys:
            self.delete(key)

    def drop(self) -> None:
        """Removes every record (drop table)."""
        self.delete_many(record.key for record in self.list())


Hook = Callable[[], None]


class InMemoryPendingAppends(PendingAppends):
    """Pending records in memory, with hooks for tests of the group commit protocol."""

    def __init__(self) -> None:
        self._records: dict[str, bytes] = {}
        self._lock = threading.Lock()
        self._before_put: list[Hook] = []
        self._after_put: list[Hook] = []
        self._before_list: list[Hook] = []
        self.put_calls = 0
        self.list_calls = 0
        self.delete_calls = 0

    def at_start_of_next_put(self, hook: Hook) -> None:
        """Runs ``hook`` just before the next put (e.g. a rival's commit, or a failure it raises)."""
        self._before_put.append(hook)

    def fail_next_put(self, error: BaseException, *, after_storing: bool = False) -> None:
        """Makes the next put raise ``error``, before storing the record or after (a writer that dies)."""

        def raise_error() -> None:
            raise error

        (self._after_put if after_storing else self._before_put).append(raise_error)

    def at_start_of_next_list(self, hook: Hook) -> None:
        self._before_list.append(hook)

    def put(self, key: str, body: bytes) -> None:
        self.put_calls += 1
        if self._before_put:
            self._before_put.pop(0)()
        with self._lock:
            self._records[key] = body
        if self._after_put:
            self._after_put.pop(0)()

    def list(self) -> list[PendingRecord]:
        self.list_calls += 1
        if self._before_list:
            self._before_list.pop(0)()
        with self._lock:
            return [PendingRecord(key, body) for key, body in self._records.items()]

    def delete(self, key: str) -> None:
        self.delete_calls += 1
        with self._lock:
            self._records.pop(key, None)

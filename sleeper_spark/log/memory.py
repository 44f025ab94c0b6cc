"""An in-memory transaction log with hooks for tests.

The hooks follow Sleeper's ``atStartOfNextAddTransaction`` pattern: a test says what happens
at a chosen point — another writer commits first, the backend fails before or after storing —
instead of patching the commit loop's internals.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

from sleeper_spark.errors import TransactionNumberTakenError
from sleeper_spark.log.transaction_log import LogRecord, TransactionLog

Hook = Callable[[], None]


class InMemoryTransactionLog(TransactionLog):
    def __init__(self) -> None:
        self._entries: dict[int, bytes] = {}
        self._lock = threading.Lock()
        self._before_append: list[Hook] = []
        self._after_append: list[Hook] = []
        self._before_read: list[Hook] = []
        self._in_hook = False  # appends made by a hook (a rival's commit) do not trigger hooks
        self.append_calls = 0
        self.read_calls = 0

    # -- hooks ---------------------------------------------------------------------------

    def at_start_of_next_append(self, hook: Hook) -> None:
        """Runs ``hook`` just before the next append is attempted (e.g. a rival commit)."""
        self._before_append.append(hook)

    def fail_next_append(self, error: Exception, *, after_storing: bool = False) -> None:
        """Makes the next append raise ``error``, before storing it or after (a lost response)."""

        def raise_error() -> None:
            raise error

        if after_storing:
            self._after_append.append(raise_error)
        else:
            self._before_append.append(raise_error)

    def fail_next_read(self, error: Exception) -> None:
        """Makes the next read raise ``error`` (an unreachable or broken log)."""

        def raise_error() -> None:
            raise error

        self._before_read.append(raise_error)

    def _run(self, hooks: list[Hook]) -> None:
        if hooks and not self._in_hook:
            self._in_hook = True
            try:
                hooks.pop(0)()
            finally:
                self._in_hook = False

    # -- the contract --------------------------------------------------------------------

    def append(self, number: int, body: bytes) -> None:
        self.append_calls += 1
        self._run(self._before_append)
        with self._lock:
            if number in self._entries:
                raise TransactionNumberTakenError(f"transaction {number} exists")
            self._entries[number] = body
        self._run(self._after_append)

    def read(self, after: int = 0, up_to: int | None = None) -> Iterator[LogRecord]:
        self.read_calls += 1
        self._run(self._before_read)
        number = after + 1
        while up_to is None or number <= up_to:
            with self._lock:
                body = self._entries.get(number)
            if body is None:
                return
            yield LogRecord(number, body)
            number += 1

    def delete_up_to(self, number: int) -> int:
        with self._lock:
            doomed = [n for n in self._entries if n <= number]
            for n in doomed:
                del self._entries[n]
        return len(doomed)

    def first_number(self) -> int | None:
        with self._lock:
            return min(self._entries, default=None)

    def replace_damaged(self, number: int, damaged: bytes, body: bytes) -> None:
        with self._lock:
            if self._entries.get(number) != damaged:
                raise TransactionNumberTakenError(f"transaction {number} no longer holds the damaged bytes")
            self._entries[number] = body

    def corrupt(self, number: int, body: bytes) -> None:
        """Overwrites an entry with other bytes, to test how damage is reported."""
        with self._lock:
            self._entries[number] = body

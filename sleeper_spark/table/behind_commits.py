"""Work that follows a table's commits on a thread of its own, so that a commit costs what it did.

:class:`BehindCommits` takes each committed state (:meth:`~BehindCommits.hand`, which returns at
once) and runs its work on the newest one, with the number of the last version the work saw, so
that the work can catch up on every commit since (several commits that land while it runs are
one run). The thread ends once idle for :data:`IDLE_EXIT_S`; it is not a daemon thread, so at
interpreter exit Python waits for the run in progress. :meth:`~BehindCommits.flush` waits for the
work handed so far. The work logs its own failures: one that escapes is logged here and the
thread carries on with the next state.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from sleeper_spark.state import TableState

logger = logging.getLogger(__name__)

IDLE_EXIT_S = 0.25  # how long the thread waits for another commit before it ends


class BehindCommits:
    """One table's work behind its commits (see the module doc)."""

    def __init__(self, name: str, work: Callable[[TableState, int], None]) -> None:
        self._name = name
        self._work = work
        self._changed = threading.Condition()
        self._pending: TableState | None = None  # the newest committed state not yet handed to the work
        self._seen = -1  # the newest version the work has run on (-1: none yet)
        self._busy = False
        self._worker: threading.Thread | None = None

    def hand(self, state: TableState) -> None:
        """Hands ``state`` (just committed) to the thread; returns at once."""
        with self._changed:
            if self._seen < 0:
                self._seen = state.version - 1  # the work starts at the first commit it is handed
            if self._pending is None or state.version > self._pending.version:
                self._pending = state
            if self._worker is None:
                self._worker = threading.Thread(target=self._run, daemon=False, name=self._name)
                self._worker.start()
            self._changed.notify_all()

    def flush(self, timeout: float | None = None) -> bool:
        """Waits until the work ran on every state handed so far; False if ``timeout`` seconds passed first."""
        with self._changed:
            return self._changed.wait_for(lambda: self._pending is None and not self._busy, timeout)

    def _run(self) -> None:
        while True:
            with self._changed:
                if self._pending is None:
                    self._changed.wait(IDLE_EXIT_S)
                if self._pending is None:
                    self._worker = None
                    return
                state, self._pending, self._busy = self._pending, None, True
                since = self._seen
            try:
                self._work(state, since)
            except Exception:  # the work logs what it knows; this keeps the thread alive
                logger.exception("%s: the work behind version %d failed", self._name, state.version)
            finally:
                with self._changed:
                    self._seen = max(since, state.version)
                    self._busy = False
                    self._changed.notify_all()

"""The state of one table's log, loaded once and then brought up to date: catch-up and time travel.

A reader keeps the newest state it has folded. Bringing it up to date reads only the log's tail
after that state; a cold reader starts from the newest state snapshot and folds the entries after
it. :class:`~sleeper_spark.commit.head.TableHead` commits on top of this.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator

from sleeper_spark.commit.decisions import MemberEntries
from sleeper_spark.errors import SnapshotNotFoundError
from sleeper_spark.log import StateSnapshotStore, TransactionCodec, TransactionLog
from sleeper_spark.models import FoldedTransaction, Snapshot
from sleeper_spark.state import TableState, fold

logger = logging.getLogger(__name__)

# Log truncation never removes a transaction younger than this, so a writer that caught up within
# half of it cannot be behind a cut (see LogReader.catch_up).
TRUNCATION_MIN_AGE_S = 600.0


class LogReader:
    """One table's state as its log says it is, kept and brought up to date; the base of TableHead."""

    def __init__(
        self,
        name: str,
        transaction_log: TransactionLog,
        codec: TransactionCodec,
        state_snapshots: StateSnapshotStore,
        recheck_after_s: float = 300.0,
        members: MemberEntries | None = None,
    ) -> None:
        self.name = name
        # Entries of multi-table transactions fold only once decided (commit/decisions.py).
        self.members = members or MemberEntries(None, "", name)
        self.transaction_log = transaction_log
        self.codec = codec
        self.state_snapshots = state_snapshots
        self._state: TableState | None = None
        self._travelled: TableState | None = None  # the last state read by time travel
        self._recheck_after_s = recheck_after_s
        self._caught_up_at = 0.0
        # One head serves every thread of a driver that opened the table. Catch-up and each
        # commit attempt hold this lock, so a state is never folded forward while another
        # thread validates or appends against it; states themselves are replaced, never
        # changed, so one handed out earlier stays valid without the lock. Sleeps between
        # attempts happen outside it: a waiting thread is just another racing writer.
        self._lock = threading.RLock()

    def state(self) -> TableState:
        """The current state: loaded once, then brought up to date with one tail read."""
        return self.catch_up()

    def known_state(self) -> TableState:
        """The state as last read, without asking the log (loads it if never read).

        For work that the commit loop re-checks anyway (building a write), so that a warm write
        costs exactly one tail read: the one inside :meth:`commit`.
        """
        return self._state if self._state is not None else self.catch_up()

    def catch_up(self) -> TableState:
        """Reads the log tail and applies it.

        An empty tail looks the same whether the state is current or the log was truncated past
        it. Truncation only removes transactions older than ``TRUNCATION_MIN_AGE`` (twice the
        recheck interval), so a writer that read the log within ``recheck_after_s`` cannot be
        behind a cut; one idle for longer also asks the state-snapshot pointer, and reloads if
        it points past its state.
        """
        with self._lock:
            started = time.monotonic()
            if self._state is None:
                state = self._load(at_most=None)
            else:
                state = fold(self._decoded(self._state.version), self._state)
                if started - self._caught_up_at > self._recheck_after_s:
                    newest = self.state_snapshots.pointer.get()
                    if newest is not None and newest > state.version:
                        logger.info("table %s: state %d is behind state snapshot %d; reloading", self.name,
                                 state.version, newest)
                        state = self._load(at_most=None)
            self._state = state
            self._caught_up_at = started
            return state

    def state_at(self, version: int) -> TableState:
        """The state as of transaction ``version`` (time travel).

        Reads nothing past ``version`` when the head already knows a later one, so a damaged
        newer entry does not stand in the way of reading the versions before it.
        """
        known, travelled = self._state, self._travelled
        if known is not None and version == known.version:
            return known
        if travelled is not None and version == travelled.version:
            return travelled
        if version < 1:
            raise SnapshotNotFoundError(f"table {self.name!r} has no snapshot with version {version}")
        if known is not None and version > known.version:
            current = self.catch_up()
            if version == current.version:
                return current
            if version > current.version:
                raise SnapshotNotFoundError(
                    f"table {self.name!r} has no snapshot with version {version} (latest: {current.version})")
        state = self._travelled = self._load(at_most=version)
        return state

    def snapshot_at(self, version: int) -> Snapshot | None:
        """The data snapshot with this version, ``None`` if that transaction made none.

        A warm head answers from memory; otherwise only the log up to ``version`` is read.
        """
        known = self._state
        state = known if known is not None and version <= known.version else self.state_at(version)
        return state.history.last_where("version", version)

    def _load(self, at_most: int | None) -> TableState:
        start = self.state_snapshots.load_newest(at_most=at_most)
        after = start.version if start else 0
        first = None if start else self.transaction_log.first_number()
        if start is None and first is not None and first > 1:
            raise SnapshotNotFoundError(
                f"table {self.name!r}: transactions before {first} were truncated from the log and no state "
                f"snapshot covers version {at_most}; time travel reaches back to version {first} at most"
            )
        state = fold(self._decoded(after, up_to=at_most), start)
        if at_most is not None and state.version < at_most:
            raise SnapshotNotFoundError(f"table {self.name!r} has no snapshot with version {at_most}")
        return state

    def _decoded(self, after: int, up_to: int | None = None) -> Iterator[tuple[int, FoldedTransaction]]:
        # A throttled read surfaces as LogThrottledError (a StorageError): the commit loop
        # retries it with back-off; a plain reader sees a StorageError saying so.
        for record in self.transaction_log.read(after=after, up_to=up_to):
            yield record.number, self.members.resolved(record.number, self.codec.decode(record.number, record.body))

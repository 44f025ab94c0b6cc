"""The head of one table's log: the commit loop, over the state that commit/reading.py keeps up to date.

This is the only place that loops over commit attempts (Sleeper's ``TransactionLogHead``)::

    state = the state held, if caught up recently (no read), else catch_up()
    loop (attempts, base delay, max delay, jitter):
        validate(txn, state)                             # a conflict no retry can fix -> raise
        transaction_log.append(state.version + 1, txn)   # one conditional put
        on "number taken": catch_up(); retry             # read only the tail, rebase
        on "outcome unknown": catch_up(); ours at that number? done : retry the same number

Retrying an uncertain append at the same number is what makes a lost response safe: a delayed
copy of our earlier request can only ever land at that number, and the conditional put lets
exactly one of them in; the next catch-up then finds our ``write_id`` there. For the same
reason, while that number is still free, a retry that fails for any reason ends in
:class:`CommitStateUnknownError`, never in an error that would say "not committed".
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone

from tenacity import RetryError

from sleeper_spark.commit.decisions import MemberEntries
from sleeper_spark.commit.entries import LogEntry, loss_record, refuse_repair
from sleeper_spark.commit.reading import LogReader
from sleeper_spark.commit.repeats import repeat_of
from sleeper_spark.commit.retry import RetryCommit, commit_retrying
from sleeper_spark.config import RetryPolicy
from sleeper_spark.errors import (
    CommitConflictError,
    CommitFailedError,
    CommitStateUnknownError,
    ConfigError,
    CorruptLogError,
    SleeperSparkError,
    SnapshotNotFoundError,
    StorageError,
)
from sleeper_spark.log import (
    AppendOutcomeUnknownError,
    LogThrottledError,
    StateSnapshotStore,
    TransactionCodec,
    TransactionLog,
    TransactionNumberTakenError,
)
from sleeper_spark.models import CreateTable, Snapshot, Transaction
from sleeper_spark.state import TableState, apply, validate

logger = logging.getLogger(__name__)

Clock = Callable[[], datetime]

BuildTransaction = Callable[[TableState], Transaction]


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class CommitResult:
    snapshot: Snapshot
    committed: bool  # False: an idempotent repeat; nothing new was written to the log
    attempts: int


class TableHead(LogReader):
    """The commit loop over a :class:`LogReader`, and the log's upkeep for maintenance and tools."""

    # True for a head that records what would be committed (a multi-table transaction's staging,
    # commit/members.py): a write path that would commit elsewhere (another process) must refuse.
    stages_only = False

    def __init__(
        self,
        name: str,
        transaction_log: TransactionLog,
        codec: TransactionCodec,
        state_snapshots: StateSnapshotStore,
        retry: RetryPolicy,
        state_snapshot_interval: int = 100,
        sleep: Callable[[float], None] = time.sleep,
        clock: Clock = utc_now,
        recheck_after_s: float = 300.0,
        members: MemberEntries | None = None,
    ) -> None:
        super().__init__(name, transaction_log, codec, state_snapshots, recheck_after_s, members)
        self._retry = retry
        self._interval = state_snapshot_interval
        self._sleep = sleep
        self._clock = clock
        # Called with the state after each commit that landed (the table layer publishes Iceberg
        # metadata there); it must not raise: the commit has happened whatever it does.
        self.after_commit: Callable[[TableState], None] | None = None
        # When an append of a multi-table transaction last found its number taken (time.monotonic()):
        # while the table is contended, its transactions append one table at a time (commit/members.py).
        self.lost_race_at = float("-inf")

    # -- committing ----------------------------------------------------------------------

    def commit(self, build: BuildTransaction) -> CommitResult:
        """Appends the transaction ``build`` makes from the newest state; see the module doc."""
        return self._after(self._commit(build))

    def _commit(self, build: BuildTransaction) -> CommitResult:
        started = time.monotonic()
        uncertain_at: int | None = None  # a number our append may have landed at
        attempts = 0
        write_id = ""
        try:
            for attempt in commit_retrying(self._retry, self.name, self._sleep):
                with attempt, self._lock:
                    attempts += 1
                    try:
                        state = self._optimistic_state() if attempts == 1 else self._catch_up_knowing(uncertain_at)
                    except LogThrottledError:
                        raise RetryCommit("reading the log was throttled") from None
                    txn = build(state)
                    write_id = txn.write_id
                    if uncertain_at is not None:
                        landed = state.snapshot_for_write(write_id)
                        if landed is not None:
                            return self._done(landed, True, attempts, started)
                        if state.version >= uncertain_at:
                            uncertain_at = None  # someone else holds that number: ours never landed
                    repeat = repeat_of(txn, state)
                    if repeat is not None:
                        return CommitResult(repeat, committed=False, attempts=attempts)
                    try:
                        result = self._attempt(txn, state)
                    except SleeperSparkError as error:
                        if uncertain_at is None:
                            raise
                        # Our earlier request for that number may still land: this is no failure.
                        raise CommitStateUnknownError(
                            f"table {self.name!r}: the outcome of transaction {uncertain_at} (write {write_id}) "
                            f"is unknown, and retrying it failed ({error}); staged files are kept. Check "
                            "table.history() for it."
                        ) from error
                    if isinstance(result, int):
                        uncertain_at = result
                        raise RetryCommit(f"the outcome of appending transaction {result} is unknown")
                    return self._done(result, True, attempts, started)
        except RetryError:
            if uncertain_at is not None:
                raise CommitStateUnknownError(
                    f"table {self.name!r}: could not learn whether write {write_id} was committed as "
                    f"transaction {uncertain_at}; staged files are kept. Check table.history() for it."
                ) from None
            raise CommitFailedError(
                f"table {self.name!r}: gave up after {attempts} attempts under contention; nothing was "
                "committed. Raise retry.max_attempts or spread the writers out."
            ) from None
        raise AssertionError("unreachable")  # pragma: no cover

    # -- what a group commit (commit/group.py) builds on ---------------------------------

    @property
    def lock(self) -> threading.RLock:
        """Held by each commit attempt and catch-up (see ``__init__``)."""
        return self._lock

    @property
    def retry_policy(self) -> RetryPolicy:
        return self._retry

    def sleep(self, seconds: float) -> None:
        self._sleep(seconds)

    def now(self) -> datetime:
        return self._clock()

    def peek(self) -> tuple[TableState | None, float]:
        """The state held and when it was last known to be the head (``time.monotonic``)."""
        return self._state, self._caught_up_at

    def is_fresh(self) -> bool:
        """Whether a first commit attempt would build on the state held, without reading the log."""
        return self._state is not None and time.monotonic() - self._caught_up_at <= self._recheck_after_s

    def adopt(self, state: TableState) -> None:
        """Holds ``state`` as the head's, if it is newer than the one held: the state a caller knows
        the log reached (a multi-table transaction's, once its decision says committed)."""
        with self._lock:
            if self._state is None or state.version > self._state.version:
                self._state = state
                self._caught_up_at = time.monotonic()

    def optimistic_state(self) -> TableState:
        """The state a first attempt builds on (see :meth:`_optimistic_state`)."""
        return self._optimistic_state()

    def catch_up_knowing(self, uncertain_at: int | None) -> TableState:
        """Catch-up inside a commit loop whose append at ``uncertain_at`` may have landed."""
        return self._catch_up_knowing(uncertain_at)

    def try_append(self, txn: Transaction, state: TableState) -> Snapshot | int:
        """One conditional append of ``txn`` after ``state`` (see :meth:`_attempt`); :class:`RetryCommit` if lost."""
        return self._attempt(txn, state)

    def finished(self, snapshot: Snapshot, attempts: int, started: float) -> CommitResult:
        """Logs a commit that landed, writes the state snapshot its version is due and runs
        :attr:`after_commit`."""
        return self._after(self._done(snapshot, True, attempts, started))

    def _optimistic_state(self) -> TableState:
        """The state for a first attempt: the cached one if it was read recently.

        Appending at ``cached.version + 1`` without reading the tail first is safe: the put
        succeeds only if that number is free, and numbers are contiguous, so success proves the
        cached state was the head and the validation ran against the true predecessor. A warm
        writer thus pays one conditional put and no read; a loser reads the tail and retries.
        """
        if self.is_fresh():
            assert self._state is not None
            return self._state
        return self.catch_up()

    def _catch_up_knowing(self, uncertain_at: int | None) -> TableState:
        try:
            return self.catch_up()
        except LogThrottledError:
            raise  # the commit loop backs off and reads again, uncertain or not
        except (StorageError, CorruptLogError) as error:
            if uncertain_at is None:
                raise
            raise CommitStateUnknownError(
                f"table {self.name!r}: the outcome of transaction {uncertain_at} is unknown and the log "
                f"cannot be read ({error}); staged files are kept"
            ) from error

    def _attempt(self, txn: Transaction, state: TableState) -> Snapshot | int:
        """One conditional append. A Snapshot on success, the number if the outcome is unknown."""
        txn = txn.model_copy(update={"parent_id": state.snapshot_id, "committed_at": self._clock()})
        validate(txn, state)
        number = state.version + 1
        body = self.codec.encode(txn)
        try:
            self.transaction_log.append(number, body)
        except TransactionNumberTakenError:
            raise RetryCommit(f"transaction {number} was taken by another writer") from None
        except LogThrottledError:
            raise RetryCommit("the log is throttling requests") from None
        except AppendOutcomeUnknownError:
            return number
        self._state = apply(txn, state)
        self._caught_up_at = time.monotonic()  # the put proved this state is the head
        latest = self._state.latest
        assert latest is not None
        return latest

    def _after(self, result: CommitResult) -> CommitResult:
        # Outside the head's lock: what runs after a commit must not hold up the next one.
        state = self._state
        if result.committed and self.after_commit is not None and state is not None:
            self.after_commit(state)
        return result

    def _done(self, snapshot: Snapshot, committed: bool, attempts: int, started: float) -> CommitResult:
        logger.info("table %s: committed version %d (%s) in %d attempt(s), %.1f ms", self.name,
                 snapshot.version, snapshot.operation, attempts, (time.monotonic() - started) * 1000)
        if committed and snapshot.version % self._interval == 0:
            self._snapshot_state_quietly(snapshot.version)
        return CommitResult(snapshot, committed=committed, attempts=attempts)

    def _snapshot_state_quietly(self, version: int) -> None:
        # The commit has landed; a failed state snapshot only makes the next cold open slower.
        # Another thread may have committed since: the state at hand is newer, which is as good.
        state = self._state
        assert state is not None and state.version >= version
        try:
            self.state_snapshots.write(state)
        except SleeperSparkError as error:
            logger.warning("table %s: automatic state snapshot failed: %s", self.name, error)

    # -- the log and its state snapshots, for maintenance and tools -----------------------

    def entries(self, after: int = 0, up_to: int | None = None) -> Iterator[LogEntry]:
        """The log's entries numbered ``after + 1`` on (to ``up_to``), in order, decoded on demand."""
        for record in self.transaction_log.read(after=after, up_to=up_to):
            yield LogEntry(record.number, record.body, self.codec, self.members)

    def first_number(self) -> int | None:
        """The oldest transaction the log still holds (1 unless truncated); ``None`` if it holds none."""
        return self.transaction_log.first_number()

    def newest_state_snapshot(self) -> int | None:
        """The transaction number the state-snapshot pointer names, if any."""
        return self.state_snapshots.pointer.get()

    def state_snapshot_numbers(self) -> list[int]:
        """The transaction numbers of the state snapshots stored, oldest first."""
        return sorted(self.state_snapshots.numbers())

    def read_state_snapshot(self, number: int) -> TableState:
        return self.state_snapshots.read(number)

    def truncate_log(self, up_to: int) -> int:
        """Deletes the entries numbered ``up_to`` and below; the caller checked a state snapshot covers them."""
        return self.transaction_log.delete_up_to(up_to)

    def exists(self) -> bool:
        """Whether the table's creation completed: transaction 1 is stored, or a state snapshot stands for it."""
        return self.transaction_log.read_one(1) is not None or self.state_snapshots.pointer.get() is not None

    def drop(self) -> None:
        """Deletes the log and the state-snapshot pointer (the state snapshots are files of the table)."""
        with self._lock:
            self.transaction_log.drop()
            self.state_snapshots.pointer.drop()
            self._state = self._travelled = None

    def create(self, txn: CreateTable) -> None:
        """Appends transaction 1; :class:`TransactionNumberTakenError` if the log has one already."""
        self.transaction_log.append(1, self.codec.encode(txn))

    def repair(self, number: int, reason: str) -> Snapshot:
        """Replaces transaction ``number``, which cannot be decoded, with a record of its loss.

        The record is a transaction that changes nothing but says, in its metadata, which
        transaction was lost and what its damaged bytes were; what the lost transaction did
        (files it added or removed) is gone from the table. Never a silent skip: the history
        shows a ``repair`` snapshot at that version.
        """
        with self._lock:
            record = self.transaction_log.read_one(number)
            if record is None:
                raise SnapshotNotFoundError(f"table {self.name!r} has no transaction {number} in its log")
            try:
                self.codec.decode(number, record.body)
            except CorruptLogError:
                pass
            else:
                raise ConfigError(f"table {self.name!r}: transaction {number} is intact; there is nothing to repair")
            refuse_repair(self.name, number, self.state_snapshots.numbers())
            before = self._load(at_most=number - 1)
            loss = loss_record(number, record.body, reason, before.snapshot_id, self._clock())
            try:
                self.transaction_log.replace_damaged(number, record.body, self.codec.encode(loss))
            except TransactionNumberTakenError:
                raise CommitConflictError(
                    f"table {self.name!r}: transaction {number} changed while it was being recorded as lost "
                    "(restored or repaired by someone else); read the table again"
                ) from None
            self._state = self._travelled = None
            logger.warning("table %s: transaction %d was damaged and is recorded as lost (%s)", self.name, number,
                           reason)
            latest = self.state_at(number).latest
            assert latest is not None
            return latest

    def create_state_snapshot(self) -> int:
        state = self.catch_up()
        return self.state_snapshots.write(state)

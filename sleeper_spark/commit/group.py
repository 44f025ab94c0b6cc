"""Group commit: one log transaction carries the appends of many writers (ADR 0007).

With the catalog setting ``group_commit`` on, every append of a table goes through the
:class:`GroupCommit` of its head::

    in this process: appends that wait at the same moment form one batch; one thread leads it
    solo, while the contention estimate is below SOLO_BELOW: a blind put of the batch at the
        cached head + 1; lost: a tail read and one more put
    recorded, when both lose (or the table looks busy):
        record the batch as a pending record (a key of its own; ``after`` = the version its
        first put was built on: none of its appends can be at or below it)
        loop (the commit retry policy):
            catch up (one tail read)
            every append of the batch is in a version above ``after``: done
            the record is young: wait, so that the oldest record's writer proposes first
            list the pending records; propose head + 1 with the batch's remaining appends and
            what the records offer (commit/proposals.py)
            won: delete this record and every record now settled, in one request; lost: loop

Why each append lands exactly once: an append goes into a proposal for number N + 1 only by a
proposer caught up to N that found it in no version up to N, and the conditional put lets one
proposal in per number; the next proposer reads N + 1 before it proposes N + 2. Whether an
append is committed is decided by the log alone: the records are hints, so one listed late,
landing late (a delayed put) or left behind by a dead writer is harmless, and a dead writer's
append is committed by whoever lists it next. A lone writer pays what it always did: one
conditional put and no read.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from tenacity import RetryError

from sleeper_spark.commit.head import CommitResult, TableHead
from sleeper_spark.commit.proposals import (
    ListedBatch,
    Offer,
    committed_since,
    decode_record,
    note_app,
    offer,
    repeats_within,
    transaction,
)
from sleeper_spark.commit.repeats import idempotent_repeat
from sleeper_spark.commit.retry import RetryCommit, commit_retrying
from sleeper_spark.errors import (
    CommitConflictError,
    CommitStateUnknownError,
    LogThrottledError,
    SleeperSparkError,
    StorageError,
)
from sleeper_spark.log.pending import PendingAppends
from sleeper_spark.models import AddFiles, Snapshot
from sleeper_spark.models.columnar import ColumnarAddFiles
from sleeper_spark.models.pending import PendingBatch
from sleeper_spark.state import TableState, validate

logger = logging.getLogger(__name__)

# How contended the table looks to this process: a moving average over its batches of 1 (a
# blind put lost; or, for a recorded batch, another writer's append was met: in a listing, in
# the version that took it, or as a lost race) and 0 (a blind put won; a recorded batch met
# nobody). Below SOLO_BELOW a batch first tries to commit alone (a blind put at the cached
# head + 1, then a tail read and one more put), as a writer without group commit would, and
# records itself only if both lose: a record costs a put, a listing and a share of a delete
# more, which pays only when most solo attempts would lose. Above it, the batch records at
# once. Solo puts are not used to probe a busy table: each one that wins takes a number from
# under every proposal in flight. The estimate falls when recorded batches find nobody else.
CONTENTION_WEIGHT = 0.25
SOLO_BELOW = 0.5
SOLO_ATTEMPTS = 2
# A writer that commits alone back to back (its last put landed less than BACK_TO_BACK_S ago)
# lists the pending records at least every HELP_EVERY_S (see _commit_batch); one that pauses
# between appends leaves others the gap they need, and never lists.
HELP_EVERY_S = 1.0
BACK_TO_BACK_S = 0.1
# A recorded batch proposes once its record is this many tail reads old (a moving average of
# this process's tail reads, weighted READ_WEIGHT), or after MAX_WAITS waits; until then it
# waits the commit loop's back-off and reads the tail, in case an older record's writer
# committed it.
PROPOSE_AFTER_READS = 3.0
MAX_WAITS = 3
READ_WEIGHT = 0.2
# The most appends one thread leads in a batch; the rest form the next.
MAX_BATCH = 64


@dataclass
class _Waiter:
    """One caller's append, and what became of it."""

    txn: AddFiles
    result: CommitResult | None = None
    error: BaseException | None = None

    @property
    def done(self) -> bool:
        return self.result is not None or self.error is not None

    @property
    def write_id(self) -> str:
        return self.txn.write_id


class GroupCommit:
    """The group commit of one table's appends, shared by every thread of the process."""

    def __init__(self, head: TableHead, pending: PendingAppends) -> None:
        self.head = head
        self.pending = pending
        self._changed = threading.Condition()
        self._queue: list[_Waiter] = []
        self._leading = False
        self._contention = 0.0  # see CONTENTION_WEIGHT
        self._listed_at = time.monotonic()  # when this process last listed the pending records
        self._committed_at = float("-inf")  # when a put of this process last landed
        self._read_s = 0.002  # how long a tail read takes (see PROPOSE_AFTER_READS)

    def waiting(self) -> int:
        return len(self._queue)  # this process's appends queued for the next batch

    def assume_contended(self) -> None:
        """The next appends record themselves at once, as after lost races (the estimate then falls by itself)."""
        self._contention = 1.0

    # -- batching the threads of this process --------------------------------------------

    def commit(self, txn: AddFiles) -> CommitResult:
        """Commits the append ``txn``; the result holds the snapshot of the version that has it."""
        if txn.schema_ is not None:
            raise ValueError("an append that sets a schema commits alone (TableHead.commit)")
        if isinstance(txn, ColumnarAddFiles):
            # Its files live outside its ``files`` field, which a group's members carry: they would be lost.
            raise ValueError("a columnar append commits alone (TableHead.commit); a group takes FileRef appends")
        waiter = _Waiter(txn)
        with self._changed:
            self._queue.append(waiter)
        while not waiter.done:
            with self._changed:
                while self._leading and not waiter.done:
                    self._changed.wait()
                if waiter.done:
                    break
                # No batch is being committed: this thread leads the appends queued so far.
                self._leading = True
                batch, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
            try:
                self._commit_batch(batch)
            except BaseException as error:
                for member in batch:
                    if not member.done:
                        member.error = error
            else:
                self._unknown(batch, "the commit loop ended without deciding it", None)  # never expected
            finally:
                with self._changed:
                    self._leading = False
                    self._changed.notify_all()
        if waiter.error is not None:
            raise waiter.error
        assert waiter.result is not None
        return waiter.result

    def commit_pending(self) -> Snapshot | None:
        """Commits what other writers left pending (one that died after recording its append).

        One attempt: a lost race means another writer is committing, and it takes them too.
        ``None`` when nothing was pending or the attempt did not land.
        """
        head = self.head
        started = time.monotonic()
        with head.lock:
            state = head.catch_up()
            listing = self._others("", state, [])
            others, settled = listing.appends, listing.settled
            if not others:
                self._forget(settled)
                return None
            try:
                outcome = head.try_append(transaction(others), state)
            except RetryCommit:
                return None
        if isinstance(outcome, int):
            return None
        self._forget(settled)
        logger.info("table %s: committed %d append(s) other writers left pending", head.name, len(others))
        return head.finished(outcome, 1, started).snapshot

    # -- one batch -----------------------------------------------------------------------

    def _commit_batch(self, batch: list[_Waiter]) -> None:
        head = self.head
        started = time.monotonic()
        uncertain_at: int | None = None
        base: int | None = None
        if self._contention < SOLO_BELOW:
            for attempt in range(SOLO_ATTEMPTS):
                if attempt and self._contention >= SOLO_BELOW:
                    break  # the lost blind put tipped the estimate: record at once
                with head.lock:
                    try:
                        state = head.optimistic_state() if attempt == 0 else head.catch_up()
                    except LogThrottledError:
                        break
                    base = state.version if base is None else base
                    own = self._own_appends(batch, state)
                    if not own:
                        return
                    # A writer that keeps winning alone would never see what others recorded
                    # (their proposals need more round trips than its next put); now and then it
                    # takes them in, so nobody waits behind it for long.
                    helped: list[AddFiles] = []
                    settled: list[str] = []
                    now = time.monotonic()
                    if now - self._listed_at > HELP_EVERY_S and now - self._committed_at < BACK_TO_BACK_S:
                        self._listed_at = now
                        listing = self._others("", state, own)
                        helped, settled = listing.appends, listing.settled
                    try:
                        outcome = head.try_append(transaction(own + helped), state)
                    except RetryCommit:
                        if attempt == 0:
                            self._observe(contended=True)
                        continue
                if attempt == 0:
                    self._observe(contended=False)
                if isinstance(outcome, int):
                    uncertain_at = outcome
                    break
                self._committed_at = time.monotonic()
                self._resolve(batch, outcome, head.finished(outcome, attempt + 1, started))
                self._forget(settled)
                if all(w.done for w in batch):
                    return
                break
        if base is None:
            with head.lock:
                base = head.optimistic_state().version
        self._commit_recorded(batch, base, uncertain_at, started)

    def _observe(self, contended: bool) -> None:
        """Folds what one batch met into the estimate of how contended the table is."""
        self._contention += CONTENTION_WEIGHT * ((1.0 if contended else 0.0) - self._contention)

    def _commit_recorded(self, batch: list[_Waiter], base: int, uncertain_at: int | None, started: float) -> None:
        """Records the batch as pending, then commits it with whatever else is pending."""
        head = self.head
        waiting = [w for w in batch if not w.done]
        if not waiting:
            return
        key = uuid.uuid4().hex
        record = PendingBatch(recorded_at=head.now(), after=base, members=tuple(w.txn for w in waiting))
        try:
            self.pending.put(key, record.encode())
        except StorageError as error:
            # Not fatal: the batch still proposes its own appends; the record only lets others help.
            logger.warning("table %s: could not record %d pending append(s): %s", head.name, len(waiting), error)
        recorded = time.monotonic()
        attempts = waits = 0
        alone = True  # no other writer met: the table calmed down, and solo attempts may pay again
        try:
            for attempt in commit_retrying(head.retry_policy, head.name, head.sleep):
                with attempt, head.lock:
                    attempts += 1
                    reading = time.monotonic()
                    try:
                        state = head.catch_up_knowing(uncertain_at)
                    except LogThrottledError:
                        raise RetryCommit("reading the log was throttled") from None
                    self._read_s += READ_WEIGHT * (time.monotonic() - reading - self._read_s)
                    landed = committed_since(base, state)
                    for waiter in waiting:
                        if waiter.write_id in landed:
                            waiter.result = CommitResult(landed[waiter.write_id], True, attempts)
                            alone = False  # another writer's proposal (or an earlier one of ours) took it
                    if uncertain_at is not None and state.version >= uncertain_at:
                        uncertain_at = None  # that number is decided; what it holds was counted above
                    waiting = [w for w in waiting if not w.done]
                    if not waiting:
                        break  # the writer that committed the last of them deletes the record
                    own = self._own_appends(waiting, state)
                    if not own:
                        self._forget([key])
                        break
                    if (uncertain_at is None and waits < MAX_WAITS
                            and time.monotonic() - recorded < PROPOSE_AFTER_READS * self._read_s):
                        # Young records wait and only read: the writer of the oldest one proposes
                        # first and takes the others with it, so a round has one proposer, not
                        # one per writer. Any writer whose record grows old proposes itself.
                        waits += 1
                        raise RetryCommit("waiting for an older record's writer to propose")
                    listing = self._others(key, state, own)
                    self._listed_at = time.monotonic()
                    alone = alone and not listing.appends
                    try:
                        outcome = head.try_append(transaction(own + listing.appends), state)
                    except RetryCommit:
                        alone = False
                        raise
                    if isinstance(outcome, int):
                        uncertain_at = outcome
                        raise RetryCommit(f"the outcome of appending transaction {outcome} is unknown")
                    self._committed_at = time.monotonic()
                    self._resolve(waiting, outcome, head.finished(outcome, attempts, started))
                    self._forget([key, *listing.settled])
                    break
        except RetryError:
            self._unknown(waiting, "gave up after the commit retry policy's attempts under contention", None)
            return
        except SleeperSparkError as error:
            self._unknown(waiting, str(error), error)
            return
        finally:
            self._observe(contended=not alone)

    def _unknown(self, waiting: Iterable[_Waiter], why: str, cause: BaseException | None) -> None:
        # The record stays: another writer may still commit these appends, which is why the
        # outcome is unknown rather than failed.
        for waiter in waiting:
            if not waiter.done:
                error = CommitStateUnknownError(
                    f"table {self.head.name!r}: append {waiter.write_id} is recorded as pending and another writer "
                    f"may still commit it ({why}); staged files are kept. Check table.history() for it."
                )
                error.__cause__ = cause
                waiter.error = error

    def _forget(self, keys: list[str]) -> None:
        if not keys:
            return
        try:
            self.pending.delete_many(keys)
        except StorageError as error:
            logger.warning("table %s: could not delete %d pending record(s) (%s); other writers remove them later",
                           self.head.name, len(keys), error)

    # -- what a proposal holds -----------------------------------------------------------

    def _own_appends(self, waiting: list[_Waiter], state: TableState) -> list[AddFiles]:
        """The batch's appends that still need a version; repeats and invalid ones are answered here."""
        proposal: list[AddFiles] = []
        apps: dict[str, int] = {}
        for waiter in waiting:
            txn = waiter.txn
            earlier = idempotent_repeat(state, txn.app_id, txn.app_version)
            if earlier is not None:
                waiter.result = CommitResult(earlier, committed=False, attempts=1)
                continue
            if repeats_within(txn, apps):
                continue  # an earlier append of the batch has this app version; it answers on commit
            try:
                validate(txn, state)
            except CommitConflictError as error:
                waiter.error = error
                continue
            note_app(txn, apps)
            proposal.append(txn)
        return proposal

    def _others(self, own_key: str, state: TableState, own: list[AddFiles]) -> Offer:
        """What the other writers' pending records offer a proposal that already holds ``own``."""
        try:
            records = self.pending.list()
        except StorageError as error:
            logger.warning("table %s: could not list pending appends (%s); proposing only its own", self.head.name,
                           error)
            return Offer()
        listed = []
        for record in records:
            if record.key == own_key:
                continue
            batch = decode_record(record)
            if batch is None:
                # Left out of every proposal; its writer, if alive, still commits it itself.
                logger.warning("table %s: pending record %s cannot be decoded; ignoring it", self.head.name,
                               record.key)
                continue
            listed.append(ListedBatch(record.key, batch))
        return offer(listed, state, own)

    def _resolve(self, waiting: list[_Waiter], snapshot: Snapshot, result: CommitResult) -> None:
        """Answers every waiter whose append ``snapshot`` holds, and those that repeat one of them."""
        state = self.head.known_state()  # the state the winning put made
        for waiter in waiting:
            if waiter.done:
                continue
            if snapshot.holds_write(waiter.write_id):
                waiter.result = result
                continue
            earlier = idempotent_repeat(state, waiter.txn.app_id, waiter.txn.app_version)
            if earlier is not None:
                waiter.result = CommitResult(earlier, committed=False, attempts=result.attempts)

"""One table's part of a multi-table transaction (ADR 0016): staging its transaction, then appending it.

:class:`StagingHead` stands in for a table's head while a transaction's writes run: every write
path ends in ``head.commit(build)``, which here records ``build`` instead of appending, so the
same writers (Arrow, Spark, deletes) stage files for a transaction as for a write of their own.

:func:`append_member` appends a staged transaction as the table's entry of the transaction: the
usual conditional put at the next number, validated against the newest state, retried when the
number is taken, under the one retry policy. Unlike :meth:`TableHead.commit`, it leaves the
head's state where it was: the entry counts only once the transaction is decided, and the next
catch-up folds it the way its decision says.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tenacity import RetryError

from sleeper_spark.commit.head import BuildTransaction, CommitResult, TableHead
from sleeper_spark.commit.retry import RetryCommit, commit_retrying
from sleeper_spark.errors import CommitFailedError, CommitStateUnknownError, CorruptLogError, StorageError
from sleeper_spark.log import AppendOutcomeUnknownError, LogThrottledError, TransactionNumberTakenError
from sleeper_spark.models import Transaction, TransactionMember
from sleeper_spark.state import TableState, apply, validate

TRANSACTION_KEY = "transaction_id"  # the metadata key naming the transaction in each table's history


class StagingHead(TableHead):
    """A table's head that records what would be committed instead of committing it."""

    stages_only = True

    def __init__(self, head: TableHead) -> None:
        super().__init__(head.name, head.transaction_log, head.codec, head.state_snapshots, head.retry_policy,
                         sleep=head.sleep, clock=head.now, members=head.members)
        self._state, self._caught_up_at = head.peek()  # starts warm where the table's head is
        self.builds: list[BuildTransaction] = []
        self.staged: list[Transaction] = []  # what each build made when staged: the files to delete on abort

    def commit(self, build: BuildTransaction) -> CommitResult:
        """Records ``build`` once it made a valid transaction on the state last read; commits nothing.

        The snapshot returned is provisional: the version it would get if nothing else
        committed first. The real one is known when the transaction is decided.
        """
        with self.lock:
            # The state as last read: the append re-validates against the newest one anyway.
            state = self.known_state()
            txn = build(state).model_copy(update={"parent_id": state.snapshot_id, "committed_at": self.now()})
            validate(txn, state)  # bad input fails here, before anything is appended anywhere
            self.builds.append(build)
            self.staged.append(txn)
            provisional = apply(txn, state).latest
        assert provisional is not None
        return CommitResult(provisional, committed=True, attempts=0)


def as_member(build: BuildTransaction, member: TransactionMember) -> BuildTransaction:
    """``build``, making the table's entry of ``member``'s transaction, named in its metadata."""

    def member_build(state: TableState) -> Transaction:
        txn = build(state)
        metadata: Mapping[str, str] = {**txn.metadata, TRANSACTION_KEY: member.transaction_id}
        return txn.model_copy(update={"member_of": member, "metadata": dict(metadata)})

    return member_build


class LostRace(Exception):
    """A one-shot append (``race_once``) found its number taken; nothing of it landed."""


def append_member(head: TableHead, build: BuildTransaction, after: TableState | None = None,
                  race_once: bool = False) -> tuple[int, TableState]:
    """Appends the entry ``build`` makes on the newest state; returns its number and the state with
    it folded in (as if committed), for the transaction's next entry to this table (module doc).

    ``after``: that state, when the transaction appended to this table already. The entry goes
    right after the earlier one: nobody else can append there without the transaction's
    decision, so a number taken there means the transaction was rolled back (its lease ran out).

    The first attempt builds on the state the head holds when it was read recently, as a commit
    does: the put lands only at the number after the true head. ``race_once``: that is the only
    attempt; :class:`LostRace` if the number is taken (the caller, which appends to several tables
    at once, then retries the whole transaction one table at a time).

    Raises what the commit loop raises for a conflict (``CommitConflictError``) and
    :class:`CommitFailedError` when retries run out; :class:`CommitStateUnknownError` when an
    append's outcome could not be learnt. Either way the caller aborts the whole transaction,
    which voids this entry too if it landed after all.
    """
    uncertain_at: int | None = None
    state: TableState | None = after
    landed: TableState | None = None
    write_id = transaction_id = ""
    try:
        for attempt in commit_retrying(head.retry_policy, head.name, head.sleep):
            with attempt, head.lock:
                if uncertain_at is not None:
                    stored = _stored_at(head, uncertain_at)
                    if stored is not None and _is_ours(stored, write_id, transaction_id):
                        assert landed is not None
                        return uncertain_at, landed
                    if stored is not None:  # someone else's: ours never landed there
                        _refuse_behind_own(head, after)
                        uncertain_at = None
                        state = None
                if state is None:
                    try:
                        # Waits for the decisions of other transactions' entries it meets.
                        state = head.optimistic_state() if write_id == "" else head.catch_up()
                    except LogThrottledError:
                        raise RetryCommit("reading the log was throttled") from None
                txn = build(state).model_copy(update={"parent_id": state.snapshot_id, "committed_at": head.now()})
                write_id = txn.write_id
                transaction_id = txn.member_of.transaction_id if txn.member_of is not None else ""
                validate(txn, state)
                number = state.version + 1
                landed = apply(txn, state)
                try:
                    head.transaction_log.append(number, head.codec.encode(txn))
                except TransactionNumberTakenError:
                    head.lost_race_at = time.monotonic()
                    _refuse_behind_own(head, after)
                    if race_once:
                        raise LostRace(f"table {head.name!r}: transaction {number} was taken") from None
                    state = None
                    raise RetryCommit(f"transaction {number} was taken by another writer") from None
                except LogThrottledError:
                    raise RetryCommit("the log is throttling requests") from None
                except AppendOutcomeUnknownError:
                    uncertain_at = number  # retried at the same number: only one copy can land
                    raise RetryCommit(f"the outcome of appending transaction {number} is unknown") from None
                return number, landed
    except RetryError:
        if uncertain_at is not None:
            raise CommitStateUnknownError(f"table {head.name!r}: could not learn whether entry {uncertain_at} "
                                          "of the transaction landed") from None
        raise CommitFailedError(f"table {head.name!r}: gave up appending its entry of the transaction after "
                                f"{head.retry_policy.max_attempts} attempts under contention") from None
    raise AssertionError("unreachable")  # pragma: no cover


def _refuse_behind_own(head: TableHead, after: TableState | None) -> None:
    if after is not None:
        raise CommitFailedError(f"table {head.name!r}: another writer appended right after this transaction's "
                                "entry, so the transaction was rolled back (it outlived its lease); nothing was "
                                "committed")


def _stored_at(head: TableHead, number: int) -> Transaction | None:
    """Entry ``number`` as stored (not waiting for a decision), or ``None`` while the number is free."""
    try:
        record = head.transaction_log.read_one(number)
        return None if record is None else head.codec.decode(number, record.body)
    except (StorageError, CorruptLogError) as error:
        raise CommitStateUnknownError(f"table {head.name!r}: entry {number} of the transaction may have landed "
                                      f"and cannot be read ({error})") from error


def _is_ours(stored: Transaction, write_id: str, transaction_id: str) -> bool:
    """Our write id in our transaction. The write id alone is not enough: an attempt of the
    transaction that was aborted after losing a race put an entry of the same write under another
    transaction id."""
    member = stored.member_of
    return stored.write_id == write_id and member is not None and member.transaction_id == transaction_id


@dataclass(frozen=True)
class AppendedEntries:
    """One table's entries of a transaction: their numbers, and the state after each (as if committed)."""

    numbers: tuple[int, ...]
    states: tuple[TableState, ...]


# After a lost race, a table's transactions append one table at a time for this long: at once they
# would mostly lose again, and each lost attempt costs an abort and a voided entry per table.
CONTENDED_FOR_S = 5.0


def contended(heads: Sequence[TableHead]) -> bool:
    """Whether any of ``heads`` lost a race for a number within :data:`CONTENDED_FOR_S`."""
    now = time.monotonic()
    return any(now - head.lost_race_at < CONTENDED_FOR_S for head in heads)


def append_entries(parts: Sequence[tuple[TableHead, Sequence[BuildTransaction]]], member: TransactionMember,
                   at_once: bool) -> list[AppendedEntries]:
    """Appends each table's entries of ``member``'s transaction, the tables in the order given.

    ``at_once``: every table's first entry is put at the same time, on the state each head holds,
    one attempt each (two puts' latency, not the sum, when nobody races); :class:`LostRace` if any
    number was taken, and the caller aborts the transaction and appends again one table at a
    time. In that order two transactions over the same tables meet in the same order, so neither
    waits on an entry of the other while holding one it waits for.
    """
    if not at_once or len(parts) == 1:
        return [_append_table(head, builds, member, race_once=False) for head, builds in parts]
    results: list[AppendedEntries | BaseException | None] = [None] * len(parts)

    def append(index: int) -> None:
        head, builds = parts[index]
        try:
            results[index] = _append_table(head, builds, member, race_once=True)
        except BaseException as error:  # handed to the calling thread below
            results[index] = error

    # The first table in this thread, the others on threads of their own, all joined before any
    # result is used: every put is known to have landed or not before anything is decided.
    threads = [threading.Thread(target=append, args=(i,), name="sleeper-transaction") for i in range(1, len(parts))]
    for thread in threads:
        thread.start()
    append(0)
    for thread in threads:
        thread.join()
    errors = [r for r in results if isinstance(r, BaseException)]
    if errors:
        raise next((e for e in errors if not isinstance(e, LostRace)), errors[0])
    return [r for r in results if isinstance(r, AppendedEntries)]


def _append_table(head: TableHead, builds: Sequence[BuildTransaction], member: TransactionMember,
                  race_once: bool) -> AppendedEntries:
    numbers: list[int] = []
    states: list[TableState] = []
    after: TableState | None = None
    for build in builds:
        number, after = append_member(head, as_member(build, member), after, race_once=race_once and not numbers)
        numbers.append(number)
        states.append(after)
    return AppendedEntries(tuple(numbers), tuple(states))

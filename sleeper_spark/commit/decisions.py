"""The decisions of multi-table transactions, as readers and writers of the tables meet them (ADR 0016).

An entry of a multi-table transaction (``member_of`` set) is folded only after its transaction
is decided:

- a decision is read from entry 1 of the transaction's own log and cached: it never changes;
- no decision yet, before ``decide_by``: wait, polling with the commit retry policy's back-off,
  never past ``decide_by``;
- no decision at ``decide_by``: put ``aborted`` ourselves. Exactly one decision wins the
  conditional put, so if the writer's ``committed`` landed first, that is what we read.

So a writer killed between its appends and its decision holds the tables up for at most its
lease, and every reader of every table folds the transaction the same way.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone

from sleeper_spark.config import RetryPolicy
from sleeper_spark.errors import CommitStateUnknownError, ConfigError, StorageError
from sleeper_spark.log import TransactionLog, TransactionNumberTakenError
from sleeper_spark.models import FoldedTransaction, Transaction, TransactionMember, VoidedEntry
from sleeper_spark.models.transactions import TransactionDecision

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]
OpenDecisionLog = Callable[[str], TransactionLog]
_PUT_ATTEMPTS = 8
# A waiting reader polls at least this often: a decision usually follows its entries within milliseconds.
_POLL_MAX_S = 0.1


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


class DecisionBook:
    """The decision logs of one catalog, and the decisions this process has read (cached)."""

    def __init__(self, open_log: OpenDecisionLog, retry: RetryPolicy, clock: Clock = _utc_now,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._open_log = open_log
        self._retry = retry
        self._clock = clock
        self._sleep = sleep
        self._known: dict[str, TransactionDecision] = {}
        self._lock = threading.Lock()

    def now(self) -> datetime:
        return self._clock()

    def known(self, transaction_id: str) -> TransactionDecision | None:
        """The decision if this process has read or made it, without asking the store."""
        with self._lock:
            return self._known.get(transaction_id)

    def read(self, transaction_id: str) -> TransactionDecision | None:
        """The stored decision, or ``None`` while the transaction is undecided."""
        known = self.known(transaction_id)
        if known is not None:
            return known
        record = self._open_log(transaction_id).read_one(1)
        return None if record is None else self._remember(TransactionDecision.decode(record.body))

    def resolve(self, member: TransactionMember, table: str) -> TransactionDecision:
        """The decision of ``member``'s transaction, waiting for it at most until ``decide_by``.

        A read of the decision that fails is tried again while there is time; at ``decide_by`` the
        conditional put of ``aborted`` settles it either way (and raises if the store keeps failing).
        """
        decision = self._poll(member.transaction_id)
        delay = self._retry.base_delay_s or 0.005
        waited = False
        while decision is None:
            left = (member.decide_by - self._clock()).total_seconds()
            if left <= 0:
                log.warning("table %s: transaction %s was not decided by %s; rolling it back", table,
                            member.transaction_id, member.decide_by.isoformat())
                return self.decide(TransactionDecision(transaction_id=member.transaction_id, outcome="aborted",
                                                       decided_at=self._clock(), decided_by="reader"))
            if not waited:
                log.info("table %s: waiting up to %.1f s for transaction %s to be decided", table, left,
                         member.transaction_id)
                waited = True
            self._sleep(min(delay, left))
            delay = min(_POLL_MAX_S, max(self._retry.max_delay_s, 0.001), delay * 2)
            decision = self._poll(member.transaction_id)
        return decision

    def _poll(self, transaction_id: str) -> TransactionDecision | None:
        try:
            return self.read(transaction_id)
        except StorageError as error:
            log.info("transaction %s: reading its decision failed (%s); trying again", transaction_id, error)
            return None

    def decide(self, decision: TransactionDecision) -> TransactionDecision:
        """Puts ``decision`` unless one is stored already; returns the decision that stands.

        A put whose answer was lost, that was throttled or that failed is tried again (a
        conditional put lands once however often it is sent); :class:`CommitStateUnknownError`
        if neither the puts nor the reads could tell after a bounded number of tries.
        """
        decision_log = self._open_log(decision.transaction_id)
        body = decision.encode()
        for attempt in range(_PUT_ATTEMPTS):
            try:
                decision_log.append(1, body)
            except TransactionNumberTakenError:
                pass  # someone decided first: read what stands
            except StorageError as error:  # the answer lost, throttled, or refused: it may have landed
                log.warning("transaction %s: putting its decision: %s; reading it back", decision.transaction_id,
                            error)
            else:
                return self._remember(decision)
            stored = self._poll(decision.transaction_id)
            if stored is not None:
                return stored
            self._sleep(min(self._retry.max_delay_s, (self._retry.base_delay_s or 0.005) * 2**attempt))
        raise CommitStateUnknownError(
            f"transaction {decision.transaction_id}: could not store or read its decision after {_PUT_ATTEMPTS} "
            "tries; its tables wait for the decision until its lease ends, then roll it back. Staged files are kept"
        )

    def _remember(self, decision: TransactionDecision) -> TransactionDecision:
        with self._lock:
            return self._known.setdefault(decision.transaction_id, decision)


class MemberEntries:
    """How one table's reader folds the entries of multi-table transactions: as written once
    their transaction is committed, as a no-op once aborted (see the module doc)."""

    def __init__(self, book: DecisionBook | None, table_id: str, table: str) -> None:
        self._book = book
        self._table_id = table_id
        self._table = table

    def resolved(self, number: int, txn: Transaction) -> FoldedTransaction:
        member = txn.member_of
        if member is None:
            return txn
        if self._book is None:
            raise ConfigError(f"table {self._table!r}: transaction {number} is part of a multi-table transaction, "
                              "which this reader was opened without the catalog's decisions for; open the table "
                              "through its Catalog")
        if self._book.resolve(member, self._table).counts(self._table_id, number):
            return txn
        return VoidedEntry(snapshot_id=txn.snapshot_id, committed_at=txn.committed_at, operation="aborted",
                           write_id=txn.write_id, metadata=txn.metadata)

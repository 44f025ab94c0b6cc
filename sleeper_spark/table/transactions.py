"""Atomic commits across tables: ``with catalog.transaction() as tx`` (ADR 0016).

Inside the block each ``tx.write`` / ``tx.delete_where`` runs the table's usual write path up to
its commit: the files are written and the table's transaction is built and checked, but nothing
is appended (see :class:`~sleeper_spark.commit.StagingHead`). Leaving the block commits:

1. each table's entry is appended, naming the transaction and its lease (``decide_by``): all
   tables at once on a first attempt; after a lost race for a number, that attempt is aborted
   and the transaction appends again one table at a time, in the order of their ids (two
   transactions over the same tables meet in the same order, so neither waits on the other in
   a circle; see :func:`~sleeper_spark.commit.append_entries`);
2. one decision record, ``committed`` with every entry's number, is put with a conditional write;
3. the tables' heads take the state with the entries folded in, and publishing runs as after
   any commit.

Anything that fails before the decision, or an exception in the block, ends in ``aborted``
(put only if an entry was appended): every entry folds as a no-op, the staged files are deleted,
and the error is raised. Every table gets its new version, or none does.

**Reading several tables as of one point.** Reading table a and then table b never shows a
transaction in a but not in b: a folds an entry only once its transaction is committed, and by
then b's log holds b's entry, which b's later read folds. The other way round, b's read may show
a transaction committed after a was read. :func:`consistent_versions` closes that gap: it reads
every table, then, for each committed transaction a table's state holds, brings every other
table of it up to at least that transaction's entry there (the decision record lists the
numbers), until nothing moves. The entries it needs are in the logs already, so this ends.
"""

from __future__ import annotations

import copy
import json
import logging
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Any

import pyarrow.compute as pc

from sleeper_spark.commit import (
    TRANSACTION_KEY,
    AppendedEntries,
    LostRace,
    StagingHead,
    append_entries,
    contended,
)
from sleeper_spark.errors import CommitFailedError, ConfigError, SleeperSparkError
from sleeper_spark.models import Snapshot, TransactionMember
from sleeper_spark.models.columnar import added_paths
from sleeper_spark.models.transactions import TransactionDecision
from sleeper_spark.state import TableState
from sleeper_spark.table.writes import delete_staged

if TYPE_CHECKING:
    from sleeper_spark.table.catalog import Catalog
    from sleeper_spark.table.table import Table

log = logging.getLogger(__name__)

DEFAULT_LEASE_S = 30.0
# One decision record lists every table's entries; DynamoDB items stop at 400 KB.
MAX_TABLES = 1000
# Transactions over more tables append one table at a time: a thread per table would cost more.
MAX_AT_ONCE = 16
# Each round of a consistent read raises at least one table's version to an entry already in its log.
_MAX_ROUNDS = 1000


@dataclass(frozen=True)
class TransactionResult:
    """A committed multi-table transaction: its id and each table's new snapshots, by table name."""

    transaction_id: str
    snapshots: Mapping[str, tuple[Snapshot, ...]]

    def version(self, name: str) -> int:
        """The table's version after the transaction."""
        return self.snapshots[name][-1].version


@dataclass
class _Staged:
    """One table of the transaction: the catalog's table, the view of it whose commits are staged
    (``view``, with ``head`` as its head), and the modes of the writes staged so far."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.head = StagingHead(table.head)
        self.view = copy.copy(table)  # the table, with every commit going to the staging head
        self.view.head, self.view.group_commit = self.head, None
        self.modes: list[str] = []


class CatalogTransaction:
    """One multi-table transaction; use it as a context manager (see the module doc)."""

    def __init__(self, catalog: Catalog, lease_s: float = DEFAULT_LEASE_S, max_tables: int = MAX_TABLES) -> None:
        if not isinstance(lease_s, (int, float)) or isinstance(lease_s, bool) or lease_s <= 0:
            raise ConfigError(f"a transaction's lease must be a positive number of seconds, not {lease_s!r}")
        self._catalog = catalog
        self._lease = timedelta(seconds=float(lease_s))
        self._max_tables = max_tables
        self._staged: dict[str, _Staged] = {}  # by table id, in staging order
        self._state = "new"  # new -> open -> committed | aborted
        self.transaction_id = uuid.uuid4().hex
        self.result: TransactionResult | None = None

    # -- the block -----------------------------------------------------------------------

    def __enter__(self) -> CatalogTransaction:
        if self._state != "new":
            raise ConfigError(f"transaction {self.transaction_id} was {self._state} already: start a new one with "
                              "catalog.transaction(); nothing was committed")
        self._state = "open"
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if error is not None:
            if self._state == "open":  # not after a commit() the block called itself
                self._discard()
            return  # the block's own exception goes on up
        if self._state != "committed":  # unless the block called commit() itself
            self.commit()

    def write(self, name: str, data: Any, mode: str = "append", metadata: Mapping[str, str] | None = None,
              merge_schema: bool = False, partition_overwrite_mode: str | None = None,
              replace_where: str | None = None) -> Snapshot:
        """Stages a write of ``data`` (Arrow data or a Spark DataFrame) to table ``name``, as
        :meth:`Table.write` would make it; returns the snapshot it would be if nothing else
        committed first. Committed with the rest of the transaction when the block ends."""
        staged = self._stage(name, mode)
        return staged.view.write(data, mode=mode, metadata=metadata, merge_schema=merge_schema,
                                  partition_overwrite_mode=partition_overwrite_mode, replace_where=replace_where)

    def delete_where(self, name: str, predicate: Any, spark: Any = None) -> Snapshot:
        """Stages :meth:`Table.delete_where` on table ``name`` (a Spark SQL condition needs ``spark``)."""
        staged = self._stage(name, "delete")
        return staged.view.delete_where(spark, predicate)

    # -- committing ----------------------------------------------------------------------

    def commit(self) -> TransactionResult:
        """Commits every staged write (leaving the block does this); see the module doc."""
        self._check_open()
        self._state = "committing"
        order = sorted(t for t, staged in self._staged.items() if staged.head.builds)  # a write may stage nothing
        if not order:
            self._state = "committed"
            self.result = TransactionResult(self.transaction_id, {})
            return self.result
        started = time.monotonic()
        parts = [(self._staged[t].table.head, self._staged[t].head.builds) for t in order]
        try:
            for head, _ in parts:
                if not head.is_fresh():
                    head.catch_up()  # read before any entry is held: waiting here blocks nobody
        except BaseException as error:
            self._abort(appended=False, cause=error)
            raise
        at_once = 1 < len(parts) <= MAX_AT_ONCE and not contended([head for head, _ in parts])
        while True:
            member = TransactionMember(transaction_id=self.transaction_id, tables=tuple(order),
                                       decide_by=self._catalog.decisions.now() + self._lease)
            try:
                appended = append_entries(parts, member, at_once)
                break
            except LostRace as lost:
                if not self._abort_attempt(lost):
                    raise CommitFailedError(f"transaction {self.transaction_id}: {lost}, and its abort could not "
                                            "be stored; nothing was committed") from None
                at_once = False  # again, one table at a time, as a new transaction
                self.transaction_id = uuid.uuid4().hex
            except BaseException as error:
                self._abort(appended=True, cause=error)
                raise
        return self._decide(order, appended, started)

    def _decide(self, order: list[str], appended: list[AppendedEntries], started: float) -> TransactionResult:
        decisions = self._catalog.decisions
        by_table = dict(zip(order, appended, strict=True))
        names = {table_id: self._staged[table_id].table.name for table_id in order}
        decision = decisions.decide(TransactionDecision(
            transaction_id=self.transaction_id, outcome="committed", decided_at=decisions.now(), decided_by="writer",
            versions={t: a.numbers for t, a in by_table.items()}))
        if decision.outcome != "committed":
            self._state = "aborted"
            self._delete_staged()
            raise CommitFailedError(
                f"transaction {self.transaction_id} was rolled back by a reader: committing it took longer than its "
                f"lease ({self._lease.total_seconds():g} s); nothing was committed. Give catalog.transaction() a "
                "longer lease_s")
        self._state = "committed"
        made = {names[t]: tuple(s.latest for s, n in zip(a.states, a.numbers, strict=True)
                                if s.latest is not None and s.latest.version == n) for t, a in by_table.items()}
        self.result = TransactionResult(self.transaction_id, made)
        self._after_commit(by_table, started)
        return self.result

    def _abort_attempt(self, lost: LostRace) -> bool:
        """Aborts an attempt that lost a race for a number (its staged files are kept for the next)."""
        try:
            self._store_abort()
        except SleeperSparkError as error:
            log.warning("transaction %s: %s; storing its abort failed: %s", self.transaction_id, lost, error)
            return False
        log.info("transaction %s: %s; trying again one table at a time", self.transaction_id, lost)
        return True

    def _after_commit(self, appended: dict[str, AppendedEntries], started: float) -> None:
        """Each table's head takes the state with its entries folded in (the decision is known to
        say committed), then what follows a commit runs: a state snapshot if due, publishing,
        automatic compaction. Nothing here can fail the committed transaction."""
        for table_id, entries in appended.items():
            head = self._staged[table_id].table.head
            head.adopt(entries.states[-1])
            snapshot = entries.states[-1].latest
            if snapshot is not None and snapshot.version == entries.numbers[-1]:
                head.finished(snapshot, 1, started)
        log.info("transaction %s committed %d table(s) in %.1f ms", self.transaction_id, len(appended),
                 (time.monotonic() - started) * 1000)

    # -- staging and aborting ------------------------------------------------------------

    def _check_open(self) -> None:
        if self._state != "open":
            was = "not open" if self._state == "new" else self._state
            raise ConfigError(f"transaction {self.transaction_id} is {was}: use it inside `with catalog.transaction() "
                              "as tx:`, once; nothing was committed")

    def _stage(self, name: str, mode: str) -> _Staged:
        self._check_open()
        if mode not in ("append", "overwrite", "delete"):
            raise ConfigError(f"write mode must be 'append' or 'overwrite', not {mode!r}; nothing was written")
        table = self._catalog.table(name)
        staged = self._staged.get(table.table_id)
        if staged is None:
            if len(self._staged) >= self._max_tables:
                raise ConfigError(f"a transaction holds at most {self._max_tables} tables (one decision record lists "
                                  "them all); split the work into several transactions; nothing was committed")
            staged = self._staged[table.table_id] = _Staged(table)
        if "overwrite" in staged.modes or (mode == "overwrite" and staged.modes):
            raise ConfigError(
                f"table {name!r} is written more than once in this transaction, and one of the writes is an "
                f"overwrite ({', '.join([*staged.modes, mode])}): an overwrite replaces the whole table, so give it "
                "all of the table's data in one write; nothing was committed")
        staged.modes.append(mode)
        return staged

    def _discard(self) -> None:
        """The block raised: nothing was appended; delete what was staged."""
        self._state = "aborted"
        self._delete_staged()

    def _abort(self, appended: bool, cause: BaseException) -> None:
        self._state = "aborted"
        if appended:
            try:
                self._store_abort()
            except SleeperSparkError as error:
                # An entry may have landed and stays undecided: readers roll it back when its lease ends.
                log.warning("transaction %s: could not store its abort (%s); its tables roll it back when its "
                            "lease ends. Staged files are kept for vacuum", self.transaction_id, error)
                return
        log.info("transaction %s aborted: %s", self.transaction_id, cause)
        self._delete_staged()  # every entry that landed is void: the files are the transaction's alone

    def _store_abort(self) -> None:
        """Puts ``aborted`` as the decision of the current attempt (raises what the put raises)."""
        decisions = self._catalog.decisions
        decision = decisions.decide(TransactionDecision(transaction_id=self.transaction_id, outcome="aborted",
                                                        decided_at=decisions.now(), decided_by="writer"))
        assert decision.outcome == "aborted", "only this writer puts committed, and it did not"

    def _delete_staged(self) -> None:
        for staged in self._staged.values():
            paths = [path for txn in staged.head.staged for path in added_paths(txn)]
            if paths:
                delete_staged(staged.table.store, staged.table.root, paths)


# -- reading several tables as of one point ------------------------------------------------


@dataclass(frozen=True)
class TransactionRecord:
    """One committed multi-table transaction, as the tables' histories show it."""

    transaction_id: str
    committed_at: datetime  # of its newest entry
    versions: dict[str, tuple[int, ...]]  # table name -> the versions it made there


def _transaction_rows(state: TableState) -> list[tuple[str, int, datetime]]:
    """``(transaction id, version, committed_at)`` of each snapshot of ``state`` made by a transaction."""
    history = state.history.table()
    if not history.num_rows:
        return []
    marked = history.filter(pc.fill_null(pc.match_substring(history.column("metadata"), f'"{TRANSACTION_KEY}"'),
                                          False))
    rows = []
    for metadata, version, at in zip(marked.column("metadata").to_pylist(), marked.column("version").to_pylist(),
                                     marked.column("committed_at").to_pylist(), strict=True):
        transaction_id = json.loads(metadata).get(TRANSACTION_KEY)
        if isinstance(transaction_id, str):
            rows.append((transaction_id, int(version), at))
    return rows


def consistent_versions(catalog: Catalog, names: Sequence[str]) -> dict[str, int]:
    """Each table's version as of one point (see the module doc); by table name."""
    if isinstance(names, str) or not names:
        raise ConfigError("read_consistent takes a list of table names, e.g. ['sales.orders', 'sales.lines']")
    tables: dict[str, Table] = {}
    for name in names:
        table = catalog.table(name)
        tables[table.table_id] = table
    states = {table_id: table.head.state() for table_id, table in tables.items()}
    for _ in range(_MAX_ROUNDS):
        wanted: dict[str, int] = {}
        for state in states.values():
            for transaction_id, _version, _at in _transaction_rows(state):
                decision = catalog.decisions.read(transaction_id)
                if decision is None or decision.outcome != "committed":
                    continue  # cannot happen for a folded entry; nothing to bring up
                for table_id, numbers in decision.versions.items():
                    if table_id in states and states[table_id].version < max(numbers):
                        wanted[table_id] = max(wanted.get(table_id, 0), max(numbers))
        if not wanted:
            return {tables[table_id].name: state.version for table_id, state in states.items()}
        for table_id, version in wanted.items():
            states[table_id] = tables[table_id].head.state_at(version)
    raise AssertionError("the tables' versions kept moving")  # pragma: no cover: each round moves up to logged entries


def recent_transactions(catalog: Catalog, names: Sequence[str], limit: int = 100) -> list[TransactionRecord]:
    """The newest ``limit`` committed multi-table transactions in the histories of ``names``, newest first."""
    found: dict[str, dict[str, list[int]]] = {}
    newest: dict[str, datetime] = {}
    for name in names:
        table = catalog.table(name)
        for transaction_id, version, at in _transaction_rows(table.state()):
            found.setdefault(transaction_id, {}).setdefault(table.name, []).append(version)
            newest[transaction_id] = max(newest.get(transaction_id, at), at)
    ordered = sorted(found, key=lambda t: newest[t], reverse=True)[:limit]
    return [TransactionRecord(t, newest[t], {name: tuple(v) for name, v in sorted(found[t].items())})
            for t in ordered]

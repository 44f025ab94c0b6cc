"""What must hold across the tables of multi-table transactions: each transaction whole or absent.

For every entry of a multi-table transaction in any of the tables' logs:

* its transaction is decided (a reader that met it after its lease decided it);
* committed: the decision lists this entry's number for this table, each table the decision lists
  has entries of the transaction at exactly the numbers listed, and each shows in that table's
  history at that version, naming the transaction;
* aborted: no history of any table shows the transaction.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import sleeper_spark as ss
from sleeper_spark.commit import TRANSACTION_KEY
from tests.invariants import InvariantViolation


def check_transactions_whole(catalog: ss.Catalog, names: Sequence[str]) -> dict[str, int]:
    """Raises :class:`InvariantViolation` listing each transaction found torn; returns counts by outcome."""
    tables = {catalog.table(name).table_id: catalog.table(name) for name in names}
    entries: dict[str, dict[str, set[int]]] = defaultdict(lambda: defaultdict(set))
    shown: dict[str, dict[str, set[int]]] = defaultdict(lambda: defaultdict(set))
    for table_id, table in tables.items():
        head = table.head
        for entry in head.entries():
            member = entry.stored_transaction().member_of
            if member is not None:
                entries[member.transaction_id][table_id].add(entry.number)
        for snapshot in table.history():
            if TRANSACTION_KEY in snapshot.metadata:
                shown[snapshot.metadata[TRANSACTION_KEY]][table_id].add(snapshot.version)
    problems: list[str] = []
    outcomes: dict[str, int] = defaultdict(int)
    for transaction_id, by_table in entries.items():
        decision = catalog.decisions.read(transaction_id)
        if decision is None:
            problems.append(f"transaction {transaction_id} is undecided after every table was read")
            continue
        outcomes[decision.outcome] += 1
        if decision.outcome == "aborted":
            if shown.get(transaction_id):
                problems.append(f"aborted transaction {transaction_id} shows in {dict(shown[transaction_id])}")
            continue
        listed = {t: set(numbers) for t, numbers in decision.versions.items() if t in tables}
        if {t: n for t, n in by_table.items()} != listed:
            problems.append(f"committed transaction {transaction_id}: entries {dict(by_table)}, decision {listed}")
        if {t: n for t, n in shown.get(transaction_id, {}).items()} != listed:
            problems.append(f"committed transaction {transaction_id}: histories show "
                            f"{dict(shown.get(transaction_id, {}))}, decision lists {listed}")
    for transaction_id in shown:
        if transaction_id not in entries:
            problems.append(f"transaction {transaction_id} shows in a history without an entry in the log")
    if problems:
        raise InvariantViolation("torn transactions:\n  " + "\n  ".join(problems))
    return dict(outcomes)

"""The oracle of every concurrency and fault test: what must hold of a table, always.

* versions run 2, 3, ... without gaps, and each snapshot's parent is the one before it;
* every write that reported success is present exactly once, and nothing that reported failure;
* the rows are exactly those of the successful writes;
* every referenced file exists with its size and checksum;
* the state loaded from a state snapshot equals the state from a full replay of the log.

Writes are identified by ``metadata["writer"]`` and ``metadata["seq"]``, of a snapshot or, in a
version a group commit made, of each of its members; ``check_log_invariants`` checks the rest for
tables whose writes are tagged otherwise (streaming sinks). A group version's counts must be the
sums of its members'.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import sleeper_spark as ss
from sleeper_spark.log import StateSnapshotStore
from sleeper_spark.models import VoidedEntry
from sleeper_spark.state import fold


@dataclass(frozen=True)
class WriteOutcome:
    writer: int
    seq: int
    rows: int
    committed: bool | None  # None: the writer died before it learnt the outcome; 0 or 1 copies allowed


class InvariantViolation(AssertionError):
    pass


def explained(violation: InvariantViolation, reasons: dict[int, str]) -> InvariantViolation:
    """``violation``, with why each write it names as failed-but-present failed (``reasons`` by seq)."""
    seqs = [int(n) for n in re.findall(r"write \(\d+, (\d+)\) reported committed=False", str(violation))]
    return InvariantViolation(f"{violation}" + "".join(
        f"\n--- write {seq} failed with:\n{reasons.get(seq, '?')}" for seq in seqs))


def check_table_invariants(table: ss.Table, outcomes: Iterable[WriteOutcome], *, first_version: int = 2,
                           overwrites: bool = False) -> None:
    """Raises :class:`InvariantViolation` listing every invariant the table breaks.

    With ``overwrites``, the table may hold overwrites (``operation == "overwrite"``, tagged like
    any write): the rows it must hold are found by replaying its history in version order, an
    overwrite dropping every row before it, and compared exactly, as a multiset of ``(writer,
    seq)`` per row, with the rows the table holds (its ``writer`` and ``seq`` columns). Each
    overwrite must also report as removed exactly the rows that were there.
    """
    outcomes = list(outcomes)
    if overwrites:
        history = table.history()
        problems = _outcome_problems(history, outcomes, first_version, voided_numbers(table))
        problems.extend(_replayed_row_problems(table, history, outcomes))
        _raise_if_any(problems)
        return
    history = table.history()
    problems = _history_problems(history, first_version, voided_numbers(table))

    seen = Counter(key for s in history for key in tagged_writes(s))
    expected_rows = 0
    for outcome in outcomes:
        key = (outcome.writer, outcome.seq)
        count = seen.get(key, 0)
        allowed = {0, 1} if outcome.committed is None else {1 if outcome.committed else 0}
        if count not in allowed:
            problems.append(f"write {key} reported committed={outcome.committed} but appears {count} times")
        expected_rows += outcome.rows * count
    known = {(o.writer, o.seq) for o in outcomes}
    strangers = [key for key in seen if key not in known]
    if strangers:
        problems.append(f"writes nobody made are in the table: {strangers[:5]}")
    actual_rows = table.scan().num_rows
    if actual_rows != expected_rows:
        problems.append(f"the table holds {actual_rows} rows, the successful writes wrote {expected_rows}")

    problems.extend(_file_problems(table))
    problems.extend(_replay_problems(table))
    _raise_if_any(problems)


def _outcome_problems(history: list[ss.Snapshot], outcomes: list[WriteOutcome], first_version: int,
                      voided: set[int]) -> list[str]:
    """History, each write's count, files and replay; the row count is left to the caller."""
    problems = _history_problems(history, first_version, voided)
    seen = Counter(key for s in history for key in tagged_writes(s))
    for outcome in outcomes:
        key = (outcome.writer, outcome.seq)
        count = seen.get(key, 0)
        allowed = {0, 1} if outcome.committed is None else {1 if outcome.committed else 0}
        if count not in allowed:
            problems.append(f"write {key} reported committed={outcome.committed} but appears {count} times")
    known = {(o.writer, o.seq) for o in outcomes}
    strangers = [key for key in seen if key not in known]
    if strangers:
        problems.append(f"writes nobody made are in the table: {strangers[:5]}")
    return problems


def _replayed_row_problems(table: ss.Table, history: list[ss.Snapshot], outcomes: list[WriteOutcome]) -> list[str]:
    rows_of = {(o.writer, o.seq): o.rows for o in outcomes}
    expected: Counter[tuple[int, int]] = Counter()
    problems = []
    for snapshot in history:
        if snapshot.operation == "overwrite":
            if snapshot.rows_removed != sum(expected.values()):
                problems.append(f"overwrite at version {snapshot.version} removed {snapshot.rows_removed} rows, "
                                f"the table held {sum(expected.values())}")
            expected = Counter()
        if snapshot.operation in ("append", "overwrite"):
            for key in tagged_writes(snapshot):
                expected[key] += rows_of.get(key, 0)
    scanned = table.scan(columns=["writer", "seq"])
    actual = Counter(zip(scanned.column("writer").to_pylist(), scanned.column("seq").to_pylist(), strict=True))
    expected = +expected
    if actual != expected:
        missing = expected - actual
        extra = actual - expected
        problems.append(f"the rows differ from a replay of the history: missing {dict(list(missing.items())[:5])}, "
                        f"unexpected {dict(list(extra.items())[:5])} ({sum(actual.values())} rows, "
                        f"expected {sum(expected.values())})")
    problems.extend(_file_problems(table))
    problems.extend(_replay_problems(table))
    return problems


def tagged_writes(snapshot: ss.Snapshot) -> list[tuple[int, int]]:
    """The ``(writer, seq)`` of each write a version holds: its members', or its own."""
    tags = [m.metadata for m in snapshot.members] if snapshot.members else [snapshot.metadata]
    return [(int(t["writer"]), int(t["seq"])) for t in tags if "writer" in t]


def check_log_invariants(table: ss.Table, *, first_version: int = 2) -> None:
    """The invariants that do not depend on how writes are tagged: history, files, replay."""
    problems = _history_problems(table.history(), first_version, voided_numbers(table))
    problems.extend(_file_problems(table))
    problems.extend(_replay_problems(table))
    _raise_if_any(problems)


def voided_numbers(table: ss.Table) -> set[int]:
    """The log numbers of entries of aborted multi-table transactions: they make no snapshot."""
    head = table.head
    voided = set()
    for record in head.transaction_log.read():
        txn = head.codec.decode(record.number, record.body)
        if txn.member_of is not None and isinstance(head.members.resolved(record.number, txn), VoidedEntry):
            voided.add(record.number)
    return voided


def _history_problems(history: list[ss.Snapshot], first_version: int, voided: set[int] | None = None) -> list[str]:
    problems: list[str] = []
    versions = [s.version for s in history]
    voided = voided or set()
    last = max([*versions, *voided], default=first_version - 1)
    expected = [v for v in range(first_version, last + 1) if v not in voided]
    if versions != expected:
        problems.append(f"versions are not contiguous from {first_version} (but for the voided entries "
                        f"{sorted(voided)}): {versions}")
    for previous, current in itertools.pairwise(history):
        if current.parent_id != previous.snapshot_id:
            problems.append(f"version {current.version} names parent {current.parent_id}, not {previous.snapshot_id}")
    if history and first_version == 2 and history[0].parent_id is not None:
        problems.append("the first snapshot has a parent")
    for snapshot in history:
        members = snapshot.members
        if members and (snapshot.rows_added, snapshot.files_added) != (sum(m.rows_added for m in members),
                                                                        sum(m.files_added for m in members)):
            problems.append(f"version {snapshot.version}: its counts are not the sums of its members'")
        if len({m.write_id for m in members}) != len(members):
            problems.append(f"version {snapshot.version} holds one write twice")
    ids = Counter(m.write_id for s in history for m in s.members) + Counter(
        s.write_id for s in history if s.write_id is not None and not s.members)
    doubled = [write_id for write_id, count in ids.items() if count > 1]
    if doubled:
        problems.append(f"writes committed in more than one version: {doubled[:5]}")
    return problems


def _file_problems(table: ss.Table) -> list[str]:
    return [f"file {problem.path}: {problem.problem} {problem.detail}" for problem in table.verify().problems]


def _raise_if_any(problems: list[str]) -> None:
    if problems:
        raise InvariantViolation("table invariants violated:\n  " + "\n  ".join(problems))


def _replay_problems(table: ss.Table) -> list[str]:
    """The state as loaded (state snapshot + tail) must equal a full replay of the log."""
    head = table.head
    loaded = head.catch_up()
    if head.transaction_log.first_number() != 1:
        return []  # truncated: a full replay is impossible by design
    replayed = fold((r.number, head.members.resolved(r.number, head.codec.decode(r.number, r.body)))
                    for r in head.transaction_log.read())
    problems = []
    if replayed != loaded:
        problems.append(f"replayed state (version {replayed.version}) differs from the loaded one ({loaded.version})")
    snapshots: StateSnapshotStore = head.state_snapshots
    for number in snapshots.numbers():
        from_snapshot = fold(
            ((r.number, head.members.resolved(r.number, head.codec.decode(r.number, r.body)))
             for r in head.transaction_log.read(after=number)),
            snapshots.read(number),
        )
        if from_snapshot != replayed:
            problems.append(f"state snapshot {number} + tail differs from a full replay")
    return problems

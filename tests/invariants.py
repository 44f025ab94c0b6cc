"""The oracle of every concurrency and fault test: what must hold of a table, always.

* versions run 2, 3, ... without gaps, and each snapshot's parent is the one before it;
* every write that reported success is present exactly once, and nothing that reported failure;
* the rows are exactly those of the successful writes;
* every referenced file exists with its size and checksum;
* the state loaded from a state snapshot equals the state from a full replay of the log.

Writes are identified by ``metadata["writer"]`` and ``metadata["seq"]``.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import sleeper_spark as ss
from sleeper_spark.log import StateSnapshotStore
from sleeper_spark.state import fold


@dataclass(frozen=True)
class WriteOutcome:
    writer: int
    seq: int
    rows: int
    committed: bool | None  # None: the writer died before it learnt the outcome; 0 or 1 copies allowed


class InvariantViolation(AssertionError):
    pass


def check_table_invariants(table: ss.Table, outcomes: Iterable[WriteOutcome], *, first_version: int = 2) -> None:
    outcomes = list(outcomes)
    history = table.history()
    problems: list[str] = []

    versions = [s.version for s in history]
    if versions != list(range(first_version, first_version + len(history))):
        problems.append(f"versions are not contiguous from {first_version}: {versions}")
    for previous, current in itertools.pairwise(history):
        if current.parent_id != previous.snapshot_id:
            problems.append(f"version {current.version} names parent {current.parent_id}, not {previous.snapshot_id}")
    if history and first_version == 2 and history[0].parent_id is not None:
        problems.append("the first snapshot has a parent")

    seen = Counter(
        (int(s.metadata["writer"]), int(s.metadata["seq"])) for s in history if "writer" in s.metadata
    )
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

    report = table.verify()
    for problem in report.problems:
        problems.append(f"file {problem.path}: {problem.problem} {problem.detail}")

    problems.extend(_replay_problems(table))
    if problems:
        raise InvariantViolation("table invariants violated:\n  " + "\n  ".join(problems))


def _replay_problems(table: ss.Table) -> list[str]:
    """The state as loaded (state snapshot + tail) must equal a full replay of the log."""
    head = table.head
    loaded = head.catch_up()
    if head.log.first_number() != 1:
        return []  # truncated: a full replay is impossible by design
    replayed = fold((r.number, head.codec.decode(r.number, r.body)) for r in head.log.read())
    problems = []
    if replayed != loaded:
        problems.append(f"replayed state (version {replayed.version}) differs from the loaded one ({loaded.version})")
    snapshots: StateSnapshotStore = head.state_snapshots
    for number in snapshots.numbers():
        from_snapshot = fold(
            ((r.number, head.codec.decode(r.number, r.body)) for r in head.log.read(after=number)),
            snapshots.read(number),
        )
        if from_snapshot != replayed:
            problems.append(f"state snapshot {number} + tail differs from a full replay")
    return problems

"""What maintenance must keep: the versions inside the time-travel window and their files.

The *retained versions* at a cutoff instant are the current version, every version committed
after the cutoff, and the version that was current at the cutoff — so time travel to any
instant inside the window still finds its version and its files. The oldest of them is the
*floor*.

The files a retained version may read are the files of the floor's state plus every file added
by a later transaction (a file is only ever added by a transaction, so that union covers every
version from the floor on). :func:`read_log_facts` learns them, and the spilled bodies the log
still points to, in one pass over the log.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from sleeper_spark.errors import CorruptLogError
from sleeper_spark.maintenance.progress import Progress, no_progress
from sleeper_spark.models import Snapshot
from sleeper_spark.models.columnar import added_paths
from sleeper_spark.state import TableState, fold

if TYPE_CHECKING:
    from sleeper_spark.table import Table


def retention_floor(history: Iterable[Snapshot], cutoff: datetime) -> int:
    """The oldest retained version: the newest one committed at or before ``cutoff`` (else 1)."""
    floor = 1
    for snapshot in history:
        if snapshot.committed_at <= cutoff:
            floor = max(floor, snapshot.version)
    return floor


@dataclass
class LogFacts:
    """What one pass over a table's log tells vacuum."""

    first: int  # the lowest transaction number still in the log
    floor: int  # the oldest retained version (raised to the oldest reachable one if need be)
    base: int | None  # the state snapshot the floor's state was rebuilt from; None: the log alone
    retained_files: set[str] = field(default_factory=set)  # table-relative paths
    referenced_bodies: set[str] = field(default_factory=set)  # table-relative keys of spilled bodies


def read_log_facts(table: Table, current: int, state_numbers: Sequence[int], floor: int,
                   progress: Progress | None = None) -> LogFacts:
    """The files retained versions may read and the bodies log entries point to.

    ``state_numbers`` are the table's state snapshots (from the caller's listing). If the log was
    truncated past the floor, the floor is raised to the oldest version still reachable.
    """
    progress = progress or no_progress
    head = table.head
    first = head.first_number() or current + 1
    facts = _choose_base(first, floor, state_numbers)
    start = head.read_state_snapshot(facts.base) if facts.base is not None else None
    added_later: set[str] = set()
    state = start
    total = current - first + 1
    for done, entry in enumerate(head.entries(after=first - 1), start=1):
        body = entry.spilled_body
        if body is not None:
            facts.referenced_bodies.add(body)
        if entry.number > (facts.base or 0):
            txn = entry.transaction()
            if entry.number <= facts.floor:
                state = fold([(entry.number, txn)], state)
            else:
                added_later.update(added_paths(txn))
        if done % 100 == 0 or done == total:
            progress("reading the log", done, total)
    facts.retained_files = _files_of(state) | added_later
    return facts


def _choose_base(first: int, floor: int, state_numbers: Sequence[int]) -> LogFacts:
    # A state snapshot is usable only while the log still holds every transaction after it.
    usable = [n for n in state_numbers if n >= first - 1]
    below = [n for n in usable if n <= floor]
    if below:
        return LogFacts(first=first, floor=floor, base=max(below))
    if first == 1:
        return LogFacts(first=first, floor=floor, base=None)
    if not usable:
        raise CorruptLogError(
            f"the log starts at transaction {first} and no state snapshot covers the versions before it"
        )
    oldest = min(usable)
    return LogFacts(first=first, floor=oldest, base=oldest)


def _files_of(state: TableState | None) -> set[str]:
    return set(state.files) if state is not None else set()




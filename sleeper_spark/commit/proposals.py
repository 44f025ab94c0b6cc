"""What a group commit's proposal holds: pure functions of a state and the pending records.

:mod:`sleeper_spark.commit.group` runs the protocol (batching, records, the commit loop); this
module decides, for a state the proposer has read, which pending appends may ride along, which
records are settled once the proposal lands, and which writes a state already holds. Nothing
here does I/O, so each rule is the same wherever it is applied (a proposal, ``commit_pending``,
vacuum's list of protected files).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from pydantic import ValidationError

from sleeper_spark.commit.repeats import idempotent_repeat
from sleeper_spark.log.codec import SPILL_THRESHOLD
from sleeper_spark.log.pending import PendingRecord
from sleeper_spark.models import AddFiles, AppendGroup, Snapshot
from sleeper_spark.models.pending import PendingBatch
from sleeper_spark.state import TableState

# A proposal stops taking other writers' appends at about this many bytes, so that its body
# stays in the log item (a spilled body would cost an object write per attempt).
MAX_PROPOSAL_BYTES = SPILL_THRESHOLD * 3 // 4


@dataclass(frozen=True)
class ListedBatch:
    """A pending record as a proposer lists it: its key and what it holds."""

    key: str
    batch: PendingBatch

    @property
    def order(self) -> tuple[datetime, str]:
        return self.batch.recorded_at, self.key


@dataclass
class Offer:
    """Other writers' pending appends that a state lacks, oldest record first, within the size cap;
    and the keys of the records that are settled once a proposal of them lands (each append in
    it, in the log, a repeat or invalid), which its winner deletes."""

    appends: list[AddFiles] = field(default_factory=list)
    settled: list[str] = field(default_factory=list)


def decode_record(record: PendingRecord) -> PendingBatch | None:
    """The batch a record holds, ``None`` if it cannot be decoded (it is then left out of everything)."""
    try:
        return PendingBatch.decode(record.body)
    except (ValidationError, ValueError):
        return None


def offer(listed: Iterable[ListedBatch], state: TableState, own: list[AddFiles]) -> Offer:
    """What the ``listed`` records offer a proposal after ``state`` that already holds ``own``."""
    batches = sorted(listed, key=lambda b: b.order)
    if not batches:
        return Offer()
    landed = committed_since(min(b.batch.after for b in batches), state)
    taken = {txn.write_id for txn in own}
    waiting = [txn for b in batches for txn in b.batch.members
               if txn.write_id not in landed and txn.write_id not in taken]
    # One presence check for every file the candidates add, not one per candidate.
    present = set(state.files.present([f.path for txn in waiting for f in txn.files]))
    paths = {f.path for txn in own for f in txn.files}
    apps: dict[str, int] = {}
    for txn in own:
        note_app(txn, apps)
    size = sum(_size(txn) for txn in own)
    result = Offer()
    for listed_batch in batches:
        settled = True
        for txn in listed_batch.batch.members:
            if txn.write_id in landed or txn.write_id in taken:
                continue
            if idempotent_repeat(state, txn.app_id, txn.app_version) is not None or not _valid(txn, present, paths):
                continue
            if repeats_within(txn, apps) or size + _size(txn) > MAX_PROPOSAL_BYTES:
                settled = False
                continue
            result.appends.append(txn)
            taken.add(txn.write_id)
            paths.update(f.path for f in txn.files)
            note_app(txn, apps)
            size += _size(txn)
        if settled:
            result.settled.append(listed_batch.key)
    return result


def pending_paths(records: Iterable[PendingRecord]) -> set[str]:
    """The data files the pending records name: vacuum must not take them for garbage."""
    batches = (decode_record(record) for record in records)
    return {f.path for batch in batches if batch is not None for txn in batch.members for f in txn.files}


def transaction(appends: list[AddFiles]) -> AddFiles | AppendGroup:
    """One append as it is; several as a group (whose own ids are fresh: no member's)."""
    if len(appends) == 1:
        return appends[0]
    first = appends[0]
    return AppendGroup(snapshot_id=uuid.uuid4().hex, committed_at=first.committed_at, operation="append",
                       write_id=uuid.uuid4().hex, members=tuple(appends))


def committed_since(after: int, state: TableState) -> dict[str, Snapshot]:
    """The write ids committed in versions above ``after``, with the snapshot of each."""
    landed: dict[str, Snapshot] = {}
    for snapshot in state.history.since(after):
        if snapshot.write_id is not None:
            landed[snapshot.write_id] = snapshot
        for member in snapshot.members:
            landed[member.write_id] = snapshot
    return landed


def repeats_within(txn: AddFiles, apps: dict[str, int]) -> bool:
    """Whether an append already in the proposal has this app at this version or a later one."""
    return txn.app_id is not None and txn.app_version is not None and apps.get(txn.app_id, -1) >= txn.app_version


def note_app(txn: AddFiles, apps: dict[str, int]) -> None:
    if txn.app_id is not None and txn.app_version is not None:
        apps[txn.app_id] = max(txn.app_version, apps.get(txn.app_id, txn.app_version))


def _valid(txn: AddFiles, present: set[str], paths: set[str]) -> bool:
    """What ``validate`` asks of an append, against one presence check: no schema of its own (a
    group's member never sets one) and no file already in the table or in the proposal."""
    return txn.schema_ is None and not any(f.path in present or f.path in paths for f in txn.files)


def _size(txn: AddFiles) -> int:
    # An estimate: a file reference dominates, at a few hundred bytes with its statistics.
    return 300 + 400 * len(txn.files)

"""Vacuum: deleting what no retained version needs, from one listing of the table's folder.

Four kinds of garbage, each deleted only when its object is older than ``older_than`` too —
a job still running may be about to commit a young file, and a committer writes a spilled
body before the log entry that points to it:

* data files (``data/**.parquet``) that no retained version references (see
  :mod:`~sleeper_spark.maintenance.retention`): files replaced by compaction, overwrite or
  delete before the window began, and orphans of failed or aborted writes;
* spilled bodies (``_log/bodies/``) that no log entry points to: left by commit attempts that
  lost their race, or by log truncation that was interrupted;
* state snapshots (``_state/<N>.parquet``) older than the one the oldest retained version is
  rebuilt from. The newest state snapshot is always kept;
* what writers that died half-way through a write left: temporary files on the local disk
  (``<key>.tmp-<uuid>``, of any object; the store's listing hides them, so
  :meth:`LocalObjectStore.abandoned` finds them), and ``put-and-verify`` intent files
  (``<key>.INTENT.<id>``) of the three kinds above. Intents on log entries and on the state
  pointer are never touched: they hold other writers of those keys off until an operator has
  made sure that their writer is gone.

A table published as Iceberg metadata (docs/interop.md) also has the Iceberg snapshots of the
versions below the floor expired, and the metadata files only they needed deleted; a table with a
Delta log has the Delta versions below the floor dropped (a checkpoint of the floor, then the
older commit files and checkpoints deleted). Neither happens in a dry run, which reports the
four kinds above.

``older_than`` must be longer than the longest write job: a job whose files are older than
that when it commits would find them gone.

Cost: one LIST of the table folder (on the local disk, a second walk for temporary files), the
log's own lookup of its first number, and one read
of every transaction still in the log (log truncation keeps that bounded).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from sleeper_spark.commit import pending_paths, utc_now
from sleeper_spark.errors import ConfigError
from sleeper_spark.layout import Kind, intent_target, kind_of, state_snapshot_number
from sleeper_spark.maintenance.locking import maintenance_lock
from sleeper_spark.maintenance.progress import Progress, no_progress
from sleeper_spark.maintenance.retention import read_log_facts, retention_floor
from sleeper_spark.models import VacuumReport
from sleeper_spark.storage import LocalObjectStore, ObjectInfo, ObjectStore, join_key

if TYPE_CHECKING:
    from sleeper_spark.table import Table

log = logging.getLogger(__name__)

_DELETE_BATCH = 100


@dataclass
class TableListing:
    """The objects of one table folder by kind; keys relative to the table root."""

    data: list[ObjectInfo] = field(default_factory=list)
    bodies: list[ObjectInfo] = field(default_factory=list)
    state_snapshots: dict[int, ObjectInfo] = field(default_factory=dict)
    intents: list[ObjectInfo] = field(default_factory=list)  # put-and-verify intents on the kinds above


def vacuum(table: Table, older_than: timedelta = timedelta(hours=24), dry_run: bool = False, *,
           progress: Progress | None = None, now: datetime | None = None) -> VacuumReport:
    """Deletes (or with ``dry_run`` only reports) garbage older than ``older_than``."""
    if not isinstance(older_than, timedelta) or older_than < timedelta(0):
        raise ConfigError(f"older_than must be a non-negative timedelta, not {older_than!r}")
    progress = progress or no_progress
    cutoff = (now or utc_now()) - older_than
    if not dry_run and table.group_commit is not None:
        # What a writer that died after recording its append left pending goes in first.
        table.group_commit.commit_pending()
    state = table.head.catch_up()
    progress("listing", 0, 0)
    listing = list_table(table.store, table.root)
    floor = retention_floor(state.history, cutoff)
    facts = read_log_facts(table, state.version, sorted(listing.state_snapshots), floor, progress)
    # Files a pending append names are not garbage: a group commit may still put them in.
    pending = table.catalog.backend.pending_appends(table.entry).list()
    keep = facts.retained_files | set(state.files) | pending_paths(pending)
    doomed_data = [o for o in listing.data if o.key not in keep and o.last_modified < cutoff]
    doomed_bodies = [o for o in listing.bodies
                     if o.key not in facts.referenced_bodies and o.last_modified < cutoff]
    newest = table.head.newest_state_snapshot()
    doomed_states = [info for number, info in sorted(listing.state_snapshots.items())
                     if facts.base is not None and number < facts.base and number != newest
                     and info.last_modified < cutoff]
    leftovers = abandoned_temporaries(table.store, table.root) + listing.intents
    doomed_temporaries = [o for o in leftovers if o.last_modified < cutoff]
    doomed = doomed_data + doomed_bodies + doomed_states + doomed_temporaries
    published_deleted: list[str] = []
    if not dry_run:
        with maintenance_lock(table, "vacuum"):
            _delete(table.store, table.root, [o.key for o in doomed], progress)
            # The Iceberg snapshots of versions whose files just went are expired, with the
            # metadata files only they needed; so are their Delta versions.
            published_deleted = [*table.iceberg.expire(facts.floor, cutoff), *table.delta.expire(facts.floor)]
    log.info("table %s: vacuum %s %d data file(s), %d body(ies), %d state snapshot(s), %d temporary file(s), "
             "%d bytes (floor %d)", table.name, "would delete" if dry_run else "deleted", len(doomed_data),
             len(doomed_bodies), len(doomed_states), len(doomed_temporaries), sum(o.size for o in doomed),
             facts.floor)
    return VacuumReport(dry_run=dry_run, data_files_deleted=len(doomed_data), bodies_deleted=len(doomed_bodies),
                        state_snapshots_deleted=len(doomed_states), temporaries_deleted=len(doomed_temporaries),
                        bytes_deleted=sum(o.size for o in doomed),
                        deleted=(*(o.key for o in doomed), *published_deleted))


def list_table(store: ObjectStore, table_root: str) -> TableListing:
    """One LIST of the table's folder, sorted into the kinds vacuum cares about."""
    prefix = table_root.rstrip("/") + "/"
    listing = TableListing()
    for info in store.list(prefix):
        key = info.key[len(prefix):]
        relative = ObjectInfo(key=key, size=info.size, last_modified=info.last_modified, etag=info.etag)
        target = intent_target(key)
        if target is not None:
            if kind_of(target) is not Kind.OTHER:  # only intents on objects vacuum itself deletes
                listing.intents.append(relative)
            continue
        kind = kind_of(key)
        if kind is Kind.DATA:
            listing.data.append(relative)
        elif kind is Kind.BODY:
            listing.bodies.append(relative)
        elif kind is Kind.STATE_SNAPSHOT:
            number = state_snapshot_number(key.rsplit("/", 1)[1])
            assert number is not None
            listing.state_snapshots[number] = relative
    return listing


def abandoned_temporaries(store: ObjectStore, table_root: str) -> list[ObjectInfo]:
    """Temporary files dead writers left in the table's folder; keys relative to the table root."""
    if not isinstance(store, LocalObjectStore):
        return []  # S3 PUTs are atomic: a dead writer leaves nothing half-written
    prefix = table_root.rstrip("/") + "/"
    return [ObjectInfo(key=info.key[len(prefix):], size=info.size, last_modified=info.last_modified, etag=info.etag)
            for info in store.abandoned(prefix)]


def _delete(store: ObjectStore, table_root: str, keys: Sequence[str], progress: Progress) -> None:
    total = len(keys)
    if not total:
        return
    progress("deleting", 0, total)
    for start in range(0, total, _DELETE_BATCH):
        batch = keys[start:start + _DELETE_BATCH]
        store.delete_many([join_key(table_root, key) for key in batch])
        progress("deleting", start + len(batch), total)

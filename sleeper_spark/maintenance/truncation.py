"""Log truncation: deleting old transactions that a state snapshot already covers.

The log is cut just after a state snapshot ``T``: transactions ``<= T`` and the bodies they
spilled are deleted, so a cold reader starts from state snapshot ``T`` (or a newer one) and
reads the tail. ``T`` is the newest state snapshot that is

* at or below the retention floor (see :mod:`~sleeper_spark.maintenance.retention`), so
  every version inside the time-travel window stays reachable;
* at least ``safety_margin`` transactions below the newest state snapshot, so a reader that
  found an older pointer a moment ago can still read its tail;
* below the current version, so the log never becomes empty (an empty log reads as a table
  whose creation never completed).

Time travel to a version below ``T`` then fails with
:class:`~sleeper_spark.errors.SnapshotNotFoundError` saying the log was truncated.

Transactions younger than ``TRUNCATION_MIN_AGE_S`` are never cut, whatever the window: a
writer that read the log within half that time cannot be behind the cut, and one idle for
longer checks the state-snapshot pointer before it commits (see ``TableHead.catch_up``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from sleeper_spark.commit import TRUNCATION_MIN_AGE_S, utc_now
from sleeper_spark.errors import ConfigError
from sleeper_spark.maintenance.locking import maintenance_lock
from sleeper_spark.maintenance.retention import retention_floor
from sleeper_spark.models import Snapshot, TruncateReport
from sleeper_spark.storage import join_key

if TYPE_CHECKING:
    from sleeper_spark.table import Table

log = logging.getLogger(__name__)


def truncate_log(table: Table, keep_versions_after: timedelta | int = timedelta(hours=24),
                 safety_margin: int = 10, *, dry_run: bool = False, now: datetime | None = None) -> TruncateReport:
    """Deletes transactions (and spilled bodies) that no retained version needs.

    ``keep_versions_after`` is the time-travel window: a ``timedelta`` keeps every version
    committed within it (and the one current when it began) reachable; an ``int`` keeps every
    version from that number on reachable. See the module doc for the other limits.
    """
    if isinstance(safety_margin, bool) or not isinstance(safety_margin, int) or safety_margin < 0:
        raise ConfigError(f"safety_margin must be a non-negative number of transactions, not {safety_margin!r}")
    _check_keep(keep_versions_after)
    head = table.head
    state = head.catch_up()
    newest = head.newest_state_snapshot()
    first = head.first_number()
    if newest is None or first is None:
        log.info("table %s: no state snapshot yet, so no transaction can be truncated", table.name)
        return TruncateReport(dry_run=dry_run, first_transaction=first)
    floor = _floor(state.history, keep_versions_after, now)
    young = retention_floor(state.history, (now or utc_now()) - timedelta(seconds=TRUNCATION_MIN_AGE_S))
    limit = min(floor, young, newest - safety_margin, state.version - 1)
    cuts = [n for n in head.state_snapshot_numbers() if first <= n <= limit]
    if not cuts:
        log.info("table %s: nothing to truncate below version %d", table.name, limit)
        return TruncateReport(dry_run=dry_run, first_transaction=first)
    up_to = max(cuts)
    # Bodies are content-addressed over a transaction with its own ids and time, so a body
    # belongs to exactly one entry: those of the cut entries can go with them.
    bodies = [key for entry in head.entries(after=first - 1, up_to=up_to)
              if (key := entry.spilled_body) is not None]
    deleted = up_to - first + 1
    if not dry_run:
        with maintenance_lock(table, "log truncation"):
            # Entries before bodies: an entry whose body is gone would be a corrupt log.
            deleted = head.truncate_log(up_to)
            table.store.delete_many([join_key(table.root, key) for key in bodies])
        # Versions before the cut no longer read here: their Iceberg snapshots and Delta versions go too.
        table.iceberg.expire(up_to, None)
        table.delta.expire(up_to)
    log.info("table %s: truncated the log up to transaction %d (%d entries, %d bodies)%s", table.name, up_to,
             deleted, len(bodies), " [dry run]" if dry_run else "")
    return TruncateReport(dry_run=dry_run, up_to=up_to, transactions_deleted=deleted, bodies_deleted=len(bodies),
                          first_transaction=first if dry_run else up_to + 1)


def _check_keep(keep: object) -> None:
    if isinstance(keep, timedelta):
        if keep < timedelta(0):
            raise ConfigError(f"keep_versions_after must not be negative, not {keep}")
    elif isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        raise ConfigError(f"keep_versions_after must be a timedelta or a version number >= 1, not {keep!r}")


def _floor(history: Sequence[Snapshot], keep: timedelta | int, now: datetime | None) -> int:
    if isinstance(keep, timedelta):
        return retention_floor(history, (now or utc_now()) - keep)
    return keep

"""The table's maintenance lock: vacuum and log truncation never run twice at once.

A mutex (put-and-verify on the table's own store, so it works on every backend) at
``<table>/_lock/maintenance``. Appends never take it: they are safe beside maintenance by the
commit protocol. The lock only keeps two deleting jobs from racing each other, and its file
names its holder, so ``sleeper-spark lock status`` shows who runs and ``lock break`` clears a
crashed one.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from sleeper_spark.layout import maintenance_lock_key
from sleeper_spark.storage.locks import Mutex

if TYPE_CHECKING:
    from sleeper_spark.table import Table

# How long to wait for another maintenance job before giving up with LockHeldError.
WAIT_S = float(os.environ.get("SLEEPER_MAINTENANCE_LOCK_WAIT_S", "30"))
# A crashed holder's lock counts as stale after this; a live holder finishes well within it.
LEASE_S = 6 * 3600.0


def maintenance_lock_path(table: Table) -> str:
    return maintenance_lock_key(table.root)


@contextmanager
def maintenance_lock(table: Table, job: str) -> Iterator[None]:
    """Holds the table's maintenance lock for ``job``; :class:`LockHeldError` names the holder."""
    mutex = Mutex(table.store, maintenance_lock_path(table), label=f"{job} of {table.name}", timeout_s=WAIT_S,
                  lease_s=LEASE_S)
    with mutex:
        yield

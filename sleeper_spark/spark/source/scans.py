"""Which files a scan may skip, given how PySpark 4.3 plans the scans of a Python data source.

PySpark 4.3.0 keeps a single read plan (input partitions and read function) per data source
*relation*, that is per loaded DataFrame and everything derived from it: ``pushFilters()``
stores the plan it produces on the JVM's ``PythonDataSourceV2`` object, and a scan that pushes
no filter Python understands reuses whatever plan is stored there. Two things go wrong if a
plan leaves anything out (verified by running them):

1. a query that pushes no filter (``df.count()`` after ``df.filter("p = 'a'").count()``)
   reads the earlier query's plan, so it misses the files and rows that filter excluded;
2. two scans of one relation in a single query (``df.filter(a).union(df.filter(b))``, a
   self-join) both run the plan of the scan pushed last.

So the reader never claims a filter (Spark evaluates every filter again after the scan), and
it prunes files only when both hazards are ruled out:

* (1) the relation is *guarded*: the helper API adds a filter on a hidden, always-true column
  (``_sleeper_scan``) and drops the column again, so every query on that DataFrame pushes a
  filter and gets a plan of its own;
* (2) a scan prunes by the OR of the filters of every scan of the relation planned so far, so
  whichever plan runs keeps the files of all of them. Each pushdown runs in a fresh Python
  worker, so the scans of a relation are recorded in a small file on the driver's host.

A record is plain JSON (:mod:`sleeper_spark.spark.source.filter_json`), never a pickle: reading it back
runs no code. Its folder, ``<temp>/sleeper-spark-scans-<uid>``, must be a real folder owned by
the current user and closed to everyone else; a folder someone else made first (or opened up) is
refused with a warning, and the scans then read every file rather than trust what it holds.

A relation loaded with ``spark.read.format("sleeper")`` is not guarded and reads every file.
"""

from __future__ import annotations

import logging
import os
import stat
import tempfile
import time
from pathlib import Path

from pyspark.sql.datasource import EqualTo, Filter

from sleeper_spark.process_state import SAID_ONCE
from sleeper_spark.spark.common.options import GUARD_COLUMN
from sleeper_spark.spark.source.filter_json import FilterCodingError, dumps_scans, loads_scans

_log = logging.getLogger(__name__)

_STALE_AFTER_S = 24 * 3600
_PRUNE_EVERY = 256  # relations recorded between two clean-ups of old records

try:
    import fcntl
except ImportError:  # no advisory locks (Windows): scans are never pruned there
    fcntl = None  # type: ignore[assignment]


def is_guard(spark_filter: Filter) -> bool:
    return isinstance(spark_filter, EqualTo) and spark_filter.attribute == (GUARD_COLUMN,) \
        and spark_filter.value is True


def record_scan(relation: str, filters: list[Filter]) -> list[list[Filter]] | None:
    """Adds one scan's filters to the relation's record; every scan's filters so far, or ``None``.

    ``None`` means the record could not be kept, and the scan must read every file.
    """
    if fcntl is None:
        return None
    try:
        folder = records_folder()
        if folder is None:
            return None
        path = folder / relation
        fresh = not path.exists()
        # O_NOFOLLOW: a record is a plain file of ours, never a link to somewhere else.
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        with os.fdopen(descriptor, "r+b") as record:
            fcntl.flock(record, fcntl.LOCK_EX)
            data = record.read()
            scans = loads_scans(data) if data else []
            scans.append(filters)
            record.seek(0)
            record.truncate()
            record.write(dumps_scans(scans))
        if fresh and int(relation[:8], 16) % _PRUNE_EVERY == 0:
            _forget_old(folder)
        return scans
    except (OSError, FilterCodingError):
        return None


def records_folder() -> Path | None:
    """This user's folder of scan records, or ``None`` if it exists and is not safe to use."""
    folder = Path(tempfile.gettempdir()) / f"sleeper-spark-scans-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass  # checked below: it may have been made by someone else
    problem = _unsafe(folder)
    if problem is None:
        return folder
    if SAID_ONCE.first(("scan records", folder)):
        _log.warning("not using %s for Spark scan records: it %s. Scans of guarded DataFrames read every file "
                     "until it is removed (rm -r %s as its owner, or root).", folder, problem, folder)
    return None


def _unsafe(folder: Path) -> str | None:
    """Why ``folder`` may hold records someone else wrote, or ``None`` if it cannot."""
    info = folder.lstat()  # lstat: a link is refused, not followed
    if not stat.S_ISDIR(info.st_mode):
        return "is not a folder"
    if info.st_uid != os.getuid():
        return f"belongs to user id {info.st_uid}, not to {os.getuid()}"
    if stat.S_IMODE(info.st_mode) & 0o077:
        return f"can be opened by other users (mode {stat.S_IMODE(info.st_mode):o})"
    return None


def _forget_old(folder: Path) -> None:
    cutoff = time.time() - _STALE_AFTER_S
    for path in folder.iterdir():
        try:
            if path.stat().st_mtime < cutoff:
                path.unlink()
        except OSError:
            pass

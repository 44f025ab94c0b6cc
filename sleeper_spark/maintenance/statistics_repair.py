"""Rewriting the files whose recorded statistics do not hold for their rows.

``verify(deep=True)`` finds them (problem ``"stats"``); a table written before a statistics
bug was fixed can hold some. Each such file is rewritten on its own by the compaction machinery
(the Python writer computes the new file's statistics from its rows) and all of them are
replaced in one ``ReplaceFiles`` snapshot, operation ``"compact"`` with the metadata
``{"repair": "statistics"}``: the same rows, in new files that reads can prune safely.
A concurrent compaction or delete of one of the files makes it fail with
:class:`~sleeper_spark.errors.CommitConflictError`; run it again.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from sleeper_spark.maintenance.compaction import CompactionPlan, rewrite_plan
from sleeper_spark.maintenance.planning import FileGroup, partition_key
from sleeper_spark.maintenance.progress import Progress
from sleeper_spark.maintenance.replacement import commit_replacement
from sleeper_spark.models import Snapshot, VerifyReport
from sleeper_spark.source_options import DEFAULT_TARGET_FILE_BYTES

if TYPE_CHECKING:
    from sleeper_spark.table import Table

log = logging.getLogger(__name__)

REPAIR_METADATA = {"repair": "statistics"}


def repair_statistics(table: Table, spark: Any = None, *, executor: str = "auto",
                      progress: Progress | None = None, found: VerifyReport | None = None) -> Snapshot | None:
    """Rewrites the current version's files with false statistics; None when there are none.

    ``found``, a deep verify's report of the current version (the CLI has just made one), spares
    reading every file again; of another version, it is ignored.
    """
    state = table.state()
    report = found if found is not None and found.version == state.version else table.verify(state.version,
                                                                                               deep=True)
    wrong = [problem.path for problem in report.problems if problem.problem == "stats"]
    others = [problem for problem in report.problems if problem.problem != "stats"]
    if others:
        log.warning("table %s: %d file(s) are missing or damaged and cannot be rewritten (first: %s %s); "
                    "see table.verify()", table.name, len(others), others[0].path, others[0].problem)
    if not wrong:
        log.info("table %s: every file's statistics hold at version %d", table.name, state.version)
        return None
    groups = tuple(FileGroup(partition_key(state.files[path], state.partition_by), (state.files[path],))
                   for path in wrong)
    plan = CompactionPlan(state.version, DEFAULT_TARGET_FILE_BYTES, groups)
    added = rewrite_plan(table, plan, spark, executor=executor, progress=progress)
    snapshot = commit_replacement(table, "compact", plan.removed, added, REPAIR_METADATA)
    log.info("table %s: rewrote %d file(s) with false statistics at version %d", table.name, len(wrong),
             snapshot.version)
    return snapshot

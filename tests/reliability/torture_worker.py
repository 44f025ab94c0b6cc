"""One of the torture test's processes: a random mix of operations on one table, for a while.

    python -m tests.reliability.torture_worker WAREHOUSE TABLE WORKER SECONDS SEED JOURNAL

Mostly appends (the first operation always is one); also overwrites, compactions, state
snapshots and vacuums (with ``older_than`` far above the run's length, so they never delete a file
a running job may still commit). Every operation and its outcome goes to the journal as one JSON
line::

    {"op": "append", "seq": 3, "rows": 2, "outcome": "done", "version": 17}
    {"op": "compact", "outcome": "failed", "error": "CommitConflictError", "message": "..."}

The process exits 0 whatever happened; the test reads the journal and judges.
"""

from __future__ import annotations

import json
import random
import sys
import time
from datetime import timedelta
from typing import Any

import sleeper_spark as ss
from tests.fixtures.catalogs import events

OPERATIONS = {"append": 82, "overwrite": 3, "compact": 7, "state snapshot": 2, "vacuum": 4}
DAYS = 4
VACUUM_OLDER_THAN = timedelta(hours=1)


def rows_of(seq: int) -> int:
    return 1 + seq % 3


def main(warehouse: str, name: str, worker: int, seconds: float, seed: int, journal_path: str) -> None:
    table = ss.Catalog.local(warehouse, state_snapshot_interval=50).table(name)
    rng = random.Random(seed)
    deadline = time.monotonic() + seconds
    seq = 0
    with open(journal_path, "a", buffering=1) as journal:
        def record(entry: dict[str, Any]) -> None:
            journal.write(json.dumps(entry) + "\n")

        while time.monotonic() < deadline:
            op = rng.choices(list(OPERATIONS), weights=list(OPERATIONS.values()))[0] if seq else "append"
            entry: dict[str, Any] = {"op": op}
            started = time.monotonic()
            try:
                if op in ("append", "overwrite"):
                    entry.update(seq=seq, rows=rows_of(seq))
                    seq += 1
                    snapshot = table.write(events(worker, entry["seq"], rows=entry["rows"], day=f"d{entry['seq'] % DAYS}"),
                                           mode=op, metadata={"writer": str(worker), "seq": str(entry["seq"])})
                    entry["version"] = snapshot.version
                elif op == "compact":
                    compacted = table.compact()
                    entry["version"] = compacted.version if compacted is not None else None
                elif op == "state snapshot":
                    entry["version"] = table.create_state_snapshot()
                else:
                    entry["deleted"] = table.vacuum(older_than=VACUUM_OLDER_THAN).data_files_deleted
                entry["outcome"] = "done"
            except Exception as error:  # judged by the test: appends and overwrites must never fail
                entry.update(outcome="failed", error=type(error).__name__, message=str(error)[:500])
            entry["ms"] = round((time.monotonic() - started) * 1000, 1)
            record(entry)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), sys.argv[6])

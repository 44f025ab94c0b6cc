"""A writer that commits forever and journals what it knows; the kill trials SIGKILL it.

    SLEEPER_CATALOG_OPTIONS='{"catalog": "local", ...}' \\
        python -m tests.reliability.kill_worker MODE TABLE WRITER JOURNAL

The catalog comes from its flat string options (``Catalog.options()``, as JSON in
``SLEEPER_CATALOG_OPTIONS``), the AWS credentials from the usual ``AWS_*`` variables: the
worker is built exactly as a Spark executor would be. It writes a state snapshot every 3
commits, so some kills land while one is written.

MODE says what else it does between appends:

* ``append``: nothing — appends only;
* ``compact``: after every second append, a compaction (read, rewrite, commit a replacement);
* ``vacuum``: the same, then ``vacuum(older_than=0)``, which deletes the compacted inputs.

The journal (fsynced lines ``start <seq>`` / ``done <seq>``, and ``compact`` / ``vacuum`` /
``idle`` markers) tells the trial which writes reported success, which one was in flight when
the process died, and what the process was doing then.

With ``group_commit`` on, the worker's first append records itself at once (it does not try to
commit alone first), so it lists the other writers' pending records before it proposes.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import timedelta

import sleeper_spark as ss
from tests.fixtures.catalogs import events
from tests.fixtures.group_commit import records_at_once

ROWS = 2
MODES = ("append", "compact", "vacuum")
OPTIONS_VARIABLE = "SLEEPER_CATALOG_OPTIONS"


def journal(handle: int, line: str) -> None:
    os.write(handle, f"{line}\n".encode())
    os.fsync(handle)


def open_table(name: str) -> ss.Table:
    options = dict(json.loads(os.environ[OPTIONS_VARIABLE]))
    options["state_snapshot_interval"] = "3"
    return ss.Catalog.from_options(options).table(name)


def main(mode: str, name: str, writer: int, journal_path: str) -> None:
    if mode not in MODES:
        raise SystemExit(f"unknown mode {mode!r}; one of {MODES}")
    table = open_table(name)
    if table.group_commit is not None:
        records_at_once(table)
    handle = os.open(journal_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    seq = 0
    while True:
        journal(handle, f"start {seq}")
        table.write(events(writer, seq, rows=ROWS, day=f"d{seq % 3}"),
                    metadata={"writer": str(writer), "seq": str(seq)})
        journal(handle, f"done {seq}")
        seq += 1
        if mode == "append" or seq % 2:
            continue
        journal(handle, "compact")
        table.compact()
        if mode == "vacuum":
            journal(handle, "vacuum")
            table.vacuum(older_than=timedelta(0))
        journal(handle, "idle")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])

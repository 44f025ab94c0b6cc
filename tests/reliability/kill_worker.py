"""A writer that appends forever and journals what it knows; the kill trials SIGKILL it.

    python -m tests.reliability.kill_worker WAREHOUSE TABLE WRITER JOURNAL

The journal (fsynced lines ``start <seq>`` / ``done <seq>``) tells the trial which writes
reported success and which one was in flight when the process died.
"""

from __future__ import annotations

import os
import sys

import sleeper_spark as ss
from tests.fixtures.catalogs import events

ROWS = 2


def journal(handle: int, line: str) -> None:
    os.write(handle, f"{line}\n".encode())
    os.fsync(handle)


def main(warehouse: str, name: str, writer: int, journal_path: str) -> None:
    table = ss.Catalog.local(warehouse, state_snapshot_interval=3).table(name)
    handle = os.open(journal_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    seq = 0
    while True:
        journal(handle, f"start {seq}")
        table.write(events(writer, seq, rows=ROWS, day=f"d{seq % 3}"),
                    metadata={"writer": str(writer), "seq": str(seq)})
        journal(handle, f"done {seq}")
        seq += 1


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])

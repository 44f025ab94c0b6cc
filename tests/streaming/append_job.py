"""Another process appending to ``events`` while a stream reads it.

    python -m tests.streaming.append_job CATALOG_OPTIONS_JSON APPENDS ROWS JOURNAL HOLD_AT HOLD_FILE

Append ``k`` (from 0) holds ids ``k*ROWS ..``; after each one a line ``done <k>`` is fsynced to
JOURNAL, so the test can tell how far the writer got. After HOLD_AT appends the writer waits
until HOLD_FILE exists, so that the test can restart its stream while appends are still to come.
The catalog comes from its flat options, the AWS credentials from the environment.
"""

from __future__ import annotations

import json
import os
import sys
import time

import sleeper_spark as ss
from tests.streaming.streams import rows

PAUSE_S = 0.05


def main() -> None:
    options, appends, rows_per_append, journal, hold_at, hold_file = sys.argv[1:7]
    table = ss.Catalog.from_options(json.loads(options)).table("events")
    handle = os.open(journal, os.O_CREAT | os.O_WRONLY | os.O_APPEND)
    for k in range(int(appends)):
        if k == int(hold_at):
            while not os.path.exists(hold_file):
                time.sleep(PAUSE_S)
        table.write(rows(k * int(rows_per_append), int(rows_per_append)))
        os.write(handle, f"done {k}\n".encode())
        os.fsync(handle)
        time.sleep(PAUSE_S)
    os.close(handle)


if __name__ == "__main__":
    main()

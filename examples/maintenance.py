"""Table maintenance on a local warehouse: compaction, vacuum, log truncation, verify. No Spark needed.

    bash scripts/examples.sh maintenance [WAREHOUSE_DIR]

Many small appends leave many small files and a long log. This example compacts the files,
vacuums what the compaction replaced (a dry run first), captures a state snapshot, truncates
the log up to it, and verifies that every file the table references is intact.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import tempfile
import time
from datetime import timedelta

import pyarrow as pa

import sleeper_spark as ss
from sleeper_spark.commit import utc_now
from sleeper_spark.maintenance import truncate_log

APPENDS = 24
SCHEMA = pa.schema([("day", pa.string()), ("seq", pa.int64()), ("value", pa.float64())])


def main(warehouse: str) -> None:
    catalog = ss.Catalog.local(warehouse)
    with contextlib.suppress(ss.TableNotFoundError):  # start afresh on every run
        catalog.drop_table("metrics", purge=True)
    table = catalog.create_table("metrics", SCHEMA, partition_by=["day"])

    # 1. Many small appends: each one commits one snapshot and adds one file per partition.
    for seq in range(APPENDS):
        day = f"2024-05-0{1 + seq % 2}"
        table.write(pa.table({"day": [day], "seq": [seq], "value": [seq * 1.5]}, schema=SCHEMA))
    before = table.latest()
    print(f"after {APPENDS} appends: version {before.version}, {len(table.files())} files, "
          f"{table.scan().num_rows} rows")

    # 2. Compaction: small files of each partition are rewritten into files near the target
    #    size, committed as one "compact" snapshot. Without a Spark session it runs in this
    #    process. The rows and the result of every query stay the same.
    compacted = table.compact(target_file_bytes=8 * 2**20)
    assert compacted is not None
    print(f"compact: v{compacted.version} replaced {compacted.files_removed} files with {compacted.files_added}")

    # 3. Vacuum: deletes files that no *retained* version needs. Retained are the current
    #    version, every version committed within ``older_than``, and the one current when that
    #    window began. The default window is 24 h, which must be longer than the longest write
    #    job (a job's staged files look like garbage until it commits). A one-second window is
    #    used here only because nothing else writes to this table: after the pause the
    #    compaction is the oldest retained version, so the small files it replaced can go.
    time.sleep(1.5)
    window = timedelta(seconds=1)
    dry = table.vacuum(older_than=window, dry_run=True)
    print(f"vacuum dry run: would delete {dry.data_files_deleted} data files ({dry.bytes_deleted} bytes)")
    done = table.vacuum(older_than=window)
    print(f"vacuum: deleted {done.data_files_deleted} data files; time travel now reaches back to "
          f"v{compacted.version}")

    # 4. Log truncation: a state snapshot captures the whole state at one transaction, so the
    #    transactions up to it are only needed for time travel. truncate_log() cuts the log just
    #    after a state snapshot, and never below the newest one (a commit after it is needed).
    number = table.create_state_snapshot()
    table.write(pa.table({"day": ["2024-05-03"], "seq": [APPENDS], "value": [0.0]}, schema=SCHEMA))
    print(f"state snapshot at transaction {number}; log holds 1..{table.latest().version}")

    # It never cuts a transaction younger than 10 minutes, whatever the window, so that a writer
    # that read the log moments ago is never behind the cut. Run now, it would cut nothing; the
    # ``now`` argument lets this example pretend that 11 minutes have passed. A scheduled job
    # leaves ``now`` alone; ``keep_versions_after`` (24 h by default) is its time-travel window.
    right_away = truncate_log(table, keep_versions_after=timedelta(0), safety_margin=0, dry_run=True)
    print(f"truncate right away: cuts up to {right_away.up_to} (nothing: every transaction is too young)")
    later = utc_now() + timedelta(minutes=11)
    report = truncate_log(table, keep_versions_after=timedelta(0), safety_margin=0, now=later)
    print(f"truncate 11 minutes later: deleted transactions up to {report.up_to} "
          f"({report.transactions_deleted} entries); the log starts at {report.first_transaction}")
    try:
        table.scan(version=before.version)
    except ss.SnapshotNotFoundError:
        print(f"time travel to v{before.version}: gone with the truncated log (SnapshotNotFoundError)")

    # 5. Verify: every file the current version references exists with its size and checksum.
    check = ss.Catalog.local(warehouse).table("metrics").verify()  # a cold reader: state snapshot + tail
    print(f"verify: {check.files_checked} files, {'ok' if check.ok else check.problems}; "
          f"{table.scan().num_rows} rows at v{check.version}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:
        directory = tempfile.mkdtemp(prefix="sleeper-maintenance-")
        try:
            main(directory)
        finally:
            shutil.rmtree(directory)

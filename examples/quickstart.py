"""Quickstart: a table on the embedded local warehouse — no AWS, no Spark, no network.

    bash scripts/examples.sh quickstart [WAREHOUSE_DIR]

Creates a table, appends twice with metadata, overwrites, time-travels and prints the history.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import tempfile

import pyarrow as pa
import pyarrow.compute as pc

import sleeper_spark as ss


def main(warehouse: str) -> None:
    catalog = ss.Catalog.local(warehouse)
    with contextlib.suppress(ss.TableNotFoundError):  # start afresh on every run
        catalog.drop_table("events", purge=True)

    schema = pa.schema([("day", pa.string()), ("user", pa.string()), ("clicks", pa.int64())])
    events = catalog.create_table("events", schema, partition_by=["day"])

    first = events.write(
        pa.table({"day": ["2024-05-01", "2024-05-01", "2024-05-02"], "user": ["ann", "bob", "ann"],
                  "clicks": [3, 5, 2]}),
        metadata={"job": "ingest", "batch": "1"},
    )
    events.write(
        pa.table({"day": ["2024-05-02", "2024-05-03"], "user": ["cat", "bob"], "clicks": [7, 1]}),
        metadata={"job": "ingest", "batch": "2"},
    )
    print(f"after two appends: {events.scan().num_rows} rows in {count(len(events.files()), 'file')}")

    may_2 = events.scan(filter=pc.field("day") == "2024-05-02")
    print(f"2024-05-02 only: {sorted(may_2.column('user').to_pylist())}")

    events.write(pa.table({"day": ["2024-06-01"], "user": ["dan"], "clicks": [9]}), mode="overwrite",
                 metadata={"job": "rebuild"})
    print(f"after the overwrite: {events.scan().to_pylist()}")
    print(f"time travel to version {first.version}: {events.scan(version=first.version).num_rows} rows")

    print("\nhistory:")
    for snapshot in events.history():
        print(f"  v{snapshot.version}  {snapshot.operation:<9}  +{snapshot.rows_added}/-{snapshot.rows_removed} rows"
              f"  {snapshot.metadata}")
    report = events.verify()
    print(f"\nverify: {count(report.files_checked, 'file')}, {'ok' if report.ok else report.problems}")


def count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:
        directory = tempfile.mkdtemp(prefix="sleeper-quickstart-")
        try:
            main(directory)
        finally:
            shutil.rmtree(directory)

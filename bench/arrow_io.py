"""pyarrow write and scan of 1 M rows: Table.write / Table.scan vs pyarrow.dataset."""

from __future__ import annotations

import random
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds

import sleeper_spark as ss
from bench.common import Report, Row, measure, seconds


def make_data(rows: int, partitions: int = 8) -> pa.Table:
    rng = random.Random(7)
    days = [f"2024-01-{d + 1:02d}" for d in range(partitions)]
    return pa.table({
        "day": pa.array([days[rng.randrange(partitions)] for _ in range(rows)]),
        "id": pa.array(range(rows), pa.int64()),
        "value": pa.array([rng.random() for _ in range(rows)], pa.float64()),
        "count": pa.array([rng.randrange(1000) for _ in range(rows)], pa.int64()),
        "name": pa.array([f"user-{i % 5000}" for i in range(rows)]),
    })


def run(report: Report, quick: bool) -> None:
    rows = 20_000 if quick else 1_000_000
    repeat = 1 if quick else 3
    data = make_data(rows)
    work = Path(tempfile.mkdtemp(prefix="bench-arrow-"))
    try:
        counter = iter(range(1000))

        def ours_write() -> None:
            catalog = ss.Catalog.local(str(work / f"ours-{next(counter)}"))
            catalog.write(data, "t", partition_by=["day"])

        def plain_write() -> None:
            ds.write_dataset(data, work / f"plain-{next(counter)}", format="parquet", partitioning=["day"],
                             partitioning_flavor="hive", existing_data_behavior="overwrite_or_ignore")

        ours = measure(ours_write, repeat)
        plain = measure(plain_write, repeat)
        report.add(Row(f"pyarrow write, {rows:,} rows, 8 partitions", seconds(ours), seconds(plain),
                       ours.best / plain.best, "<= 1.1x", ours.best / plain.best <= 1.1))

        table = ss.Catalog.local(str(work / "ours-0")).table("t")
        dataset_path = work / f"plain-{repeat}"
        scan_ours = measure(lambda: table.scan(), repeat)
        scan_plain = measure(lambda: ds.dataset(dataset_path, format="parquet", partitioning="hive").to_table(),
                             repeat)
        report.add(Row(f"pyarrow full scan, {rows:,} rows", seconds(scan_ours), seconds(scan_plain),
                       scan_ours.best / scan_plain.best, "<= 1.1x", scan_ours.best / scan_plain.best <= 1.1))
    finally:
        shutil.rmtree(work, ignore_errors=True)

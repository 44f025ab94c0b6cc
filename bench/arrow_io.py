"""pyarrow write and scan of 1 M rows: Table.write / Table.scan vs pyarrow.dataset.

The write row times ``catalog.write(data, "t", partition_by=["day"])`` on a fresh local
warehouse: the table's creation (transaction 1), the Parquet files of the 8 partitions (zstd,
pyarrow's default page size and dictionary encoding, one row group a file here; the partitions'
files written side by side on the machine's cores), each file's SHA-256 and statistics, each
file synced to disk before it is published, and the commit (the log entry, synced too). Its
baseline is ``pyarrow.dataset.write_dataset`` of the same rows, hive-partitioned by ``day`` into
a fresh folder, with the same codec (zstd; pyarrow's default would be snappy) and its other
options at pyarrow's defaults (its own thread pool included; no checksum, no sync). The two
sides run alternately, round by round (10 rounds), so that the machine's drift falls on both;
besides the ratio of the best runs, the row gives the paired ratio of the rounds
(:func:`bench.common.paired_ratio`), which a busy machine moves less. The scan row reads back
what each side wrote.
"""

from __future__ import annotations

import random
import shutil
import tempfile
from itertools import count
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds

import sleeper_spark as ss
from bench.common import Report, Row, measure, measure_pair, paired_ratio, seconds

# Both sides of the write compress with the codec the table's files use.
CODEC = "zstd"


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
    repeat = 1 if quick else 5
    write_rounds = 1 if quick else 10
    data = make_data(rows)
    work = Path(tempfile.mkdtemp(prefix="bench-arrow-"))
    options = ds.ParquetFileFormat().make_write_options(compression=CODEC)
    try:
        ours_runs, plain_runs = count(), count()

        def ours_write() -> None:
            catalog = ss.Catalog.local(str(work / f"ours-{next(ours_runs)}"))
            catalog.write(data, "t", partition_by=["day"])

        def plain_write() -> None:
            ds.write_dataset(data, work / f"plain-{next(plain_runs)}", format="parquet", partitioning=["day"],
                             partitioning_flavor="hive", existing_data_behavior="overwrite_or_ignore",
                             file_options=options)

        ours, plain = measure_pair(ours_write, plain_write, write_rounds)
        report.add(Row(f"pyarrow write, {rows:,} rows, 8 partitions", seconds(ours), seconds(plain),
                       ours.best / plain.best, "<= 1.1x", ours.best / plain.best <= 1.1,
                       note=f"paired: {paired_ratio(ours, plain):.2f}x" if write_rounds > 1 else ""))

        table = ss.Catalog.local(str(work / "ours-0")).table("t")
        dataset_path = work / "plain-0"
        scan_ours = measure(lambda: table.scan(), repeat)
        scan_plain = measure(lambda: ds.dataset(dataset_path, format="parquet", partitioning="hive").to_table(),
                             repeat)
        report.add(Row(f"pyarrow full scan, {rows:,} rows", seconds(scan_ours), seconds(scan_plain),
                       scan_ours.best / scan_plain.best, "<= 1.1x", scan_ours.best / scan_plain.best <= 1.1))
    finally:
        shutil.rmtree(work, ignore_errors=True)

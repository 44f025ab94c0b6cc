"""Clustering: how much of a table a selective query opens once compaction clusters it.

A table of 5,000,000 rows x 22 columns (200,000 in a quick run) written in 20 appends of rows in
random order and clustered by two columns (``a``, ``b``) by a compaction into about 256 files;
beside it the same rows unclustered, as they arrived, in about as many files (each append
written in 13 slices). Spark reads both through ``format("sleeper")``
with the jar; the share of files opened is what the table's pruning keeps for the filter (what
the file index hands Spark). Beside each query, Spark's own query over exactly the files the
clustered table opens, on a DataFrame built once: the least any Spark read of those rows can
take, which bounds the speed-up a layout can show on this machine. Then an append of 10 % more
rows and a compaction: the bytes it rewrote against the table's.
"""

from __future__ import annotations

import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

import sleeper_spark as ss
from bench.common import Report, Row, measure_pair, paired_ratio, seconds
from bench.spark_io import session
from sleeper_spark.datafiles.pruning import prune_table

COLUMNS = 20  # c0 .. c19 beside a and b: 22 in all
DOMAIN = 1_000_000  # a and b are uniform in [0, DOMAIN)
APPENDS = 20
FILES = 256


def run(report: Report, quick: bool) -> None:
    rows = 200_000 if quick else 5_000_000
    repeat = 2 if quick else 9
    work = Path(tempfile.mkdtemp(prefix="bench-clustering-"))
    spark = session(work)
    try:
        catalog = ss.Catalog.local(str(work / "wh"))
        rng = random.Random(11)
        clustered = catalog.create_table("clustered", _schema(), cluster_by=["a", "b"])
        plain = catalog.create_table("plain", _schema())
        slices = -(-FILES // APPENDS)
        for k in range(APPENDS):
            batch = _rows(rng, k * (rows // APPENDS), rows // APPENDS)
            clustered.write(batch)
            step = -(-batch.num_rows // slices)
            for start in range(0, batch.num_rows, step):
                plain.write(batch.slice(start, step))
        target = max(1, sum(f.size_bytes for f in clustered.files()) // FILES)
        clustered.compact(spark, target_file_bytes=target)

        def frame(name: str) -> Any:
            return spark.read.format("sleeper").options(**catalog.options()).load(name)

        low = DOMAIN // 2
        for label, where, sql, share_target, speed_target in (
            ("1 % range of a", (pc.field("a") >= low) & (pc.field("a") < low + DOMAIN // 100),
             f"a >= {low} AND a < {low + DOMAIN // 100}", 0.15, 4.0),
            ("5 % x 5 % box of a and b", (pc.field("a") >= low) & (pc.field("a") < low + DOMAIN // 20)
             & (pc.field("b") >= low) & (pc.field("b") < low + DOMAIN // 20),
             f"a >= {low} AND a < {low + DOMAIN // 20} AND b >= {low} AND b < {low + DOMAIN // 20}", 0.03, 10.0),
        ):
            ours_share, plain_share = _share_opened(clustered, where), _share_opened(plain, where)
            report.add(Row(f"{label}: share of the files opened, clustered vs unclustered",
                           f"{ours_share:.1%} of {len(clustered.files())}", f"{plain_share:.1%} of "
                           f"{len(plain.files())}", None, f"<= {share_target:.0%}", ours_share <= share_target))

            def query(name: str, condition: str = sql) -> None:
                frame(name).where(condition).selectExpr("sum(c0)", "count(*)").collect()

            query("clustered")  # unmeasured: the first plan of each kind compiles code
            query("plain")
            ours_m, plain_m = measure_pair(lambda: query("clustered"), lambda: query("plain"), repeat)
            speedup = 1 / paired_ratio(ours_m, plain_m)
            report.add(Row(f"{label}: Spark query (sum, count), clustered vs unclustered", seconds(ours_m),
                           seconds(plain_m), 1 / speedup, f">= {speed_target:.0f}x faster", speedup >= speed_target,
                           f"{speedup:.1f}x faster; {repeat} paired runs (order-balanced median ratio)"))

            # What no reader of Spark's can go below: Spark's own query over exactly the files the
            # clustered table opens, on a DataFrame built once (no listing, no schema inference).
            opened = spark.read.schema(frame("clustered").schema).parquet(*_files_opened(clustered, where))

            def floor(files: Any = opened, condition: str = sql) -> None:
                files.where(condition).selectExpr("sum(c0)", "count(*)").collect()

            floor()
            ours_f, floor_m = measure_pair(lambda: query("clustered"), floor, repeat)
            over_floor = paired_ratio(ours_f, floor_m)
            report.add(Row(f"{label}: the clustered query vs Spark's own query of the files it opens, "
                           "spark.read.parquet(files) built once", seconds(ours_f), seconds(floor_m), over_floor,
                           "-", None, f"the most any Spark read could be faster than the unclustered one here: "
                           f"{plain_m.median / floor_m.median:.1f}x (medians)"))

        table_bytes = sum(f.size_bytes for f in clustered.files())
        clustered.write(_rows(rng, rows, rows // 10))
        snapshot = clustered.compact(spark, target_file_bytes=target)
        rewritten = 0 if snapshot is None else _bytes_removed(clustered, snapshot.version)
        report.add(Row("an append of 10 % more rows, then a compaction: bytes rewritten against the table's",
                       f"{rewritten / 2**20:.1f} MiB", f"{table_bytes / 2**20:.1f} MiB", rewritten / table_bytes,
                       "<= 0.25", rewritten / table_bytes <= 0.25))
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


def _schema() -> pa.Schema:
    return pa.schema([("id", pa.int64()), ("a", pa.int64()), ("b", pa.int64())]
                     + [(f"c{i}", pa.float64() if i % 2 else pa.int64()) for i in range(COLUMNS)])


def _rows(rng: random.Random, start: int, count: int) -> pa.Table:
    ids = pa.array(range(start, start + count), pa.int64())
    columns: dict[str, Any] = {"id": ids, "a": pa.array([rng.randrange(DOMAIN) for _ in range(count)], pa.int64()),
                               "b": pa.array([rng.randrange(DOMAIN) for _ in range(count)], pa.int64())}
    for i in range(COLUMNS):
        values = pc.multiply(ids, i + 1)
        columns[f"c{i}"] = pc.multiply(values.cast(pa.float64()), 0.5) if i % 2 else pc.add(values, i)
    return pa.table(columns, schema=_schema())


def _opened(table: ss.Table, where: pc.Expression) -> tuple[pa.Table, int]:
    """The files the table's pruning keeps for ``where``, and how many files it has."""
    state = table.state()
    files = state.files.table()
    return prune_table(files, state.schema, state.partition_by, where), files.num_rows


def _share_opened(table: ss.Table, where: pc.Expression) -> float:
    kept, count = _opened(table, where)
    return kept.num_rows / count


def _files_opened(table: ss.Table, where: pc.Expression) -> list[str]:
    kept, _ = _opened(table, where)
    return [f"{table.location.rstrip('/')}/{path}" for path in kept.column("path").to_pylist()]


def _bytes_removed(table: ss.Table, version: int) -> int:
    after = {f.path for f in table.files(version=version)}
    return sum(f.size_bytes for f in table.files(version=version - 1) if f.path not in after)

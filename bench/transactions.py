"""Multi-table transactions: commit latency against one table's commit, racing transactional
writers, and single-table commits against the code before transactions existed.

Backends: the local disk, and the AWS catalog and the bare object store on the loopback test
servers (DynamoDB Local + SeaweedFS). A transaction's commit is timed from leaving its block
(its files already written) to its return: one entry per table, one decision, the catch-ups.
The baseline row runs the single-table commit loop of this code and of ``SLEEPER_BENCH_BASELINE``
(default: the commit before transactions were added) in alternating processes.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa

import sleeper_spark as ss
from bench.aws import loopback_servers
from bench.commits import describe, latencies, staged_file
from bench.common import Report, Row, percentile

SCHEMA = pa.schema([("writer", pa.int64()), ("seq", pa.int64())])
BASELINE_REV = os.environ.get("SLEEPER_BENCH_BASELINE", "5c42648")
REPO = Path(__file__).parents[1]
# The single-table commit loop both sides of the baseline row run: p50 of N commits, in ms.
COMMIT_LOOP = """
import sys, tempfile, time, uuid
import pyarrow as pa
import sleeper_spark as ss
from sleeper_spark.models import ColumnStats, FileRef
count = int(sys.argv[1])
table = ss.Catalog.local(tempfile.mkdtemp()).create_table("t", pa.schema([("x", pa.int64())]))
values = []
for _ in range(count + 20):
    ref = FileRef(path=f"data/{uuid.uuid4().hex}.parquet", size_bytes=1, row_count=100, checksum="sha256:00",
                  column_stats={"x": ColumnStats(min=0, max=99)})
    started = time.perf_counter()
    table.commit_files([ref], "append", {}, uuid.uuid4().hex)
    values.append(time.perf_counter() - started)
values = sorted(values[20:])
print(values[len(values) // 2] * 1000)
"""


def rows(writer: int, seq: int) -> pa.Table:
    return pa.table({"writer": [writer] * 10, "seq": [seq] * 10}, schema=SCHEMA)


def transaction_commits(catalog: ss.Catalog, count: int) -> list[float]:
    """The commit time of ``count`` two-table transactions, each appending 10 rows to each table."""
    values = []
    for seq in range(count):
        tx = catalog.transaction()
        with tx:
            tx.write("a", rows(0, seq))
            tx.write("b", rows(0, seq))
            started = time.perf_counter()
        values.append(time.perf_counter() - started)
    return values


def compare(report: Report, label: str, catalog: ss.Catalog, count: int) -> None:
    for name in ("a", "b", "one"):
        catalog.create_table(name, SCHEMA)
    one = catalog.table("one")
    transaction_commits(catalog, 3)  # warm: clients, caches
    single = latencies(lambda: one.commit_files([staged_file()], "append", {}, uuid.uuid4().hex), count)
    paired = transaction_commits(catalog, count)
    ratio = percentile(paired, 0.5) / percentile(single, 0.5)
    report.add(Row(f"{label}: commit of a two-table transaction vs one table's commit, {count}x",
                   describe(paired), describe(single), ratio, "<= 2x", ratio <= 2.0))


def racer(options: dict[str, str], writer: int, count: int, start: Any) -> tuple[int, int]:
    catalog = ss.Catalog.from_options(options)
    catalog.table("a").state()
    catalog.table("b").state()
    start.wait()
    ok = failed = 0
    for seq in range(count):
        try:
            with catalog.transaction() as tx:
                tx.write("a", rows(writer, seq))
                tx.write("b", rows(writer, seq))
            ok += 1
        except ss.SleeperSparkError:
            failed += 1
    return ok, failed


def race(report: Report, label: str, catalog: ss.Catalog, writers: int, count: int) -> None:
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager:
        start = manager.Event()
        with context.Pool(writers) as pool:
            pending = [pool.apply_async(racer, (catalog.options(), w, count, start)) for w in range(writers)]
            time.sleep(3)  # every process imports and opens the tables before the start
            began = time.perf_counter()
            start.set()
            results = [p.get(timeout=900) for p in pending]
            elapsed = time.perf_counter() - began
    ok, failed = sum(r[0] for r in results), sum(r[1] for r in results)
    whole = _whole(catalog)
    report.add(Row(f"{label}: {writers} racing transactional writers x {count} two-table transactions",
                   f"{ok / elapsed:.0f} transactions/s, {failed} failed", f"{ok} committed, whole in both: {whole}",
                   None, "0 failed", failed == 0 and whole))


def _whole(catalog: ss.Catalog) -> bool:
    fresh = ss.Catalog(catalog.config)
    tags = [sorted(zip(fresh.table(n).scan().column("writer").to_pylist(),
                       fresh.table(n).scan().column("seq").to_pylist(), strict=True)) for n in ("a", "b")]
    return tags[0] == tags[1]


def baseline(report: Report, count: int, rounds: int) -> None:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        print("  skipped the baseline row: not a git checkout")
        return
    work = Path(tempfile.mkdtemp(prefix="bench-baseline-"))
    try:
        subprocess.run(["git", "worktree", "add", "--detach", str(work / "tree"), BASELINE_REV], cwd=REPO,
                       check=True, capture_output=True)
        ours: list[float] = []
        theirs: list[float] = []
        for round_ in range(rounds):
            for tree, into in ((REPO, ours), (work / "tree", theirs))[:: 1 if round_ % 2 == 0 else -1]:
                out = subprocess.run([sys.executable, "-c", COMMIT_LOOP, str(count)], cwd=tree, check=True,
                                     capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(tree)})
                into.append(float(out.stdout.strip().splitlines()[-1]))
        ratio = sorted(ours)[len(ours) // 2] / sorted(theirs)[len(theirs) // 2]
        report.add(Row(f"local disk: single-table commit of a staged file, no transaction in flight, vs {BASELINE_REV} "
                       f"(median of {rounds} alternating rounds of {count} commits)",
                       f"p50 {sorted(ours)[len(ours) // 2]:.3f} ms ({', '.join(f'{v:.3f}' for v in ours)})",
                       f"p50 {sorted(theirs)[len(theirs) // 2]:.3f} ms ({', '.join(f'{v:.3f}' for v in theirs)})",
                       ratio, "<= 1.02x", ratio <= 1.02))
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(work / "tree")], cwd=REPO, capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


def run(report: Report, quick: bool) -> None:
    count = 20 if quick else 200
    writers, racing = 8, (3 if quick else 10)
    work = Path(tempfile.mkdtemp(prefix="bench-transactions-"))
    try:
        local = ss.Catalog.local(str(work / "local"))
        compare(report, "local disk", local, count)
        race(report, "local disk", local, writers, racing)
        with loopback_servers(work) as (aws, s3_endpoint):
            compare(report, "AWS test servers", aws, count // 4)
            race(report, "AWS test servers", aws, writers, racing)
            bare = ss.Catalog.object_store("s3://bench/bare", endpoint_url=s3_endpoint, region="us-east-1")
            compare(report, "object store (S3 conditional writes, test server)", bare, count // 4)
        baseline(report, 100 if quick else 400, 2 if quick else 6)
    finally:
        shutil.rmtree(work, ignore_errors=True)

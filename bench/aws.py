"""The AWS catalog on the loopback test servers (DynamoDB Local + SeaweedFS).

Commit latency against one bare conditional put, requests per warm commit, racing writers
against the single-writer rate, and opening a 10 k-transaction table.
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3
import pyarrow as pa

import sleeper_spark as ss
from bench.commits import describe, latencies, staged_file
from bench.common import Report, Row, measure, percentile, seconds
from bench.open_table import fill_log
from sleeper_spark.log.aws.dynamodb_log import DynamoDBTransactionLog
from sleeper_spark.storage.aws import make_client
from tests.fixtures.servers import TEST_CREDENTIALS, start_dynamodb_local, start_seaweedfs

SCHEMA = pa.schema([("writer", pa.int64()), ("seq", pa.int64())])


def racer(options: dict[str, str], writer: int, appends: int, start: Any) -> tuple[int, int]:
    table = ss.Catalog.from_options(options).table("race")
    table.state()
    start.wait()
    ok = failed = 0
    for seq in range(appends):
        try:
            table.commit_files([staged_file()], "append", {"writer": str(writer), "seq": str(seq)}, uuid.uuid4().hex)
            ok += 1
        except ss.SleeperSparkError:
            failed += 1
    return ok, failed


def race(catalog: ss.Catalog, writers: int, appends: int) -> tuple[float, int, int]:
    name = "race"
    if name in catalog.tables():
        catalog.drop_table(name, purge=True)
    catalog.create_table(name, SCHEMA)
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager:
        start = manager.Event()
        with context.Pool(writers) as pool:
            pending = [pool.apply_async(racer, (catalog.options(), w, appends, start)) for w in range(writers)]
            time.sleep(3)  # let every process import and open the table before the start
            began = time.perf_counter()
            start.set()
            results = [p.get(timeout=900) for p in pending]
            elapsed = time.perf_counter() - began
    return elapsed, sum(r[0] for r in results), sum(r[1] for r in results)


@contextmanager
def loopback_servers(work: Path) -> Iterator[tuple[ss.Catalog, str]]:
    """DynamoDB Local and SeaweedFS on loopback, with a bucket ``bench``: an AWS catalog on them
    (warehouse ``s3://bench/warehouse``) and the S3 endpoint; both servers stop afterwards."""
    os.environ.update(TEST_CREDENTIALS)
    dynamodb = start_dynamodb_local(work / "ddb")
    s3 = start_seaweedfs(work / "s3")
    try:
        boto3.client("s3", endpoint_url=s3.endpoint_url, region_name="us-east-1").create_bucket(Bucket="bench")
        catalog = ss.Catalog.aws(warehouse="s3://bench/warehouse", region="us-east-1", s3_endpoint_url=s3.endpoint_url,
                                 dynamodb_endpoint_url=dynamodb.endpoint_url)
        catalog.ensure_infrastructure()
        yield catalog, s3.endpoint_url
    finally:
        dynamodb.stop()
        s3.stop()


def run(report: Report, quick: bool) -> None:
    with loopback_servers(Path(tempfile.mkdtemp(prefix="bench-aws-"))) as (catalog, _):
        count = 20 if quick else 200
        table = catalog.create_table("latency", SCHEMA)
        commits = latencies(lambda: table.commit_files([staged_file()], "append", {}, uuid.uuid4().hex), count)
        bare_log = DynamoDBTransactionLog(make_client("dynamodb", catalog.config), catalog.config.transactions_table,
                                          f"bare-{uuid.uuid4().hex}",
                                          conditional_client=make_client("dynamodb", catalog.config, retries=False))
        numbers = iter(range(1, 10**6))
        body = b"x" * 600
        puts = latencies(lambda: bare_log.append(next(numbers), body), count)
        ratio = percentile(commits, 0.5) / percentile(puts, 0.5)
        report.add(Row(f"AWS: commit of a staged file, {count}x", describe(commits),
                       describe(puts) + " (bare PutItem)", ratio, "<= 1.5x", ratio <= 1.5))
        single_rate = count / sum(commits)

        calls: Counter[str] = Counter()
        clients = [make_client("s3", catalog.config), make_client("dynamodb", catalog.config),
                   make_client("s3", catalog.config, retries=False),
                   make_client("dynamodb", catalog.config, retries=False)]
        for client in clients:
            client.meta.events.register("before-call", lambda model, **_: calls.update([model.name]))
        data = pa.table({"writer": [0] * 100, "seq": list(range(100))}, schema=SCHEMA)
        table.write(data)
        calls.clear()
        table.write(data)
        for client in clients:
            client.meta.events.unregister("before-call")
        log_puts, reads = calls["PutItem"], calls["Query"] + calls["GetItem"]
        lists = sum(v for k, v in calls.items() if "List" in k)
        report.add(Row("AWS: requests per warm append", ", ".join(f"{k} {v}" for k, v in sorted(calls.items())),
                       "1 log put, <= 1 read, 0 LIST", None, "equal", log_puts == 1 and reads <= 1 and lists == 0))

        appends = 5 if quick else 25
        for writers in (4, 8):
            elapsed, ok, failed = race(catalog, writers, appends)
            rate = ok / elapsed
            report.add(Row(f"AWS: {writers} racing writers x {appends} commits",
                           f"{rate:.0f} commits/s, {failed} failed", f"{single_rate:.0f} commits/s single writer",
                           rate / single_rate, ">= 0.8x, 0 failed", failed == 0 and rate / single_rate >= 0.8))

        size = 1_000 if quick else 10_000
        big = catalog.create_table("open", pa.schema([("day", pa.string()), ("id", pa.int64())]))
        fill_log(big, size)
        big.create_state_snapshot()
        opened = measure(lambda: ss.Catalog(catalog.config).table("open").state(), 3)
        report.add(Row(f"AWS: open {size:,} transactions from a state snapshot", seconds(opened), "-", None, "-", None))

"""Latency of the conditional-write strategies on the local disk and on the test servers.

    python -m bench.conditional_writes            # 100 creates and 100 replaces per strategy
    python -m bench.conditional_writes --ops 20   # quicker

Starts DynamoDB Local and SeaweedFS on loopback (as the integration tests do), then times,
one after another, ``ops`` create-if-absent calls of new keys and ``ops`` replace-if-match
calls of one key, after a short warm-up. Non-native strategies run on a store that refuses
conditional requests. Prints a Markdown table of p50/p95 in milliseconds.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from bench.common import Report, Row, machine_summary, percentile
from sleeper_spark.storage import ConditionalWriteStrategy

WARM_UP = 10


def _timed(action: Callable[[int], object], count: int) -> list[float]:
    for number in range(WARM_UP):
        action(-1 - number)
    times = []
    for number in range(count):
        started = time.perf_counter()
        action(number)
        times.append(time.perf_counter() - started)
    return times


def _measure_one(conditional: ConditionalWriteStrategy, ops: int) -> tuple[list[float], list[float]]:
    run = uuid.uuid4().hex[:8]
    creates = _timed(lambda n: conditional.create_if_absent(f"{run}/_log/{n}.json", b"{}"), ops)
    pointer = f"{run}/_state/latest"
    etag = conditional.create_if_absent(pointer, b"0")

    def replace(n: int) -> None:
        nonlocal etag
        etag = conditional.replace_if_match(pointer, str(n).encode(), etag)

    return creates, _timed(replace, ops)


def measure(ops: int) -> list[tuple[str, list[float], list[float]]]:
    """(setup, create latencies, replace latencies) per strategy and store, in seconds."""
    for key, value in {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
                       "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}.items():
        os.environ[key] = value
    from tests.fixtures.servers import _s3_client, start_dynamodb_local, start_seaweedfs
    from tests.storage.workers import StrategySpec

    with tempfile.TemporaryDirectory(prefix="bench-cw-") as scratch:
        root = Path(scratch)
        dynamodb = start_dynamodb_local(root / "dynamodb")
        seaweedfs = start_seaweedfs(root / "seaweedfs")
        try:
            bucket = f"bench-{uuid.uuid4().hex[:12]}"
            _s3_client(seaweedfs.endpoint_url).create_bucket(Bucket=bucket)
            warehouse = f"s3://{bucket}/warehouse"
            specs = [
                StrategySpec("native, local disk", "native", str(root / "local-native")),
                StrategySpec("put-and-verify, local disk", "put-and-verify", str(root / "local-pv")),
                StrategySpec("native, SeaweedFS", "native", warehouse, seaweedfs.endpoint_url),
                StrategySpec("dynamodb-lock, SeaweedFS + DynamoDB Local", "dynamodb-lock", warehouse,
                             seaweedfs.endpoint_url, dynamodb.endpoint_url, f"locks-{uuid.uuid4().hex[:8]}"),
                StrategySpec("put-and-verify, SeaweedFS", "put-and-verify", warehouse, seaweedfs.endpoint_url),
            ]
            results = []
            for spec in specs:
                _store, conditional = spec.build()
                conditional.ensure_infrastructure()
                creates, replaces = _measure_one(conditional, ops)
                results.append((spec.name, creates, replaces))
                print(f"  {spec.name}: create p50 {1000 * percentile(creates, 0.5):.1f} ms, "
                      f"replace p50 {1000 * percentile(replaces, 0.5):.1f} ms", flush=True)
            return results
        finally:
            seaweedfs.stop()
            dynamodb.stop()


def markdown(results: list[tuple[str, list[float], list[float]]], ops: int) -> str:
    lines = [f"Measured {dt.date.today().isoformat()} on {machine_summary()}; {ops} sequential operations each.", "",
             "| strategy, store | create p50 | create p95 | replace p50 | replace p95 |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for name, creates, replaces in results:
        cells = [f"{1000 * percentile(values, q):.1f} ms" for values in (creates, replaces) for q in (0.5, 0.95)]
        lines.append(f"| {name} | {' | '.join(cells)} |")
    return "\n".join(lines) + "\n"


def run(report: Report, quick: bool) -> None:
    """Rows for ``python -m bench``: each strategy against native on the same store."""
    results = {name: (creates, replaces) for name, creates, replaces in measure(10 if quick else 100)}
    for name, (creates, replaces) in results.items():
        baseline = results["native, local disk" if "local" in name else "native, SeaweedFS"]
        for kind, ours, theirs in (("create", creates, baseline[0]), ("replace", replaces, baseline[1])):
            p50, base = percentile(ours, 0.5), percentile(theirs, 0.5)
            report.add(Row(f"{kind} p50, {name}", f"{1000 * p50:.1f} ms", f"{1000 * base:.1f} ms (native)",
                           p50 / base if base else None, "-", None, f"p95 {1000 * percentile(ours, 0.95):.1f} ms"))


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.conditional_writes")
    parser.add_argument("--ops", type=int, default=100)
    args = parser.parse_args()
    print(machine_summary())
    print(markdown(measure(args.ops), args.ops))


if __name__ == "__main__":
    main()

"""Request latencies of DynamoDB Local on this machine, per request kind of group commit.

    python -m bench.latency_profile            # 300 of each kind, prints p50/p90/p99
    python -m bench.latency_profile --count 50

The contention simulation (:mod:`bench.group_commit_sim`) draws each request's latency from
these samples, so that its rows can be set beside the real race on the same server. One client
sends the requests one after another in the order a writer on the recorded path sends them:
record, tail query, pending query, conditional put, and the ``BatchWriteItem`` that deletes the
records the win settled (one here: a handful of writers settle a few a round). The items are sized
as the simulation sizes them (a one-file append), and about ``PENDING_LIVE`` records stay pending,
so the pending query answers with a few, as it does for a handful of writers.

Timed from the client, so botocore's own work counts, as it does for a writer.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config

from bench.common import percentile
from bench.group_commit_sim import (
    ENTRY_OVERHEAD_BYTES,
    MEMBER_BYTES,
    RECORD_BYTES,
    Empirical,
    Kind,
    LatencyProfile,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

TABLE = "group_commit_profile"
WARM_UP = 30  # requests of each kind first, untimed: the JVM compiles its hot paths
PENDING_LIVE = 8


def _timed(samples: dict[Kind, list[float]], kind: Kind, call: Callable[..., object], **request: Any) -> None:
    started = time.perf_counter()
    call(TableName=TABLE, **request)
    samples[kind].append(time.perf_counter() - started)


def _exercise(client: DynamoDBClient, count: int) -> dict[Kind, list[float]]:
    """``count`` requests of each kind, as one writer's recorded path sends them."""
    log_key, pending_key = uuid.uuid4().hex, f"{uuid.uuid4().hex}#pending"
    entry = b"x" * (ENTRY_OVERHEAD_BYTES + MEMBER_BYTES)
    record = b"x" * RECORD_BYTES
    number_name = {"#n": "number"}
    samples: dict[Kind, list[float]] = {kind: [] for kind in Kind}
    for number in range(1, count + 1):
        _timed(samples, Kind.PUT, client.put_item,
               Item={"table_id": {"S": pending_key}, "number": {"N": str(number)}, "body": {"B": record}})
        _timed(samples, Kind.QUERY_LOG, client.query, KeyConditionExpression="table_id = :t AND #n >= :lo",
               ConsistentRead=True, ExpressionAttributeNames=number_name,
               ExpressionAttributeValues={":t": {"S": log_key}, ":lo": {"N": str(max(1, number - 1))}})
        _timed(samples, Kind.QUERY_PENDING, client.query, KeyConditionExpression="table_id = :t",
               ConsistentRead=True, ExpressionAttributeValues={":t": {"S": pending_key}})
        _timed(samples, Kind.CONDITIONAL_PUT, client.put_item,
               Item={"table_id": {"S": log_key}, "number": {"N": str(number)}, "body": {"B": entry}},
               ConditionExpression="attribute_not_exists(#n)", ExpressionAttributeNames=number_name)
        if number > PENDING_LIVE:
            key = {"table_id": {"S": pending_key}, "number": {"N": str(number - PENDING_LIVE)}}
            started = time.perf_counter()
            client.batch_write_item(RequestItems={TABLE: [{"DeleteRequest": {"Key": key}}]})
            samples[Kind.DELETE].append(time.perf_counter() - started)
    return samples


def measure_dynamodb_local(count: int = 300, work: Path | None = None) -> LatencyProfile:
    """Start DynamoDB Local (as ``bench.aws`` does), time ``count`` requests of each kind, stop it."""
    from tests.fixtures.servers import TEST_CREDENTIALS, start_dynamodb_local

    os.environ.update(TEST_CREDENTIALS)
    folder = work or Path(tempfile.mkdtemp(prefix="bench-profile-"))
    server = start_dynamodb_local(folder / "ddb")
    try:
        # No automatic retries: a retried request would be timed as one slow one.
        client: DynamoDBClient = boto3.client(
            "dynamodb", endpoint_url=server.endpoint_url, region_name="us-east-1",
            config=Config(retries={"mode": "standard", "total_max_attempts": 1}))
        client.create_table(
            TableName=TABLE, BillingMode="PAY_PER_REQUEST",
            KeySchema=[{"AttributeName": "table_id", "KeyType": "HASH"},
                       {"AttributeName": "number", "KeyType": "RANGE"}],
            AttributeDefinitions=[{"AttributeName": "table_id", "AttributeType": "S"},
                                  {"AttributeName": "number", "AttributeType": "N"}])
        _exercise(client, WARM_UP + PENDING_LIVE)
        samples = _exercise(client, count + PENDING_LIVE)
    finally:
        server.stop()
        if work is None:
            shutil.rmtree(folder, ignore_errors=True)
    return LatencyProfile("DynamoDB Local", {kind: Empirical(tuple(values)) for kind, values in samples.items()},
                          f"measured here, {count} of each, one client: {describe(samples)}")


def describe(samples: dict[Kind, list[float]]) -> str:
    return "; ".join(f"{kind.value} p50 {percentile(values, 0.5) * 1000:.1f} ms, "
                     f"p99 {percentile(values, 0.99) * 1000:.1f} ms" for kind, values in samples.items())


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.latency_profile")
    parser.add_argument("--count", type=int, default=300, help="requests of each kind")
    args = parser.parse_args()
    profile = measure_dynamodb_local(args.count)
    for kind, distribution in profile.latency.items():
        assert isinstance(distribution, Empirical)
        values = list(distribution.samples)
        quantiles = ", ".join(f"p{round(q * 100)} {percentile(values, q) * 1000:.2f} ms" for q in (0.5, 0.9, 0.99))
        print(f"{kind.value:24} {quantiles}")


if __name__ == "__main__":
    main()

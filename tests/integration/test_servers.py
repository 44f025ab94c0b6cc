"""What the real test servers guarantee about conditional writes.

The table format's commit protocol rests on two primitives: DynamoDB's conditional
PutItem and S3's conditional PutObject.  These tests pin down, against the servers
the integration suite runs on, that each lets exactly one of several racing writers
win, and which error the losers see, so that library code can rely on (and match) it.

Writers are separate processes, not threads, so that each has its own connection pool
and the race happens on the server rather than inside one Python interpreter.
"""

from __future__ import annotations

import multiprocessing
import queue
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.synchronize import Barrier
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from tests.fixtures.processes import racing_context

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient
    from mypy_boto3_s3.client import S3Client

pytestmark = pytest.mark.integration

WRITERS = 8
ROUNDS = 20
# Generous: a round on SeaweedFS can stall for seconds while conditional PUTs on one
# key queue up, and a stuck worker must fail the test rather than hang it.
BARRIER_TIMEOUT_S = 60.0
RESULTS_TIMEOUT_S = 120.0

WON = "Won"


@dataclass(frozen=True)
class Attempt:
    """One writer's try at one round's key."""

    round: int
    writer: int
    code: str  # WON, or the botocore error code, or the exception type for other errors
    http_status: int | None
    seconds: float


def _client_config() -> Config:
    # No retries: a retried conditional write could report a loss for a write that in
    # fact won, and the point here is to see the server's own first answer.
    return Config(retries={"total_max_attempts": 1, "mode": "standard"}, read_timeout=30)


def _session(credentials: dict[str, str]) -> boto3.session.Session:
    return boto3.session.Session(
        aws_access_key_id=credentials["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=credentials["AWS_SECRET_ACCESS_KEY"],
        region_name=credentials["AWS_REGION"],
    )


def _dynamodb(endpoint_url: str, credentials: dict[str, str]) -> DynamoDBClient:
    return _session(credentials).client("dynamodb", endpoint_url=endpoint_url, config=_client_config())


def _s3(endpoint_url: str, credentials: dict[str, str]) -> S3Client:
    return _session(credentials).client("s3", endpoint_url=endpoint_url, config=_client_config())


def _error(exc: ClientError) -> tuple[str, int | None]:
    return exc.response["Error"].get("Code", "?"), exc.response["ResponseMetadata"].get("HTTPStatusCode")


def _race_worker(
    service: str,
    endpoint_url: str,
    credentials: dict[str, str],
    target: str,
    writer: int,
    barrier: Barrier,
    results: multiprocessing.Queue[tuple[int, list[Attempt] | str]],
) -> None:
    """Take part in every round: wait for all writers, then try to create the key."""
    try:
        attempts: list[Attempt] = []
        if service == "dynamodb":
            dynamodb = _dynamodb(endpoint_url, credentials)
            # Open the connection before the first round, so rounds race on the write.
            dynamodb.describe_table(TableName=target)

            def put(key: str) -> None:
                dynamodb.put_item(
                    TableName=target,
                    Item={"pk": {"S": key}, "writer": {"N": str(writer)}},
                    ConditionExpression="attribute_not_exists(pk)",
                )
        else:
            s3 = _s3(endpoint_url, credentials)
            s3.head_bucket(Bucket=target)

            def put(key: str) -> None:
                s3.put_object(Bucket=target, Key=key, Body=str(writer).encode(), IfNoneMatch="*")

        for round_ in range(ROUNDS):
            barrier.wait(timeout=BARRIER_TIMEOUT_S)
            started = time.monotonic()
            try:
                put(f"round-{round_:03d}")
            except ClientError as exc:
                code, status = _error(exc)
            except Exception as exc:  # recorded, so one bad answer does not hang the others
                code, status = type(exc).__name__, None
            else:
                code, status = WON, 200
            attempts.append(Attempt(round_, writer, code, status, time.monotonic() - started))
        results.put((writer, attempts))
    except BaseException:
        barrier.abort()
        results.put((writer, traceback.format_exc()))


def _race(service: str, endpoint_url: str, credentials: dict[str, str], target: str) -> list[Attempt]:
    """Run WRITERS processes through ROUNDS rounds and return every attempt."""
    ctx = racing_context()
    barrier = ctx.Barrier(WRITERS)
    results: multiprocessing.Queue[tuple[int, list[Attempt] | str]] = ctx.Queue()
    processes = [
        ctx.Process(
            target=_race_worker,
            args=(service, endpoint_url, credentials, target, writer, barrier, results),
            daemon=True,
        )
        for writer in range(WRITERS)
    ]
    for process in processes:
        process.start()
    attempts: list[Attempt] = []
    failures: list[str] = []
    try:
        deadline = time.monotonic() + RESULTS_TIMEOUT_S
        # Drained before join(): a child blocks on exit until its queued data is read.
        for _ in processes:
            try:
                writer, outcome = results.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                failures.append("timed out waiting for a writer")
                break
            if isinstance(outcome, str):
                failures.append(f"writer {writer} crashed:\n{outcome}")
            else:
                attempts.extend(outcome)
    except BaseException:
        # Ctrl-C or a failure here: stop the writers now instead of letting them
        # finish their rounds.
        barrier.abort()
        for process in processes:
            process.terminate()
        raise
    finally:
        for process in processes:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
                process.join()
    assert not failures, "\n".join(failures)
    return attempts


def _check_one_winner_per_round(
    attempts: list[Attempt], stored_writer: Callable[[str], int], loser_codes: set[tuple[str, int | None]]
) -> Counter[tuple[str, int | None]]:
    """Assert one winner per round whose value is stored; return the losers' answers."""
    assert len(attempts) == WRITERS * ROUNDS
    losers: Counter[tuple[str, int | None]] = Counter()
    for round_ in range(ROUNDS):
        in_round = [a for a in attempts if a.round == round_]
        winners = [a.writer for a in in_round if a.code == WON]
        assert len(winners) == 1, f"round {round_}: winners {winners}, answers {in_round}"
        assert stored_writer(f"round-{round_:03d}") == winners[0], f"round {round_}: winner's value not kept"
        losers.update((a.code, a.http_status) for a in in_round if a.code != WON)
    assert set(losers) <= loser_codes, f"unexpected answers to losing writers: {losers}"
    return losers


def _summary(attempts: list[Attempt], losers: Counter[tuple[str, int | None]]) -> str:
    slowest = max(a.seconds for a in attempts)
    by_round = [max(a.seconds for a in attempts if a.round == r) for r in range(ROUNDS)]
    return (
        f"losers' answers {dict(losers)}; slowest request {slowest:.2f}s; "
        f"rounds slower than 1s: {sum(1 for s in by_round if s > 1.0)}/{ROUNDS}"
    )


def test_dynamodb_conditional_put_has_one_winner_among_racing_processes(
    dynamodb_local: str, aws_env: dict[str, str], record_property: Callable[[str, Any], None]
) -> None:
    client = _dynamodb(dynamodb_local, aws_env)
    table = f"race-{uuid.uuid4().hex[:12]}"
    client.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )

    def stored_writer(key: str) -> int:
        item = client.get_item(TableName=table, Key={"pk": {"S": key}}, ConsistentRead=True)["Item"]
        return int(item["writer"]["N"])

    attempts = _race("dynamodb", dynamodb_local, aws_env, table)

    losers = _check_one_winner_per_round(attempts, stored_writer, {("ConditionalCheckFailedException", 400)})
    summary = _summary(attempts, losers)
    record_property("dynamodb_race", summary)
    print(f"DynamoDB Local race: {summary}")


def test_seaweedfs_if_none_match_put_has_one_winner_among_racing_processes(
    seaweedfs_s3: str, s3_bucket: str, aws_env: dict[str, str], record_property: Callable[[str, Any], None]
) -> None:
    client = _s3(seaweedfs_s3, aws_env)

    def stored_writer(key: str) -> int:
        return int(client.get_object(Bucket=s3_bucket, Key=key)["Body"].read())

    attempts = _race("s3", seaweedfs_s3, aws_env, s3_bucket)

    # AWS answers 412 to a writer that arrives after the winner and 409 to one that
    # overlaps it; either means "someone else created the key".
    losers = _check_one_winner_per_round(
        attempts, stored_writer, {("PreconditionFailed", 412), ("ConditionalRequestConflict", 409)}
    )
    summary = _summary(attempts, losers)
    record_property("seaweedfs_race", summary)
    print(f"SeaweedFS race: {summary}")


def _put_error(client: S3Client, bucket: str, key: str, **conditions: str) -> tuple[str, int | None]:
    with pytest.raises(ClientError) as caught:
        client.put_object(Bucket=bucket, Key=key, Body=b"rejected", **conditions)  # type: ignore[arg-type]
    return _error(caught.value)


def test_seaweedfs_if_match_rejects_stale_etag_and_missing_key(
    seaweedfs_s3: str, s3_bucket: str, aws_env: dict[str, str]
) -> None:
    client = _s3(seaweedfs_s3, aws_env)
    first = client.put_object(Bucket=s3_bucket, Key="pointer", Body=b"v1", IfNoneMatch="*")["ETag"]
    second = client.put_object(Bucket=s3_bucket, Key="pointer", Body=b"v2", IfMatch=first)["ETag"]
    assert second != first

    assert _put_error(client, s3_bucket, "pointer", IfMatch=first) == ("PreconditionFailed", 412)
    assert _put_error(client, s3_bucket, "pointer", IfNoneMatch="*") == ("PreconditionFailed", 412)
    # The rejected writes changed nothing.
    assert client.get_object(Bucket=s3_bucket, Key="pointer")["Body"].read() == b"v2"

    # AWS answers 404 NoSuchKey here; SeaweedFS answers 412, so callers must treat
    # both as "the object is not the one you expected".
    assert _put_error(client, s3_bucket, "never-written", IfMatch=first) == ("PreconditionFailed", 412)
    with pytest.raises(ClientError) as missing:
        client.head_object(Bucket=s3_bucket, Key="never-written")
    assert _error(missing.value)[1] == 404

    third = client.put_object(Bucket=s3_bucket, Key="pointer", Body=b"v3", IfMatch=second)["ETag"]
    assert third not in (first, second)

"""Worker processes for the race tests (started with the "spawn" context, so importable here).

Each worker builds its clients first, then meets the others at a barrier before every round,
so that all of them send their conditional writes at the same moment. It reports what it saw
through a queue: ``(worker, [per-round result, ...])`` or ``(worker, "error: ...")``.
"""

from __future__ import annotations

import time
import traceback
import uuid
from collections.abc import Callable
from datetime import datetime, timezone
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from queue import Empty
from typing import Any

from sleeper_spark.config import CatalogConfig
from sleeper_spark.errors import (
    PathExistsError,
    PreconditionFailedError,
    TableAlreadyExistsError,
    TransactionNumberTakenError,
)
from sleeper_spark.log.aws.dynamodb_log import DynamoDBTransactionLog
from sleeper_spark.log.aws.dynamodb_log_tables import ensure_tables
from sleeper_spark.log.aws.dynamodb_registry import DynamoDBTableRegistry
from sleeper_spark.log.aws.dynamodb_snapshots_table import DynamoDBStatePointer
from sleeper_spark.log.registry import TableEntry
from sleeper_spark.storage.aws import make_client
from sleeper_spark.storage.s3 import S3ObjectStore
from tests.fixtures.processes import racing_context

BARRIER_TIMEOUT_S = 120
RESULT_TIMEOUT_S = 300


def run_workers(target: Callable[..., None], workers: int, args: Callable[[int], tuple[Any, ...]]) -> list[Any]:
    """Runs ``target(worker, *args(worker), barrier, queue)`` in ``workers`` spawned processes.

    Returns each worker's result, by worker number; fails if any worker failed.
    """
    context = racing_context()
    barrier = context.Barrier(workers)
    queue: Queue[Any] = context.Queue()
    processes = [
        context.Process(target=target, args=(worker, *args(worker), barrier, queue), daemon=True)
        for worker in range(workers)
    ]
    for process in processes:
        process.start()
    results: dict[int, Any] = {}
    deadline = time.monotonic() + RESULT_TIMEOUT_S
    try:
        while len(results) < workers and time.monotonic() < deadline:
            try:
                worker, result = queue.get(timeout=1)
            except Empty:
                if any(not p.is_alive() and w not in results for w, p in enumerate(processes)):
                    barrier.abort()  # one died without a word: release the others from the barrier
                if not any(process.is_alive() for process in processes):
                    break  # all gone: what they sent has arrived by now
                continue
            results[worker] = result
    finally:
        for process in processes:
            process.join(timeout=30)
            if process.is_alive():
                process.kill()
    missing = sorted(set(range(workers)) - set(results))
    exit_codes = {worker: processes[worker].exitcode for worker in missing}
    assert not missing, f"workers {missing} sent no result; their exit codes: {exit_codes}"
    errors = [r for r in results.values() if isinstance(r, str) and r.startswith("error: ")]
    assert not errors, "a worker failed:\n" + "\n".join(errors)
    return [results[worker] for worker in range(workers)]


def _run(worker: int, barrier: Barrier, queue: Queue[Any], body: Callable[[], Any]) -> None:
    try:
        queue.put((worker, body()))
    except BaseException:
        barrier.abort()  # release the others at once instead of at the barrier's timeout
        queue.put((worker, "error: " + traceback.format_exc()))


def _dynamodb(endpoint: str) -> tuple[Any, Any]:
    config = CatalogConfig(catalog="aws", warehouse="s3://unused/unused", endpoint_url=endpoint)
    return make_client("dynamodb", config), make_client("dynamodb", config, retries=False)


def s3_create_race(
    worker: int, endpoint: str, uri: str, rounds: int, barrier: Barrier, queue: Queue[Any]
) -> None:
    def body() -> list[bool]:
        config = CatalogConfig(catalog="object_store", warehouse=uri, endpoint_url=endpoint)
        store = S3ObjectStore(uri, config)
        store.head("warm-up")  # open a connection before the race starts
        won = []
        for round_ in range(rounds):
            barrier.wait(BARRIER_TIMEOUT_S)
            try:
                store.create_if_absent(f"race/{round_:04d}", f"worker {worker} round {round_}".encode())
                won.append(True)
            except PathExistsError:
                won.append(False)
        return won

    _run(worker, barrier, queue, body)


def s3_counter_race(
    worker: int, endpoint: str, uri: str, increments: int, barrier: Barrier, queue: Queue[Any]
) -> None:
    """Read-modify-write of one counter with replace-if-match; returns how many landed."""

    def body() -> int:
        config = CatalogConfig(catalog="object_store", warehouse=uri, endpoint_url=endpoint)
        store = S3ObjectStore(uri, config)
        store.head("counter")
        barrier.wait(BARRIER_TIMEOUT_S)
        landed = 0
        while landed < increments:
            info = store.head("counter")
            assert info is not None
            value = int(store.get("counter"))
            try:
                store.replace_if_match("counter", str(value + 1).encode(), info.etag)
                landed += 1
            except PreconditionFailedError:
                continue
        return landed

    _run(worker, barrier, queue, body)


def log_append_race(
    worker: int, endpoint: str, table: str, table_id: str, rounds: int, barrier: Barrier, queue: Queue[Any]
) -> None:
    def body() -> list[bool]:
        client, conditional = _dynamodb(endpoint)
        log = DynamoDBTransactionLog(client, table, table_id, conditional_client=conditional)
        log.first_number()
        won = []
        for round_ in range(rounds):
            barrier.wait(BARRIER_TIMEOUT_S)
            try:
                log.append(round_ + 1, f"worker {worker} round {round_} {uuid.uuid4()}".encode())
                won.append(True)
            except TransactionNumberTakenError:
                won.append(False)
        return won

    _run(worker, barrier, queue, body)


def pointer_race(
    worker: int, endpoint: str, table: str, table_id: str, targets: list[int], barrier: Barrier, queue: Queue[Any]
) -> None:
    """Advances the pointer to each target; returns (target, moved, seen after) per round."""

    def body() -> list[tuple[int, bool, int | None]]:
        client, conditional = _dynamodb(endpoint)
        pointer = DynamoDBStatePointer(client, table, table_id, conditional_client=conditional)
        pointer.get()
        seen = []
        for target in targets:
            barrier.wait(BARRIER_TIMEOUT_S)
            moved = pointer.advance(target)
            seen.append((target, moved, pointer.get()))
        return seen

    _run(worker, barrier, queue, body)


def registry_race(
    worker: int, endpoint: str, table: str, name: str, barrier: Barrier, queue: Queue[Any]
) -> None:
    def body() -> str | None:
        client, conditional = _dynamodb(endpoint)
        registry = DynamoDBTableRegistry(client, table, "s3://race/warehouse", conditional_client=conditional)
        registry.lookup("warm-up")
        entry = TableEntry(
            name=name, table_id=str(uuid.uuid4()), root=name, created_at=datetime.now(timezone.utc)
        )
        barrier.wait(BARRIER_TIMEOUT_S)
        try:
            registry.register(entry)
            return entry.table_id
        except TableAlreadyExistsError:
            return None

    _run(worker, barrier, queue, body)


def ensure_tables_race(
    worker: int, endpoint: str, transactions: str, snapshots: str, barrier: Barrier, queue: Queue[Any]
) -> None:
    def body() -> str:
        client, _ = _dynamodb(endpoint)
        client.list_tables(Limit=1)
        barrier.wait(BARRIER_TIMEOUT_S)
        ensure_tables(client, transactions, snapshots)
        return "ok"

    _run(worker, barrier, queue, body)

"""Strategies as picklable specs, and the worker processes of the race tests.

Workers are started with the "spawn" context (a fresh interpreter, as on a cluster), so they
live in an importable module. Each builds its strategy from a :class:`StrategySpec`, then
meets the others at a barrier before every round, so that all of them write at one moment.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from typing import Any

from sleeper_spark.config import CatalogConfig
from sleeper_spark.errors import PathExistsError, PreconditionFailedError
from sleeper_spark.storage import LocalObjectStore, ObjectStore
from sleeper_spark.storage.conditional import ConditionalWriteStrategy
from sleeper_spark.storage.strategies import open_conditional_writes
from tests.fixtures.processes import racing_context
from tests.storage.stores import PlainStore

BARRIER_TIMEOUT_S = 120.0
RESULT_TIMEOUT_S = 600.0
WON = "won"
LOST = "lost"


@dataclass(frozen=True)
class StrategySpec:
    """A strategy (``native``, ``dynamodb-lock``, ``put-and-verify``) on a warehouse."""

    name: str
    kind: str
    warehouse: str
    s3_endpoint: str | None = None
    dynamodb_endpoint: str | None = None
    lock_table: str | None = None

    @property
    def on_s3(self) -> bool:
        return self.warehouse.startswith("s3://")

    def config(self) -> CatalogConfig:
        return CatalogConfig(
            catalog="object_store",
            warehouse=self.warehouse,
            s3_endpoint_url=self.s3_endpoint,
            dynamodb_endpoint_url=self.dynamodb_endpoint,
            conditional_writes=self.kind,
            lock_table=self.lock_table,
        )

    def store(self) -> ObjectStore:
        """The warehouse; without conditional requests unless the strategy is native."""
        if self.on_s3:
            from sleeper_spark.storage.s3 import S3ObjectStore

            inner: ObjectStore = S3ObjectStore(self.warehouse, self.config())
        else:
            inner = LocalObjectStore(self.warehouse)
        return inner if self.kind == "native" else PlainStore(inner)

    def build(self) -> tuple[ObjectStore, ConditionalWriteStrategy]:
        store = self.store()
        return store, open_conditional_writes(store, self.config())


def attempt(action: Callable[[], object]) -> str:
    """WON, LOST (the condition failed), or the unexpected error."""
    try:
        action()
        return WON
    except (PathExistsError, PreconditionFailedError):
        return LOST
    except Exception as error:
        return f"{type(error).__name__}: {error}"


# -- processes -----------------------------------------------------------------------------


def run_processes(target: Callable[..., None], workers: int, args: tuple[Any, ...]) -> list[Any]:
    """Runs ``target(worker, *args, barrier, queue)`` in spawned processes; their results in order."""
    context = racing_context()
    barrier = context.Barrier(workers)
    queue: Queue[Any] = context.Queue()
    processes = [context.Process(target=target, args=(w, *args, barrier, queue), daemon=True) for w in range(workers)]
    for process in processes:
        process.start()
    try:
        results = dict(queue.get(timeout=RESULT_TIMEOUT_S) for _ in processes)
    finally:
        for process in processes:
            process.join(timeout=30)
            if process.is_alive():
                process.kill()
    failures = [r for r in results.values() if isinstance(r, str)]
    assert not failures, "a worker failed:\n" + "\n".join(failures)
    return [results[w] for w in range(workers)]


def create_race(worker: int, spec: StrategySpec, prefix: str, rounds: int, barrier: Barrier,
                queue: Queue[Any]) -> None:
    try:
        _store, conditional = spec.build()
        results = []
        for number in range(rounds):
            barrier.wait(BARRIER_TIMEOUT_S)
            key, data = f"{prefix}/{number:04d}.json", f"{worker}:{number}".encode()
            results.append(attempt(partial(conditional.create_if_absent, key, data)))
        queue.put((worker, results))
    except BaseException:
        barrier.abort()  # free the others now rather than at the barrier's timeout
        queue.put((worker, "error: " + traceback.format_exc()))


# -- threads -------------------------------------------------------------------------------


def run_threads(racers: int, rounds: int, action: Callable[[int, int], object]) -> list[list[str]]:
    """``action(racer, round)`` in ``racers`` threads that start each round together."""
    barrier = threading.Barrier(racers)
    results: list[list[str]] = [[] for _ in range(racers)]
    errors: list[str] = []

    def racer(index: int) -> None:
        try:
            for number in range(rounds):
                barrier.wait(BARRIER_TIMEOUT_S)
                results[index].append(attempt(partial(action, index, number)))
        except BaseException:
            barrier.abort()
            errors.append(traceback.format_exc())

    threads = [threading.Thread(target=racer, args=(i,), daemon=True) for i in range(racers)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + RESULT_TIMEOUT_S
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    assert not errors, "a racer failed:\n" + "\n".join(errors)
    assert not any(t.is_alive() for t in threads), "a racer hung"
    return results


def mutex_worker(worker: int, spec: StrategySpec, path: str, iterations: int, barrier: Barrier,
                 queue: Queue[Any]) -> None:
    """Increments a counter object under the mutex; reports when it held the lock."""
    from sleeper_spark.storage.locks import Mutex

    try:
        store = spec.store()
        held: list[tuple[float, float]] = []
        barrier.wait(BARRIER_TIMEOUT_S)
        for _ in range(iterations):
            with Mutex(store, path, label=f"worker {worker}", timeout_s=RESULT_TIMEOUT_S, poll_s=0.02):
                entered = time.time()
                count = int(store.get("counter"))
                time.sleep(0.005)  # widen the window in which a second holder would lose an update
                store.put("counter", str(count + 1).encode())
                held.append((entered, time.time()))
        queue.put((worker, held))
    except BaseException:
        barrier.abort()
        queue.put((worker, "error: " + traceback.format_exc()))

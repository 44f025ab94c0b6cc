"""The store operations a put-and-verify write asks for, and how they are run against a store.

The protocol (:mod:`~sleeper_spark.storage.put_and_verify`) is a generator that yields these
operations and is sent their results, so that the same code runs against a store
(:func:`run_steps`) and under the exhaustive interleaving checker of the tests.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar

from sleeper_spark.storage.base import ObjectStore

T = TypeVar("T")


@dataclass(frozen=True)
class PutOp:
    key: str
    data: bytes


@dataclass(frozen=True)
class ListOp:
    prefix: str


@dataclass(frozen=True)
class HeadOp:
    key: str


@dataclass(frozen=True)
class DeleteOp:
    key: str


@dataclass(frozen=True)
class SleepOp:
    seconds: float


StoreOp = PutOp | ListOp | HeadOp | DeleteOp | SleepOp
# A protocol run: yields operations, is sent their results (etag, list of ObjectInfo,
# ObjectInfo or None, None).
Steps = Generator[StoreOp, Any, T]


def run_steps(steps: Steps[T], store: ObjectStore, sleep: Callable[[float], None] = time.sleep) -> T:
    """Runs ``steps`` against ``store``; a failed operation is raised inside the generator, which cleans up."""
    result: Any = None
    error: Exception | None = None
    while True:
        try:
            op = steps.throw(error) if error is not None else steps.send(result)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        result, error = None, None
        try:
            if isinstance(op, PutOp):
                result = store.put(op.key, op.data)
            elif isinstance(op, ListOp):
                result = list(store.list(op.prefix))
            elif isinstance(op, HeadOp):
                result = store.head(op.key)
            elif isinstance(op, DeleteOp):
                store.delete(op.key)
            else:
                sleep(op.seconds)
        except Exception as failure:  # handed to the generator, which cleans up and re-raises
            error = failure

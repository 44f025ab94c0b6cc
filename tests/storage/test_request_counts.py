"""Requests per conditional write, by kind, counted with botocore event hooks on the real clients.

The table in docs/conditional-writes.md is this test's expectation.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from sleeper_spark.errors import PathExistsError, PreconditionFailedError
from sleeper_spark.storage.aws import make_client
from tests.storage.workers import StrategySpec

pytestmark = pytest.mark.integration

WIN = {
    "native": {"PutObject": 1},
    "dynamodb-lock": {"HeadObject": 2, "PutItem": 1, "PutObject": 1, "DeleteItem": 1},
    "put-and-verify": {"PutObject": 2, "ListObjectsV2": 1, "HeadObject": 1, "DeleteObject": 1},
}
LOSE = {
    "native": {"PutObject": 1},
    "dynamodb-lock": {"HeadObject": 1},
    "put-and-verify": {"PutObject": 1, "ListObjectsV2": 1, "DeleteObject": 1},
}


@pytest.fixture
def count(spec: StrategySpec) -> Iterator[Callable[[Callable[[], object]], Counter[str]]]:
    """Runs an action and returns the API calls it made, by operation."""
    config = spec.config()
    clients: list[Any] = [make_client("s3", config), make_client("s3", config, retries=False)]
    if spec.kind == "dynamodb-lock":
        clients.append(make_client("dynamodb", config))
    calls: Counter[str] = Counter()

    def record(model: Any, **_: Any) -> None:
        calls[model.name] += 1

    for client in clients:
        client.meta.events.register("before-call", record)

    def run(action: Callable[[], object]) -> Counter[str]:
        calls.clear()
        try:
            action()
        except (PathExistsError, PreconditionFailedError):
            pass
        return Counter(calls)

    yield run
    for client in clients:
        client.meta.events.unregister("before-call", record)


@pytest.mark.parametrize("spec", ["native-seaweedfs", "dynamodb-lock-seaweedfs", "put-and-verify-seaweedfs"],
                         indirect=True)
def test_requests_per_conditional_write(spec: StrategySpec, count: Callable[[Callable[[], object]], Counter[str]],
                                        report: list[str]) -> None:
    _, conditional = spec.build()
    key = f"t/_state/{uuid.uuid4().hex}"
    created = count(lambda: conditional.create_if_absent(key, b"1"))
    lost_create = count(lambda: conditional.create_if_absent(key, b"again"))
    etag = spec.store().head(key)
    assert etag is not None
    replaced = count(lambda: conditional.replace_if_match(key, b"2", etag.etag))
    lost_replace = count(lambda: conditional.replace_if_match(key, b"3", etag.etag))
    assert spec.store().get(key) == b"2"
    assert created == WIN[spec.kind] and replaced == WIN[spec.kind]
    assert lost_create == LOSE[spec.kind] and lost_replace == LOSE[spec.kind]
    report.append(f"requests, {spec.kind}: create/replace {dict(created)}; losing create/replace {dict(lost_create)}")

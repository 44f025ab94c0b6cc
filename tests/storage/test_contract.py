"""One contract for every conditional-write strategy, on every store it serves.

Strategies: native on the local disk and on SeaweedFS, dynamodb-lock on SeaweedFS with
DynamoDB Local, put-and-verify on SeaweedFS and on the local disk. The non-native ones run on
a store that refuses conditional requests, so they are tested with native support switched
off. Races use threads (one client, shared connection pools) and spawned processes (each
its own interpreter and pools, as executors on a cluster); every round must have exactly one
winner, and the stored object must be the winner's.
"""

from __future__ import annotations

import time

import pytest

from sleeper_spark.errors import PathExistsError, PreconditionFailedError
from tests.reliability.budget import LONG_RUN
from tests.storage.stores import PlainStore
from tests.storage.workers import LOST, WON, StrategySpec, create_race, run_processes, run_threads

THREADS = 6
PROCESSES = 5
ROUNDS = 20 if LONG_RUN else 10  # each round is a race of all threads or processes


def _check_rounds(results: list[list[str]], rounds: int) -> list[int]:
    """Asserts one winner and only clean losers per round; returns each round's winner."""
    winners = []
    for number in range(rounds):
        outcomes = [racer[number] for racer in results]
        assert outcomes.count(WON) == 1, f"round {number}: {outcomes}"
        assert outcomes.count(LOST) == len(outcomes) - 1, f"round {number}: {outcomes}"
        winners.append(outcomes.index(WON))
    return winners


def test_non_native_strategies_run_without_conditional_requests(spec: StrategySpec) -> None:
    store, _ = spec.build()
    assert isinstance(store, PlainStore) == (spec.kind != "native")


def test_create_if_absent_writes_once(spec: StrategySpec) -> None:
    store, conditional = spec.build()
    etag = conditional.create_if_absent("t/_log/1.json", b"first")
    assert store.get("t/_log/1.json") == b"first"
    info = store.head("t/_log/1.json")
    assert info is not None and info.etag.strip('"') == etag.strip('"')
    with pytest.raises(PathExistsError):
        conditional.create_if_absent("t/_log/1.json", b"second")
    assert store.get("t/_log/1.json") == b"first"
    # A key that merely starts with another is a different object.
    conditional.create_if_absent("t/_log/1.json.json", b"other")
    assert [i.key for i in store.list("t/_log/")] == ["t/_log/1.json", "t/_log/1.json.json"]


def test_replace_if_match_needs_the_current_etag(spec: StrategySpec) -> None:
    store, conditional = spec.build()
    first = conditional.create_if_absent("t/_state/latest", b"1")
    second = conditional.replace_if_match("t/_state/latest", b"2", first)
    assert second.strip('"') != first.strip('"')
    with pytest.raises(PreconditionFailedError):
        conditional.replace_if_match("t/_state/latest", b"stale", first)
    assert store.get("t/_state/latest") == b"2"
    # The etags that HEAD and LIST report are as good as the one the write returned.
    head = store.head("t/_state/latest")
    assert head is not None
    third = conditional.replace_if_match("t/_state/latest", b"3", head.etag)
    [listed] = [i for i in store.list("t/_state/") if i.key == "t/_state/latest"]
    assert listed.etag.strip('"') == third.strip('"')
    conditional.replace_if_match("t/_state/latest", b"4", listed.etag)
    assert store.get("t/_state/latest") == b"4"
    with pytest.raises(PreconditionFailedError):
        conditional.replace_if_match("t/_state/missing", b"x", first)
    assert store.head("t/_state/missing") is None


def test_threads_racing_to_create_have_one_winner_per_round(spec: StrategySpec, report: list[str]) -> None:
    store, conditional = spec.build()
    started = time.perf_counter()
    results = run_threads(THREADS, ROUNDS, lambda racer, n: conditional.create_if_absent(
        f"race/{n:04d}.json", f"{racer}:{n}".encode()))
    elapsed = time.perf_counter() - started
    for number, winner in enumerate(_check_rounds(results, ROUNDS)):
        assert store.get(f"race/{number:04d}.json") == f"{winner}:{number}".encode()
    report.append(f"create race, {THREADS} threads x {ROUNDS} rounds, {spec.name}: {elapsed:.2f}s")


def test_processes_racing_to_create_have_one_winner_per_round(spec: StrategySpec, report: list[str]) -> None:
    started = time.perf_counter()
    results = run_processes(create_race, PROCESSES, (spec, "race", ROUNDS))
    elapsed = time.perf_counter() - started
    store, _ = spec.build()
    for number, winner in enumerate(_check_rounds(results, ROUNDS)):
        assert store.get(f"race/{number:04d}.json") == f"{winner}:{number}".encode()
    report.append(
        f"create race, {PROCESSES} processes x {ROUNDS} rounds, {spec.name}: {elapsed:.2f}s (incl. process start)"
    )


def test_threads_racing_to_replace_have_one_winner_per_round(spec: StrategySpec, report: list[str]) -> None:
    store, conditional = spec.build()
    etags = [conditional.create_if_absent(f"pointer/{n:04d}", b"0") for n in range(ROUNDS)]
    started = time.perf_counter()
    results = run_threads(THREADS, ROUNDS, lambda racer, n: conditional.replace_if_match(
        f"pointer/{n:04d}", f"{racer}:{n}".encode(), etags[n]))
    elapsed = time.perf_counter() - started
    for number, winner in enumerate(_check_rounds(results, ROUNDS)):
        assert store.get(f"pointer/{number:04d}") == f"{winner}:{number}".encode()
    report.append(f"replace race, {THREADS} threads x {ROUNDS} rounds, {spec.name}: {elapsed:.2f}s")

"""What the package keeps for the life of a process: bounded, shared safely, not inherited by a fork."""

from __future__ import annotations

import multiprocessing
import threading

from sleeper_spark.process_state import OnceSet, ProcessCache


def test_a_cache_makes_each_entry_once_and_keeps_the_ones_used_last() -> None:
    cache: ProcessCache[int, object] = ProcessCache(3)
    made: list[int] = []

    def make(key: int) -> object:
        made.append(key)
        return object()

    first = cache.get_or_create(1, lambda: make(1))
    for key in (2, 3, 1, 4):  # 1 used again, so 2 is the least recently used when 4 arrives
        cache.get_or_create(key, lambda k=key: make(k))

    assert made == [1, 2, 3, 4] and len(cache) == 3
    assert cache.get_or_create(1, lambda: make(1)) is first
    cache.get_or_create(2, lambda: make(2))
    assert made == [1, 2, 3, 4, 2]


def test_racing_threads_make_an_entry_once() -> None:
    cache: ProcessCache[str, object] = ProcessCache(4)
    made: list[object] = []
    start = threading.Barrier(8)

    def racer() -> None:
        start.wait()
        cache.get_or_create("k", lambda: made.append(object()) or made[-1])

    threads = [threading.Thread(target=racer) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 1


def _entries_in_child(cache: ProcessCache[str, object], queue: multiprocessing.Queue[int]) -> None:
    queue.put(len(cache))


def test_a_forked_child_does_not_inherit_what_must_not_cross_a_fork() -> None:
    kept: ProcessCache[str, object] = ProcessCache(4)
    forgotten: ProcessCache[str, object] = ProcessCache(4, forget_after_fork=True)
    for cache in (kept, forgotten):
        cache.get_or_create("client", object)

    context = multiprocessing.get_context("fork")
    counts = []
    for cache in (kept, forgotten):
        queue: multiprocessing.Queue[int] = context.Queue()
        child = context.Process(target=_entries_in_child, args=(cache, queue))
        child.start()
        counts.append(queue.get(timeout=30))
        child.join(timeout=30)
    assert counts == [1, 0]


def test_once_is_once_per_key() -> None:
    said = OnceSet()
    assert [said.first("a"), said.first("a"), said.first("b")] == [True, False, True]

"""A mutex and a readers-writer lock on the object store, built on put-and-verify.

Lock files, for a lock path ``p``:

* mutex: ``p`` itself;
* readers-writer: the write lock at ``p.WRIT``, each read lock at ``p.READ.<random>``;
* intents of writers in flight: ``<lock file>.INTENT.<write id>``.

Each is written by one put-and-verify write (:mod:`~sleeper_spark.storage.put_and_verify`),
whose check sees every intent and lock file of ``p``. A mutex is taken only while ``p`` does
not exist; a write lock only while no other read or write lock file of ``p`` exists and no
intent to take one; a read lock only while there is no write lock and no writer's intent.
Read locks have random names, so readers never conflict with each other. A writer waits
while readers hold on (no fairness: a steady stream of readers can starve it).

Every lock file records its owner (host, pid, a label), ``acquired_at`` and ``expires_at``.
Expiry is advisory: nothing removes a lock by itself, because its holder may be slow rather
than dead. :func:`lock_status` shows who holds a lock, and :func:`break_lock` removes expired
lock files (and intents older than the staleness bound), or every one of them with ``force``
— for an operator who has made sure that the holder is gone. A holder that needs longer than
its lease calls :meth:`HeldLock.renew`.

The mutex and the readers-writer lock of one path are separate locks: they do not exclude each
other. Lock paths must not be a dotted extension of one another's (``a`` and ``a.READ.1``).
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Literal

from sleeper_spark.config import StoreRetryPolicy
from sleeper_spark.errors import LockHeldError, StaleIntentError
from sleeper_spark.layout import INTENT_MARK
from sleeper_spark.models.lock_files import HeldLockKind, IntentBody, LockFileBody, LockOwner
from sleeper_spark.storage.base import ObjectInfo, ObjectStore
from sleeper_spark.storage.put_and_verify import (
    GuardedWrite,
    Listing,
    PutAndVerifySettings,
    exclusive_write,
    own_target_intents,
    utc_now,
)
from sleeper_spark.storage.retry import FailureKind, StoreRetries
from sleeper_spark.storage.store_steps import run_steps

log = logging.getLogger(__name__)

LockKind = Literal["mutex", "write", "read", "intent"]

WRITE_SUFFIX = ".WRIT"
READ_MARK = ".READ."
DEFAULT_LEASE_S = 3600.0
DEFAULT_POLL_S = 0.5
# The lock loop polls by itself, so each guarded write gives up early under contention.
LOCK_SETTINGS = PutAndVerifySettings(max_attempts=4)
# Releasing retries a failing store 4 times, waiting 0.2 s, 0.4 s, 0.8 s in between.
RELEASE_RETRY = StoreRetryPolicy(max_attempts=4, base_delay_s=0.2, max_delay_s=0.8, jitter=0.0, max_elapsed_s=30.0)

_FAMILY = re.compile(r"^(\.WRIT|\.READ\.[0-9a-f]+)?(\.INTENT\.[0-9a-f]+)?$")


def in_family(key: str, path: str) -> bool:
    """Whether ``key`` is a lock file or an intent of the lock at ``path``."""
    return key.startswith(path) and _FAMILY.match(key[len(path):]) is not None


def _is_intent(key: str, path: str) -> bool:
    return INTENT_MARK in key[len(path):]


def _in_rw_family(key: str, path: str) -> bool:
    return in_family(key, path) and key[len(path):].startswith((WRITE_SUFFIX, READ_MARK))


@dataclass(frozen=True)
class LockInfo:
    """One lock file (or a writer's intent) of a lock, as :func:`lock_status` reads it."""

    key: str
    kind: LockKind
    host: str
    pid: int
    label: str
    acquired_at: datetime
    expires_at: datetime
    token: str = ""

    def expired(self, now: datetime) -> bool:
        return now >= self.expires_at

    def describe(self) -> str:
        who = f"{self.label!r} " if self.label else ""
        return (
            f"{self.kind} lock {self.key} of {who}(pid {self.pid} on {self.host}) since "
            f"{self.acquired_at.isoformat()}, expiring {self.expires_at.isoformat()}"
        )


def _encode(info: LockInfo) -> bytes:
    kind: HeldLockKind = info.kind if info.kind != "intent" else "mutex"  # an intent is never encoded
    owner = LockOwner(host=info.host, pid=info.pid, label=info.label)
    return LockFileBody(kind=kind, owner=owner, token=info.token, acquired_at=info.acquired_at,
                        expires_at=info.expires_at).encode()


def _decode(key: str, data: bytes, modified: datetime, intent_bound_s: float) -> LockInfo:
    try:
        document = json.loads(data)
        if isinstance(document, dict) and "written_at" in document:  # a put-and-verify intent
            intent = IntentBody.model_validate(document)
            return LockInfo(key, "intent", intent.host, intent.pid, "", intent.written_at,
                            intent.written_at + timedelta(seconds=intent_bound_s))
        body = LockFileBody.model_validate(document)
        return LockInfo(key, body.kind, body.owner.host, body.owner.pid, body.owner.label, body.acquired_at,
                        body.expires_at, body.token)
    except ValueError:  # pydantic's ValidationError is one
        # Unreadable: show it with the store's timestamp, so that it can still be broken.
        kind: LockKind = "intent" if INTENT_MARK in key else "mutex"
        return LockInfo(key, kind, "?", 0, "unreadable lock file", modified,
                        modified + timedelta(seconds=intent_bound_s))


def lock_status(
    store: ObjectStore, path: str, *, intent_bound_s: float = LOCK_SETTINGS.stale_after_s
) -> list[LockInfo]:
    """Every lock file and writer's intent of the lock at ``path`` (mutex or readers-writer)."""
    found: list[LockInfo] = []
    for info in store.list(path):
        if not in_family(info.key, path):
            continue
        try:
            data = store.get(info.key)
        except FileNotFoundError:
            continue  # released while we looked
        found.append(_decode(info.key, data, info.last_modified, intent_bound_s))
    return found


def break_lock(
    store: ObjectStore, path: str, *, force: bool = False, now: datetime | None = None,
    intent_bound_s: float = LOCK_SETTINGS.stale_after_s,
) -> list[LockInfo]:
    """Removes expired lock files and stale intents of ``path`` (all of them with ``force``).

    Only once the holders are known to be gone: a broken lock lets a second holder in beside
    a live first one. Returns what was removed.
    """
    moment = now or utc_now()
    doomed = [i for i in lock_status(store, path, intent_bound_s=intent_bound_s) if force or i.expired(moment)]
    for info in doomed:
        store.delete(info.key)
        log.warning("broke %s", info.describe())
    return doomed


class HeldLock:
    """A lock this process holds; releases it when the ``with`` block ends."""

    def __init__(self, store: ObjectStore, info: LockInfo, sleep: Callable[[float], None] = time.sleep) -> None:
        self._store = store
        self.info = info
        self._held = True
        self._sleep = sleep

    def release(self) -> None:
        """Removes the lock file, unless someone broke it and another holder took its place.

        A store that keeps failing is retried a few times; after that the lock file stays, an
        error is logged that says how to remove it, and nothing is raised: the work done under
        the lock is finished, and the next holder's :class:`LockHeldError` names this one.
        """
        if not self._held:
            return
        self._held = False
        retries = StoreRetries(RELEASE_RETRY, f"releasing {self.info.key}", sleep=self._sleep)
        for attempt in retries:
            with attempt:
                try:
                    if self._still_ours():
                        self._store.delete(self.info.key)
                    else:
                        log.warning("%s was broken while held; not removing it", self.info.describe())
                    return
                except Exception as error:
                    # A delete that may have landed is harmless to repeat.
                    retries.failed(error, FailureKind.NOT_APPLIED)
        log.error("could not release %s: %s; it stays until it is broken (`sleeper-spark lock "
                  "break`, or break_lock) or its lease ends", self.info.describe(), retries.last)

    def _still_ours(self) -> bool:
        try:
            return LockFileBody.decode(self._store.get(self.info.key)).token == self.info.token
        except (FileNotFoundError, ValueError):
            return False

    def renew(self, lease_s: float = DEFAULT_LEASE_S, now: datetime | None = None) -> LockInfo:
        """Moves ``expires_at`` to ``lease_s`` from now. :class:`LockHeldError` if it was broken."""
        if not self._still_ours():
            raise LockHeldError(f"{self.info.describe()} was broken; it is no longer held")
        renewed = replace(self.info, expires_at=(now or utc_now()) + timedelta(seconds=lease_s))
        # Only the holder writes its own lock file, so a plain PUT cannot race another writer.
        self._store.put(self.info.key, _encode(renewed))
        self.info = renewed
        return renewed

    def __enter__(self) -> HeldLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class _Lock:
    """What the mutex and the readers-writer lock share: owner, lease, polling, status."""

    def __init__(
        self,
        store: ObjectStore,
        path: str,
        *,
        label: str = "",
        timeout_s: float = 0.0,
        lease_s: float = DEFAULT_LEASE_S,
        poll_s: float = DEFAULT_POLL_S,
        settings: PutAndVerifySettings = LOCK_SETTINGS,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        now: Callable[[], datetime] = utc_now,
    ) -> None:
        self.store = store
        self.path = path.rstrip("/")
        self.label = label
        self._timeout_s = timeout_s
        self._lease_s = lease_s
        self._poll_s = poll_s
        self._settings = settings
        self._clock = clock
        self._sleep = sleep
        self._now = now

    def status(self) -> list[LockInfo]:
        return lock_status(self.store, self.path, intent_bound_s=self._settings.stale_after_s)

    def break_lock(self, *, force: bool = False) -> list[LockInfo]:
        return break_lock(self.store, self.path, force=force, now=self._now(),
                          intent_bound_s=self._settings.stale_after_s)

    def _acquire(
        self, kind: LockKind, key: str, guarded_write: Callable[[bytes], GuardedWrite], timeout_s: float | None
    ) -> HeldLock:
        wait_s = self._timeout_s if timeout_s is None else timeout_s
        deadline = self._clock() + wait_s
        while True:
            acquired = self._now()
            info = LockInfo(key, kind, socket.gethostname(), os.getpid(), self.label, acquired,
                            acquired + timedelta(seconds=self._lease_s), secrets.token_hex(16))
            try:
                steps = exclusive_write(guarded_write(_encode(info)), self._settings, now=self._now)
                run_steps(steps, self.store, self._sleep)
                return HeldLock(self.store, info, self._sleep)
            except StaleIntentError:
                raise  # will not go away by waiting
            except LockHeldError:
                pass
            remaining = deadline - self._clock()
            if remaining <= 0:
                found = self.status()
                holders = [i for i in found if i.kind != "intent"] or found
                described = "; ".join(i.describe() for i in holders) or "a writer that has just finished"
                raise LockHeldError(
                    f"could not take the {kind} lock {self.path} within {wait_s:g}s: held by {described}; "
                    "if the holder is gone, break it with `sleeper-spark lock break`"
                ) from None
            self._sleep(min(self._poll_s, remaining))

    def _rw_holders(self, listing: Listing) -> list[ObjectInfo]:
        return [i for i in listing.objects if _in_rw_family(i.key, self.path) and not _is_intent(i.key, self.path)]

    def _rw_intents(self, listing: Listing) -> list[ObjectInfo]:
        return [i for i in listing.objects if _in_rw_family(i.key, self.path) and _is_intent(i.key, self.path)
                and i.key != listing.own_intent]


def _refuse(holders: list[ObjectInfo], path: str) -> None:
    if holders:
        raise LockHeldError(f"lock {path} is held ({', '.join(h.key for h in holders)})")


class Mutex(_Lock):
    """An exclusive lock at ``path``; ``with Mutex(store, path, timeout_s=...): ...`` waits for it.

    One object per holder: used as a context manager it remembers the lock it took.
    """

    _held: HeldLock | None = None

    def acquire(self, timeout_s: float | None = None) -> HeldLock:
        """Takes the lock, waiting up to ``timeout_s``; :class:`LockHeldError` naming the holder."""
        return self._acquire("mutex", self.path, self.guarded_write, timeout_s)

    def guarded_write(self, body: bytes) -> GuardedWrite:
        """Writes the lock file ``path`` while it does not exist."""

        def verify(listing: Listing) -> None:
            _refuse([i for i in listing.objects if i.key == self.path], self.path)

        return GuardedWrite(self.path, body, verify, scope=self.path, conflicts=own_target_intents, recheck="head")

    def __enter__(self) -> HeldLock:
        self._held = self.acquire()
        return self._held

    def __exit__(self, *exc: object) -> None:
        held, self._held = self._held, None
        if held is not None:
            held.release()


class ReadWriteLock(_Lock):
    """Shared read locks and an exclusive write lock at ``path``: ``with rw.read(): ...``."""

    def read(self, timeout_s: float | None = None) -> HeldLock:
        """A read lock, once no write lock is held or being taken."""
        key = f"{self.path}{READ_MARK}{secrets.token_hex(8)}"
        return self._acquire("read", key, lambda body: self.read_guarded_write(key, body), timeout_s)

    def write(self, timeout_s: float | None = None) -> HeldLock:
        """The write lock, once no other lock of this path is held or being taken."""
        return self._acquire("write", self.path + WRITE_SUFFIX, self.write_guarded_write, timeout_s)

    def read_guarded_write(self, key: str, body: bytes) -> GuardedWrite:
        """Writes the read lock ``key`` while there is neither a write lock nor a writer's intent."""
        write_key = self.path + WRITE_SUFFIX

        def verify(listing: Listing) -> None:
            _refuse([i for i in self._rw_holders(listing) if i.key == write_key], self.path)

        def writers(listing: Listing) -> list[ObjectInfo]:
            return [i for i in self._rw_intents(listing) if i.key.startswith(write_key + INTENT_MARK)]

        return GuardedWrite(key, body, verify, scope=self.path, conflicts=writers, recheck="list")

    def write_guarded_write(self, body: bytes) -> GuardedWrite:
        """Writes the write lock while no other lock file or intent of the path exists."""

        def verify(listing: Listing) -> None:
            _refuse(self._rw_holders(listing), self.path)

        return GuardedWrite(
            self.path + WRITE_SUFFIX, body, verify, scope=self.path, conflicts=self._rw_intents, recheck="list"
        )

"""Create-if-absent and replace-if-match from put-and-verify writes: the ``put-and-verify`` strategy."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sleeper_spark.errors import PathExistsError, PreconditionFailedError
from sleeper_spark.storage.base import ObjectInfo, ObjectStore
from sleeper_spark.storage.conditional import ConditionalWriteStrategy
from sleeper_spark.storage.put_and_verify import (
    GuardedWrite,
    Listing,
    PutAndVerifySettings,
    Verify,
    exclusive_write,
    is_intent_of,
    normal_etag,
    utc_now,
)
from sleeper_spark.storage.store_steps import Steps, run_steps

log = logging.getLogger(__name__)


def refuse_if_present(listing: Listing) -> None:
    if listing.find(listing.target) is not None:
        raise PathExistsError(f"{listing.target} exists already")


def refuse_unless_etag(etag: str) -> Verify:
    expected = normal_etag(etag)

    def verify(listing: Listing) -> None:
        current = listing.find(listing.target)
        if current is None:
            raise PreconditionFailedError(f"{listing.target} does not exist")
        if normal_etag(current.etag) != expected:
            raise PreconditionFailedError(f"{listing.target} changed since it was read")

    return verify


def create_steps(key: str, data: bytes, settings: PutAndVerifySettings, **options: Any) -> Steps[str]:
    return exclusive_write(GuardedWrite(key, data, refuse_if_present), settings, **options)


def replace_steps(key: str, data: bytes, etag: str, settings: PutAndVerifySettings, **options: Any) -> Steps[str]:
    return exclusive_write(GuardedWrite(key, data, refuse_unless_etag(etag)), settings, **options)


class PutAndVerifyConditionalWrites(ConditionalWriteStrategy):
    """Create-if-absent and replace-if-match from intent files and LIST (see the module doc).

    Uses only ``put``, ``list``, ``head`` and ``delete`` of the store, never its own
    conditional requests, so it serves stores that have none. Costs per uncontended write:
    two PUTs, one LIST, one HEAD and one DELETE. Errors: :class:`PathExistsError`, :class:`PreconditionFailedError`,
    :class:`LockHeldError` (contention that outlasted every attempt, or a stale intent), and
    the store's own :class:`StorageError`.
    """

    def __init__(
        self,
        store: ObjectStore,
        settings: PutAndVerifySettings | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        now: Callable[[], datetime] = utc_now,
    ) -> None:
        self._store = store
        self._settings = settings or PutAndVerifySettings()
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._now = now

    @property
    def settings(self) -> PutAndVerifySettings:
        return self._settings

    def create_if_absent(self, key: str, data: bytes) -> str:
        steps = create_steps(key, data, self._settings, rng=self._rng, now=self._now)
        return run_steps(steps, self._store, self._sleep)

    def replace_if_match(self, key: str, data: bytes, etag: str) -> str:
        steps = replace_steps(key, data, etag, self._settings, rng=self._rng, now=self._now)
        return run_steps(steps, self._store, self._sleep)

    def intents(self, key: str) -> list[ObjectInfo]:
        """The intent files of ``key`` now stored: writers in flight, or left by crashed ones."""
        return [info for info in self._store.list(key) if is_intent_of(info.key, key)]

    def break_stale_intents(self, key: str, older_than_s: float | None = None) -> list[str]:
        """Deletes intents of ``key`` older than ``older_than_s`` (default: the staleness bound).

        Only for intents whose writer is known to be gone: removing the intent of a live writer
        lets a second writer in beside it. Returns the keys deleted.
        """
        bound = self._settings.stale_after_s if older_than_s is None else older_than_s
        reference = self._now()
        doomed = [i.key for i in self.intents(key) if (reference - i.last_modified).total_seconds() > bound]
        for doomed_key in doomed:
            self._store.delete(doomed_key)
            log.warning("removed stale intent %s", self._store.uri(doomed_key))
        return doomed

"""Exclusive writes on any store whose PUT, GET and LIST are strongly consistent (put-and-verify).

A put-and-verify write (a :class:`GuardedWrite`) puts ``target`` only if no other writer is
writing it at the same moment and the caller's ``verify`` hook accepts what is stored:

1. PUT an intent file ``<target>.INTENT.<write id>``;
2. LIST the target's prefix (or a wider ``scope``);
3. run ``verify`` on the listing: it raises to refuse (create: the target must not exist;
   replace: its etag must be the expected one);
4. if the listing holds an intent of another writer, delete ours, back off (jittered) and try
   again; before each new attempt LIST once more and write no intent while others' are there,
   so that a crowd thins out instead of colliding forever;
5. confirm: HEAD the target (or LIST again, when ``verify`` looks beyond the target) and run
   ``verify`` once more;
6. PUT the target, then DELETE the intent.

Why it is exclusive: each writer PUTs its intent *before* it LISTs. Of two writers, the one
that LISTs second therefore sees the other's intent, unless the other has removed it already:
having given up, or having written its target. A LIST is not one atomic snapshot, though: it
is only sure to show objects that exist from its start to its end (a local directory scan
drops a file deleted between reading the names and stating them, and may miss one created
meanwhile). So it can miss both a finishing writer's intent, deleted during the LIST, and
the target that writer wrote just before. That target was complete before the LIST ended,
so the confirming look of step 5, which starts after it, sees it. Hence at most one writer
is ever between a passing check and the deletion of its intent. This needs PUT, DELETE, HEAD
and LIST to be strongly (read-after-write) consistent, which S3, SeaweedFS and a local disk
are; it is not safe on a store whose LIST may lag its PUTs.

Rules and limits:

* Every writer of a target must use this protocol. A plain PUT or a native conditional PUT of
  the same key is not seen by the check.
* A failure that ``verify`` reports is definitive and wins over any intent in the listing:
  the target existed (or had another etag) when it was listed.
* A writer that crashes between its intent and its deletion leaves the intent behind, and
  every later writer of that target backs off from it. An intent older than
  ``stale_after_s`` makes the writer fail at once with :class:`LockHeldError` naming it; an
  operator removes it with ``PutAndVerifyConditionalWrites.break_stale_intents``. It is
  never removed automatically: a writer that is merely slow could still write its target.
* For the same reason a writer whose target PUT fails keeps its intent and raises
  :class:`WriteOutcomeUnknownError`: the PUT may still land.
* Ages are measured with the store's own timestamps (our intent's against theirs) where the
  listing has ours, else against this machine's clock.
* A writer that loses every attempt to intents of others LISTs once more: a definitive
  failure if ``verify`` refuses, else :class:`LockHeldError`. Under contention it is possible
  that every writer gives up; exclusion never depends on the attempt bound, only progress.

The protocol is written once, as a generator of store operations
(:mod:`~sleeper_spark.storage.store_steps`), so that the same code runs against a store and
under an exhaustive interleaving checker. The conditional-write strategy built on it is
:mod:`~sleeper_spark.storage.put_and_verify_writes`; the locks are :mod:`~sleeper_spark.storage.locks`.
"""

from __future__ import annotations

import logging
import os
import random
import socket
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Literal

from sleeper_spark.config import StoreRetryPolicy
from sleeper_spark.errors import LockHeldError, StaleIntentError, StorageError, WriteOutcomeUnknownError
from sleeper_spark.layout import INTENT_MARK
from sleeper_spark.models.lock_files import IntentBody
from sleeper_spark.storage.base import ObjectInfo
from sleeper_spark.storage.store_steps import DeleteOp, HeadOp, ListOp, PutOp, SleepOp, Steps

log = logging.getLogger(__name__)


# -- what a write sees -----------------------------------------------------------------------


def intent_key(target: str, write_id: str) -> str:
    return f"{target}{INTENT_MARK}{write_id}"


def is_intent_of(key: str, target: str) -> bool:
    rest = key[len(target):]
    return key.startswith(target) and rest.startswith(INTENT_MARK) and "/" not in rest


def normal_etag(etag: str) -> str:
    """An etag without the quotes or weak marker that some stores put around it."""
    return etag.removeprefix("W/").strip('"')


@dataclass(frozen=True)
class Listing:
    """One LIST of a write's scope, taken after its intent was written (or before any)."""

    target: str
    own_intent: str | None
    objects: tuple[ObjectInfo, ...]

    def find(self, key: str) -> ObjectInfo | None:
        return next((info for info in self.objects if info.key == key), None)

    def intents(self, target: str | None = None) -> list[ObjectInfo]:
        """Intent files of ``target`` (default: this write's), other than our own."""
        of = self.target if target is None else target
        return [i for i in self.objects if i.key != self.own_intent and is_intent_of(i.key, of)]

    def reference_time(self, now: datetime) -> datetime:
        own = self.find(self.own_intent) if self.own_intent else None
        return own.last_modified if own is not None else now


Verify = Callable[[Listing], None]
Conflicts = Callable[[Listing], list[ObjectInfo]]


def own_target_intents(listing: Listing) -> list[ObjectInfo]:
    return listing.intents()


@dataclass(frozen=True)
class PutAndVerifySettings:
    """Attempts, time and backoff of one write (as :class:`StoreRetryPolicy`'s), and when an intent is stale."""

    max_attempts: int = 12
    base_delay_s: float = 0.02
    max_delay_s: float = 1.0
    stale_after_s: float = 600.0
    max_elapsed_s: float = 60.0

    @property
    def retry_policy(self) -> StoreRetryPolicy:
        return StoreRetryPolicy(max_attempts=self.max_attempts, base_delay_s=self.base_delay_s,
                                max_delay_s=self.max_delay_s, jitter=1.0, max_elapsed_s=self.max_elapsed_s)

    def delay(self, attempt: int, rng: random.Random) -> float:
        return self.retry_policy.delay_s(attempt, rng)


@dataclass(frozen=True)
class GuardedWrite:
    """One exclusive write of ``data`` to ``target``, and the check that guards it."""

    target: str
    data: bytes
    verify: Verify
    scope: str | None = None  # what to LIST; the target's own prefix unless given
    conflicts: Conflicts = own_target_intents
    # How the check is confirmed: "head" when ``verify`` looks at the target only, else "list".
    recheck: Literal["head", "list"] = "head"


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def exclusive_write(
    write: GuardedWrite,
    settings: PutAndVerifySettings,
    *,
    new_id: Callable[[], str] = lambda: uuid.uuid4().hex,
    rng: random.Random | None = None,
    now: Callable[[], datetime] = utc_now,
) -> Steps[str]:
    """The put-and-verify protocol (see the module doc); returns the target's new etag."""
    rng = rng or random.Random()
    scope = write.scope if write.scope is not None else write.target
    blockers: list[ObjectInfo] = []
    started = now()
    # One look more than attempts: after the last attempt, a definitive answer if there is one.
    for attempt in range(1, settings.max_attempts + 2):
        if attempt > 1:
            delay = settings.delay(attempt - 1, rng)
            out_of_time = (now() - started).total_seconds() + delay > settings.max_elapsed_s
            if not out_of_time:
                yield SleepOp(delay)
            final = out_of_time or attempt > settings.max_attempts
            # Look before writing again: adding an intent to a crowd only prolongs the crowd.
            listing = Listing(write.target, None, tuple((yield ListOp(scope))))
            write.verify(listing)
            blockers = write.conflicts(listing)
            if blockers:
                _fail_if_stale(write.target, blockers, listing.reference_time(now()), settings)
            if final:
                break
            if blockers:
                continue
        intent = intent_key(write.target, new_id())
        yield PutOp(intent, _intent_body(write.target, now()))
        try:
            listing = Listing(write.target, intent, tuple((yield ListOp(scope))))
            write.verify(listing)
            blockers = write.conflicts(listing)
            if blockers:
                _fail_if_stale(write.target, blockers, listing.reference_time(now()), settings)
            else:
                # Confirm with a look that starts after the LIST ended (see the module doc).
                if write.recheck == "head":
                    head = yield HeadOp(write.target)
                    write.verify(Listing(write.target, intent, (head,) if head is not None else ()))
                else:
                    listing = Listing(write.target, intent, tuple((yield ListOp(scope))))
                    write.verify(listing)
                    blockers = write.conflicts(listing)
        except Exception:
            yield DeleteOp(intent)
            raise
        if blockers:
            yield DeleteOp(intent)
            continue
        try:
            etag: str = yield PutOp(write.target, write.data)
        except Exception as error:
            # The PUT may still land. Our intent stays, so that no other writer passes the
            # check until an operator has made sure that nothing of ours is in flight.
            raise WriteOutcomeUnknownError(
                f"PUT of {write.target} failed and may have landed ({error}); its intent {intent} is kept "
                "to hold off other writers: remove it with break_stale_intents once this writer is gone"
            ) from error
        try:
            yield DeleteOp(intent)
        except StorageError as error:
            # The target is written; a leftover intent only delays later writers of this key.
            log.warning("wrote %s but could not remove its intent %s: %s", write.target, intent, error)
        return etag
    raise LockHeldError(
        f"{write.target}: other writers kept intent files through {settings.max_attempts} attempts or "
        f"{settings.max_elapsed_s:g}s "
        f"({_describe(blockers, None)}); try again later"
    )


def _fail_if_stale(
    target: str, blockers: list[ObjectInfo], reference: datetime, settings: PutAndVerifySettings
) -> None:
    stale = [i for i in blockers if (reference - i.last_modified).total_seconds() > settings.stale_after_s]
    if stale:
        raise StaleIntentError(
            f"{target}: intent file(s) {_describe(stale, reference)} are older than {settings.stale_after_s:.0f}s, "
            "probably left by a writer that crashed; once no writer of it is running, remove them with "
            "PutAndVerifyConditionalWrites.break_stale_intents(key) (see docs/conditional-writes.md; "
            "`sleeper-spark lock break` removes maintenance locks, not intents)"
        )


def _describe(intents: Iterable[ObjectInfo], reference: datetime | None) -> str:
    parts = []
    for info in intents:
        age = f", {(reference - info.last_modified).total_seconds():.0f}s old" if reference else ""
        parts.append(f"{info.key} (written {info.last_modified.isoformat()}{age})")
    return "; ".join(parts) or "none left"


def _intent_body(target: str, at: datetime) -> bytes:
    # Only for people looking at a leftover intent: who wrote it, and when.
    return IntentBody(target=target, host=socket.gethostname(), pid=os.getpid(), written_at=at).encode()

"""How a store call that failed is tried again: one policy type for every store, on tenacity.

Every loop below ``commit/`` that repeats a call to an object store or a log backend (a
conditional PUT or PutItem whose answer was lost, a batch with unprocessed items, a release of
a lock, a compare-and-swap that lost a race) runs through :class:`StoreRetries`. It is bounded
twice, by :attr:`~sleeper_spark.config.StoreRetryPolicy.max_attempts` and by
:attr:`~sleeper_spark.config.StoreRetryPolicy.max_elapsed_s` (waits included), so that a store
that throttles or misbehaves for ever ends the loop with the caller's typed error instead of
hanging the job. The sleep and the clock are injectable: tests record the waits, nothing sleeps.

Usage::

    retries = StoreRetries(policy, "S3 PUT of x", sleep=sleep)
    for attempt in retries:
        with attempt:
            try:
                return call()
            except SomeFailure as error:
                retries.failed(error, kind_of(error))  # raises to ask for another attempt
                raise MappedError(...)                 # reached when no retry can help
    # reached when every attempt failed: retries.last, retries.maybe_applied, retries.throttled
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterator
from enum import Enum

from tenacity import (
    AttemptManager,
    RetryCallState,
    RetryError,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    stop_any,
)
from tenacity.stop import stop_base

from sleeper_spark.config import StoreRetryPolicy

log = logging.getLogger(__name__)


class FailureKind(Enum):
    """What a failed attempt means for a retry."""

    NOT_APPLIED = "not-applied"  # rejected before it took effect: retrying is safe
    MAYBE_APPLIED = "maybe-applied"  # it may have taken effect, or may still do so
    THROTTLED = "throttled"  # the service asked us to slow down; it did not take effect


class _TryAgain(Exception):
    """Raised inside an attempt to ask for another one; never leaves :class:`StoreRetries`."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class _StopBeforeElapsed(stop_base):
    """Stops when the next wait would end more than ``limit_s`` after the first attempt began.

    tenacity's own ``stop_before_delay`` reads the real clock; this one reads an injectable one.
    """

    def __init__(self, limit_s: float, clock: Callable[[], float]) -> None:
        self._limit_s = limit_s
        self._clock = clock
        self._started = clock()

    def __call__(self, retry_state: RetryCallState) -> bool:
        return self._clock() - self._started + (retry_state.upcoming_sleep or 0.0) > self._limit_s


class StoreRetries:
    """The attempts of one store operation under a :class:`StoreRetryPolicy` (see the module doc).

    Iterating yields tenacity attempts until one succeeds (the caller returns from inside it),
    one raises something other than a retry request (it propagates), or the policy's bounds are
    reached (the loop just ends). :meth:`failed` records what each failure means.
    """

    def __init__(
        self,
        policy: StoreRetryPolicy,
        what: str,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self.policy = policy
        self.what = what
        self._sleep = sleep
        self._clock = clock
        self._rng = rng or random.Random()
        self.maybe_applied = False  # some attempt may have taken effect, or may still do so
        self.throttled = False  # the last failure was throttling
        self.attempts = 0  # attempts made so far
        self._last: Exception | None = None

    @property
    def last(self) -> Exception:
        """The last failure :meth:`failed` recorded; after a loop that ran out, there is one."""
        assert self._last is not None
        return self._last

    def describe(self) -> str:
        """``5 attempts failed, the last with <failure>``, for error messages."""
        return f"{self.attempts} attempt(s) failed, the last with {self._last}"

    def failed(self, error: Exception, kind: FailureKind | None) -> None:
        """Records a failed attempt and asks for another (raises); returns if ``kind`` is ``None``.

        ``None`` means that no retry will fix the failure: the caller then raises its own error.
        """
        if kind is None:
            return
        self.maybe_applied = self.maybe_applied or kind is FailureKind.MAYBE_APPLIED
        self.throttled = kind is FailureKind.THROTTLED
        self._last = error
        raise _TryAgain(error)

    def __iter__(self) -> Iterator[AttemptManager]:
        retrying = Retrying(
            retry=retry_if_exception_type(_TryAgain),
            wait=self._wait,
            stop=stop_any(stop_after_attempt(self.policy.max_attempts),
                          _StopBeforeElapsed(self.policy.max_elapsed_s, self._clock)),
            before_sleep=self._before_sleep,
            sleep=self._sleep,
            reraise=False,
        )
        try:
            for attempt in retrying:
                self.attempts = attempt.retry_state.attempt_number
                yield attempt
        except RetryError:
            return  # out of attempts or of time: the caller decides what that means

    def _wait(self, state: RetryCallState) -> float:
        return self.policy.delay_s(state.attempt_number, self._rng)

    def _before_sleep(self, state: RetryCallState) -> None:
        log.info("%s: attempt %d failed (%s); trying again in %.3fs", self.what, state.attempt_number,
                 self._last, state.upcoming_sleep)


"""The one retry policy of every commit, as a tenacity ``Retrying``.

The sleep is injectable so that tests record the waits instead of sleeping.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable

from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt

from sleeper_spark.config import RetryPolicy

log = logging.getLogger(__name__)


class RetryCommit(Exception):
    """Raised inside an attempt to ask for another one (never leaves the commit loop)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def jittered_wait(policy: RetryPolicy, rng: random.Random) -> Callable[[RetryCallState], float]:
    def wait(state: RetryCallState) -> float:
        exponent = min(state.attempt_number - 1, 30)
        delay = min(policy.max_delay_s, policy.base_delay_s * 2**exponent)
        return float(delay * (1 - policy.jitter) + rng.uniform(0, delay * policy.jitter))

    return wait


def commit_retrying(policy: RetryPolicy, table: str, sleep: Callable[[float], None],
                    rng: random.Random | None = None) -> Retrying:
    def before_sleep(state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        reason = error.reason if isinstance(error, RetryCommit) else repr(error)
        log.warning("table %s: commit attempt %d lost (%s); retrying", table, state.attempt_number, reason)

    return Retrying(
        retry=retry_if_exception_type(RetryCommit),
        wait=jittered_wait(policy, rng or random.Random()),
        stop=stop_after_attempt(policy.max_attempts),
        before_sleep=before_sleep,
        sleep=sleep,
        reraise=False,
    )

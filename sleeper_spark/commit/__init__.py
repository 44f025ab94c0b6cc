"""Catch-up, validate, conditional append, retry: the only package that loops or sleeps."""

from sleeper_spark.commit.head import (
    TRUNCATION_MIN_AGE_S,
    BuildTransaction,
    CommitResult,
    TableHead,
    idempotent_repeat,
    utc_now,
)
from sleeper_spark.commit.retry import RetryCommit

__all__ = [
    "TRUNCATION_MIN_AGE_S",
    "BuildTransaction",
    "CommitResult",
    "RetryCommit",
    "TableHead",
    "idempotent_repeat",
    "utc_now",
]

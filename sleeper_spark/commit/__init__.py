"""Catch-up, validate, conditional append, retry: the only package that loops over commit attempts.

Single store and log calls retry on their own, under the one store policy (``storage/retry.py``).
"""

from sleeper_spark.commit.entries import LogEntry
from sleeper_spark.commit.group import GroupCommit
from sleeper_spark.commit.head import BuildTransaction, CommitResult, TableHead, utc_now
from sleeper_spark.commit.proposals import pending_paths
from sleeper_spark.commit.reading import TRUNCATION_MIN_AGE_S
from sleeper_spark.commit.repeats import idempotent_repeat
from sleeper_spark.commit.retry import RetryCommit

__all__ = [
    "TRUNCATION_MIN_AGE_S",
    "BuildTransaction",
    "CommitResult",
    "GroupCommit",
    "LogEntry",
    "RetryCommit",
    "TableHead",
    "idempotent_repeat",
    "pending_paths",
    "utc_now",
]

"""Catch-up, validate, conditional append, retry: the only package that loops or sleeps."""

from sleeper_spark.commit.head import BuildTransaction, CommitResult, TableHead, utc_now
from sleeper_spark.commit.retry import RetryCommit

__all__ = ["BuildTransaction", "CommitResult", "RetryCommit", "TableHead", "utc_now"]

"""Catch-up, validate, conditional append, retry: the only package that loops over commit attempts.

Single store and log calls retry on their own, under the one store policy (``storage/retry.py``).
"""

from sleeper_spark.commit.decisions import DecisionBook, MemberEntries
from sleeper_spark.commit.entries import LogEntry
from sleeper_spark.commit.group import GroupCommit
from sleeper_spark.commit.head import BuildTransaction, CommitResult, TableHead, utc_now
from sleeper_spark.commit.members import (
    TRANSACTION_KEY,
    AppendedEntries,
    LostRace,
    StagingHead,
    append_entries,
    append_member,
    as_member,
    contended,
)
from sleeper_spark.commit.proposals import pending_paths
from sleeper_spark.commit.reading import TRUNCATION_MIN_AGE_S
from sleeper_spark.commit.repeats import idempotent_repeat
from sleeper_spark.commit.retry import RetryCommit

__all__ = [
    "TRANSACTION_KEY",
    "TRUNCATION_MIN_AGE_S",
    "AppendedEntries",
    "BuildTransaction",
    "CommitResult",
    "DecisionBook",
    "GroupCommit",
    "LogEntry",
    "LostRace",
    "MemberEntries",
    "RetryCommit",
    "StagingHead",
    "TableHead",
    "append_entries",
    "append_member",
    "as_member",
    "contended",
    "idempotent_repeat",
    "pending_paths",
    "utc_now",
]

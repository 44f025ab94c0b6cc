"""The whole exception hierarchy of sleeper_spark.

Every error a user can see derives from :class:`SleeperSparkError`. Messages say what
happened and what to do. Backend-specific exceptions (botocore, OSError) are mapped to these
at the storage and log boundaries and never travel further up.
"""

from __future__ import annotations


class SleeperSparkError(Exception):
    """Root of every error raised by sleeper_spark."""


class ConfigError(SleeperSparkError):
    """A setting is missing, unknown or has an invalid value."""


class InvalidTableNameError(SleeperSparkError):
    """A table name does not match ``[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}``."""


class InvalidNamespaceNameError(InvalidTableNameError):
    """A namespace name is not dot-separated parts of ``[A-Za-z0-9_][A-Za-z0-9_-]*``.

    A subclass of :class:`InvalidTableNameError`: a namespace name is the prefix of table names,
    so code that refuses bad names refuses both with one ``except``.
    """


class TableNotFoundError(SleeperSparkError):
    """No table with this name exists in the catalog."""


class NamespaceNotFoundError(SleeperSparkError):
    """No namespace with this name exists in the catalog: none was created, and no table's name has it as a prefix.

    Not a :class:`TableNotFoundError`: code that catches that one to create the missing table
    (``catalog.write``, a ``save``) has nothing to create for a missing namespace, since
    creating a table never needs its namespace to exist.
    """


class WarehouseNotFoundError(TableNotFoundError, NamespaceNotFoundError):
    """The warehouse itself does not exist (a mistyped local path); nothing was created.

    A subclass of :class:`TableNotFoundError` and :class:`NamespaceNotFoundError` because every
    table and namespace of a missing warehouse is missing: code that creates a table or a
    namespace when it finds none (``catalog.write``, a ``save``, ``CREATE NAMESPACE``) goes on
    to create the warehouse with it.
    """


class TableAlreadyExistsError(SleeperSparkError):
    """A table with this name exists already."""


class NamespaceAlreadyExistsError(SleeperSparkError):
    """A namespace with this name exists already: it was created, or a table's name has it as a prefix."""


class NamespaceNotEmptyError(SleeperSparkError):
    """A namespace still holds tables or namespaces, so it was not dropped; nothing was changed."""


class NoSnapshotsError(SleeperSparkError):
    """The table has no data snapshot yet (nothing was ever written)."""


class SnapshotNotFoundError(SleeperSparkError):
    """The requested version or timestamp does not name a snapshot of the table."""


class SchemaMismatchError(SleeperSparkError):
    """The data's schema does not fit the table's schema; nothing was written."""


class CommitConflictError(SleeperSparkError):
    """A concurrent change made this transaction invalid; retrying will not help."""


class CommitFailedError(SleeperSparkError):
    """Retries were exhausted; nothing was committed and staged files were removed."""


class CommitStateUnknownError(SleeperSparkError):
    """The outcome of a commit could not be learnt; staged files are kept.

    Look at ``table.history()`` for the write's ``write_id`` before writing again.
    """


class PathExistsError(SleeperSparkError):
    """An object that must be new exists already (data files are never overwritten)."""


class CorruptLogError(SleeperSparkError):
    """A log entry, a spilled body or a state snapshot cannot be decoded."""


class CorruptDataFileError(SleeperSparkError):
    """A data file's bytes do not match the size and checksum the log recorded, or do not decode.

    Nothing was read from it. ``table.verify()`` lists every such file; restore it from a
    backup, or time-travel to a version without it.
    """


class DeltaPublishError(SleeperSparkError):
    """A version could not be published to the Delta log beside the table; the commit stands.

    The version is in the sleeper log and readable through sleeper_spark; only engines that read
    the Delta log do not see it yet. Also raised when the folder holds a ``_delta_log`` that
    another writer made: it is never overwritten.
    """


class IcebergPublishError(SleeperSparkError):
    """A version could not be published as Iceberg metadata; the commit stands.

    The version is in the log and readable through sleeper_spark; only other engines that read
    the Iceberg metadata do not see it yet.
    """


class MergeCardinalityError(SleeperSparkError):
    """Two source rows of a merge match one target row; nothing was committed."""


class LockHeldError(SleeperSparkError):
    """A lock is held by someone else."""


class StaleIntentError(LockHeldError):
    """An intent of another writer is older than the staleness bound: its writer probably crashed."""


class StorageError(SleeperSparkError):
    """The object store or the log backend failed in a way that is not a conflict."""


class TransactionNumberTakenError(SleeperSparkError):
    """Another writer appended this transaction number first: catch up and try the next one.

    The commit loop handles it; it reaches user code only from a transaction log used directly.
    """


class AppendOutcomeUnknownError(StorageError):
    """A log append may or may not have landed (a lost response, a timeout)."""


class LogThrottledError(StorageError):
    """The log backend asked us to slow down; the request did not land and may be retried."""


class PreconditionFailedError(StorageError):
    """A replace-if-match found another version of the object than the one expected."""


class WriteOutcomeUnknownError(StorageError):
    """A conditional write may or may not have landed (a lost response, a timeout).

    Retrying it blindly could report a write of our own as someone else's: read the object
    to learn what happened.
    """


__all__ = [
    "AppendOutcomeUnknownError",
    "CommitConflictError",
    "CommitFailedError",
    "CommitStateUnknownError",
    "ConfigError",
    "CorruptDataFileError",
    "CorruptLogError",
    "DeltaPublishError",
    "IcebergPublishError",
    "InvalidNamespaceNameError",
    "InvalidTableNameError",
    "LockHeldError",
    "LogThrottledError",
    "MergeCardinalityError",
    "NamespaceAlreadyExistsError",
    "NamespaceNotEmptyError",
    "NamespaceNotFoundError",
    "NoSnapshotsError",
    "PathExistsError",
    "PreconditionFailedError",
    "SchemaMismatchError",
    "SleeperSparkError",
    "SnapshotNotFoundError",
    "StaleIntentError",
    "StorageError",
    "TableAlreadyExistsError",
    "TableNotFoundError",
    "TransactionNumberTakenError",
    "WarehouseNotFoundError",
    "WriteOutcomeUnknownError",
]

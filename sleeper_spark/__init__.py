"""sleeper_spark: a PySpark-native table format for many concurrent writers.

Everything public is importable from here; see the API reference in docs/.
"""

import logging

import sleeper_spark.maintenance  # noqa: F401  registers the maintenance jobs with Table
from sleeper_spark.errors import (
    AppendOutcomeUnknownError,
    CommitConflictError,
    CommitFailedError,
    CommitStateUnknownError,
    ConfigError,
    CorruptDataFileError,
    CorruptLogError,
    DeltaPublishError,
    IcebergPublishError,
    InvalidNamespaceNameError,
    InvalidTableNameError,
    LockHeldError,
    LogThrottledError,
    MergeCardinalityError,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    NoSnapshotsError,
    PathExistsError,
    PreconditionFailedError,
    SchemaMismatchError,
    SleeperSparkError,
    SnapshotNotFoundError,
    StaleIntentError,
    StorageError,
    TableAlreadyExistsError,
    TableNotFoundError,
    TransactionNumberTakenError,
    WarehouseNotFoundError,
    WriteOutcomeUnknownError,
)
from sleeper_spark.models import ColumnStats, FileRef, Namespace, Snapshot, SnapshotMember, VacuumReport, VerifyReport
from sleeper_spark.spark import register, sleeper_error  # importing it registers the Spark bridge
from sleeper_spark.spark.common.jvm import catalog_conf, configure_spark, jar_path
from sleeper_spark.table import Catalog, CatalogTransaction, Table, TransactionRecord, TransactionResult
from sleeper_spark.version import __version__

# A library configures no handlers (the CLI does); this keeps conflict retries off stderr.
logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "AppendOutcomeUnknownError",
    "Catalog",
    "CatalogTransaction",
    "ColumnStats",
    "CommitConflictError",
    "CommitFailedError",
    "CommitStateUnknownError",
    "ConfigError",
    "CorruptDataFileError",
    "CorruptLogError",
    "DeltaPublishError",
    "FileRef",
    "IcebergPublishError",
    "InvalidNamespaceNameError",
    "InvalidTableNameError",
    "LockHeldError",
    "LogThrottledError",
    "MergeCardinalityError",
    "Namespace",
    "NamespaceAlreadyExistsError",
    "NamespaceNotEmptyError",
    "NamespaceNotFoundError",
    "NoSnapshotsError",
    "PathExistsError",
    "PreconditionFailedError",
    "SchemaMismatchError",
    "SleeperSparkError",
    "Snapshot",
    "SnapshotMember",
    "SnapshotNotFoundError",
    "StaleIntentError",
    "StorageError",
    "Table",
    "TableAlreadyExistsError",
    "TableNotFoundError",
    "TransactionNumberTakenError",
    "TransactionRecord",
    "TransactionResult",
    "VacuumReport",
    "VerifyReport",
    "WarehouseNotFoundError",
    "WriteOutcomeUnknownError",
    "__version__",
    "catalog_conf",
    "configure_spark",
    "jar_path",
    "register",
    "sleeper_error",
]

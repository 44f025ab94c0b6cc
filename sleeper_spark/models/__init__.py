"""Pure data: files, snapshots, schemas and the transactions of the log. No I/O here."""

from sleeper_spark.models.files import ColumnStats, FileRef, StatValue
from sleeper_spark.models.namespace import Namespace
from sleeper_spark.models.schema import DataType, Field, TableSchema
from sleeper_spark.models.snapshot import Snapshot, SnapshotMember
from sleeper_spark.models.transactions import (
    AddFiles,
    AppendGroup,
    CreateTable,
    FoldedTransaction,
    ReplaceFiles,
    SetProperties,
    SetSchema,
    Transaction,
    TransactionBase,
    TransactionDecision,
    TransactionMember,
    VoidedEntry,
    decode_transaction,
    encode_transaction,
)

__all__ = [
    "AddFiles",
    "AppendGroup",
    "ColumnStats",
    "CreateTable",
    "DataType",
    "Field",
    "FileRef",
    "FoldedTransaction",
    "Namespace",
    "ReplaceFiles",
    "SetProperties",
    "SetSchema",
    "Snapshot",
    "SnapshotMember",
    "StatValue",
    "TableSchema",
    "Transaction",
    "TransactionBase",
    "TransactionDecision",
    "TransactionMember",
    "VoidedEntry",
    "decode_transaction",
    "encode_transaction",
]

from sleeper_spark.models.reports import FileProblem, TruncateReport, VacuumReport, VerifyReport

__all__ += ["FileProblem", "TruncateReport", "VacuumReport", "VerifyReport"]

"""Catalog and Table: the user-facing facade."""

from sleeper_spark.table.catalog import Catalog
from sleeper_spark.table.table import Table
from sleeper_spark.table.transactions import CatalogTransaction, TransactionRecord, TransactionResult

__all__ = ["Catalog", "CatalogTransaction", "Table", "TransactionRecord", "TransactionResult"]

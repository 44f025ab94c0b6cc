"""Catalog and Table: the user-facing facade."""

from sleeper_spark.table.catalog import Catalog
from sleeper_spark.table.table import Table

__all__ = ["Catalog", "Table"]

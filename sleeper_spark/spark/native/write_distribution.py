"""Optimized writes: how a Spark write hands its rows to the tasks that write the files.

The table property ``write.distribution`` (:mod:`sleeper_spark.models.clustering`) chooses:

- ``none``: the rows stay in the tasks they come in, and each task writes a file for every
  partition value it holds: a write of random-order rows from 200 tasks into 50 partitions makes
  up to 10,000 small files.
- ``partition``: Spark's ``REBALANCE`` by the partition values first (one shuffle). Each partition
  value's rows meet in one task, so a write makes about one file per partition value; adaptive
  execution (on by default) splits a value too big for one task into tasks of its advisory size
  (``spark.sql.adaptive.advisoryPartitionSizeInBytes``) and packs small values together. An
  unpartitioned table's rows are rebalanced into tasks of that size.
- ``clustered``: as ``partition``, then each task's rows are put in order along the clustering
  curve (the one compaction uses, :mod:`sleeper_spark.datafiles.curves`) within each partition value, so
  each new file covers a small box of the clustering columns' space. The curve positions are
  computed in Python workers over all of a task's rows (``mapInArrow``), and Spark sorts by them.
  A table with no clustering columns is written as with ``partition``.

Appends and overwrites take it, through every path that writes with Spark's writer (the helper,
``format("sleeper")``, SQL, ``writeTo``) and the Python data source. MERGE, UPDATE and DELETE
spread the rows they rewrite by partition value already (:mod:`sleeper_spark.spark.rows.row_changes`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa

from sleeper_spark.datafiles.curves import curve_keys
from sleeper_spark.models.clustering import CURVE, clustering_columns, write_distribution
from sleeper_spark.spark.common.conversions import quoted_column
from sleeper_spark.state import TableState

CURVE_COLUMN = "__sleeper_curve"


def distributed(rows: Any, state: TableState, keys: Sequence[str]) -> Any:
    """``rows`` as the table's ``write.distribution`` wants them written; ``keys`` are the SQL
    expressions of the partition values (quoted columns, or the column of their hash) Spark's
    writer splits files by, empty for an unpartitioned table."""
    distribution = write_distribution(state.properties)
    if distribution == "none":
        return rows
    from pyspark.sql import functions as F

    rebalanced = rows.hint("rebalance", *[F.expr(key) for key in keys])
    cluster_by = tuple(c for c in clustering_columns(state.properties) if c in rows.columns)
    if distribution != "clustered" or not cluster_by:
        return rebalanced
    from pyspark.sql.types import LongType, StructField, StructType

    keyed_schema = StructType([*rebalanced.schema.fields, StructField(CURVE_COLUMN, LongType(), False)])
    keyed = rebalanced.mapInArrow(functools.partial(_with_curve_positions, cluster_by), keyed_schema)
    # Sorted by the partition values first: Spark's writer wants each task's rows grouped by
    # them, and adds no sort of its own where they already are.
    order = [F.expr(key) for key in keys] + [F.col(CURVE_COLUMN)]
    return keyed.sortWithinPartitions(*order).drop(CURVE_COLUMN)


def partition_keys(partition_by: Sequence[str]) -> list[str]:
    """The partition columns as SQL expressions, for :func:`distributed`."""
    return [quoted_column(name) for name in partition_by]


def _with_curve_positions(cluster_by: tuple[str, ...], batches: Iterator[pa.RecordBatch]
                          ) -> Iterator[pa.RecordBatch]:
    """In a Python worker: all of one task's rows, each with its position on the curve. Positions
    compare only within one call (the coordinates are ranks among its rows), and every row of a
    task goes through one call, so they order the task's rows."""
    collected = list(batches)
    if not collected:
        return
    data = pa.Table.from_batches(collected)
    positions = curve_keys(data, cluster_by, CURVE).cast(pa.int64())
    yield from data.append_column(CURVE_COLUMN, positions).to_batches()

"""Which files a Spark SQL condition over partition columns selects, worked out by Spark itself.

Every file of a partitioned table holds one tuple of partition values (``FileRef.partition``,
strings, ``None`` for null). When a condition names partition columns only, it is TRUE, FALSE or
NULL for all rows of a file at once, so a delete can drop the files it is TRUE for without
reading them. Rather than translate the condition (and risk a different answer for some type
coercion or NULL rule), Spark evaluates it: the distinct tuples become a ``VALUES`` relation,
each value written as ``CAST(<literal> AS <type>)`` of the column's Spark type, and the
condition filters it. Filtering and collecting such a relation runs on the driver (Spark folds
it into a local relation) and starts no Spark job.

Spark first resolves the condition over all the table's columns, on an empty frame (which
raises nothing for a condition that names data columns, and starts no job either). A condition
that names any column but a partition column, one it cannot resolve, one that is not
deterministic (``rand() < 0.5`` must be drawn per row) and a table without partition columns
give ``None``: the caller then evaluates the condition row by row (and reports Spark's error for a
condition that does not resolve). A session without a JVM (Spark Connect) cannot read the
resolved condition; there its text must read whole, over partition columns alone
(:mod:`~sleeper_spark.spark.conditions.condition_text`), and Spark then evaluates it as above.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from pyspark.errors import PySparkException

from sleeper_spark.models import FileRef
from sleeper_spark.spark.common.conversions import quoted_column, spark_schema
from sleeper_spark.state import TableState
from sleeper_spark.table.writes import Partition, file_partitions, files_in_partitions

_RELATION = "_sleeper_partitions"  # the relation's alias (the condition names columns without one)
_INDEX = "_sleeper_index"  # the relation's column that says which distinct tuple a row is
_INTEGERS = frozenset({"tinyint", "smallint", "int", "bigint"})
_RAW_STRINGS_CONF = "spark.sql.parser.escapedStringLiterals"  # "true": backslashes are not escapes


def files_where(spark: Any, state: TableState, condition: str) -> list[FileRef] | None:
    """The files of ``state`` whose partition values make ``condition`` TRUE (NULL and FALSE do not
    select); None when the condition is not over partition columns alone (see the module doc)."""
    partition_by = state.partition_by
    if not partition_by or str(spark.conf.get(_RAW_STRINGS_CONF, "false")).lower() == "true":
        return None
    if not hasattr(spark, "_jsparkSession") and not _text_over_partitions(state, condition):
        return None
    true = selected_tuples(spark, state, in_order(set(file_partitions(state))), condition)
    return None if true is None else files_in_partitions(state, true)


def in_order(partitions: set[Partition]) -> list[Partition]:
    """Partition value tuples in a fixed order (NULL last), so that a VALUES relation of them is always the same."""
    return sorted(partitions, key=lambda values: tuple((v is None, v or "") for v in values))


def selected_tuples(spark: Any, state: TableState, tuples: Sequence[Partition],
                    condition: str) -> set[Partition] | None:
    """Those of ``tuples`` (partition values as stored) that make ``condition`` TRUE; None: not
    over the partition columns alone."""
    from pyspark.sql import functions as F

    fields = spark_schema(state.schema, guarded=False)
    holds = F.coalesce(F.expr(condition), F.lit(False))  # as a delete's rows are: TRUE only (a bare NULL too)
    try:
        # Resolved over every column first, so that a condition naming a data column is told
        # apart without an error (Spark logs each analysis error it raises). Without a JVM the
        # caller has read the condition's text instead (_text_over_partitions).
        if hasattr(spark, "_jsparkSession"):
            plan = spark.createDataFrame([], fields).where(holds)._jdf.queryExecution().analyzed()
            if plan.getClass().getSimpleName() != "Filter" or not plan.condition().deterministic() or \
                    not _references(plan.condition()) <= set(state.partition_by):
                return None
        types = {f.name: f.dataType.simpleString() for f in fields.fields}
        index = _INDEX
        while index in state.partition_by:
            index += "_"
        relation = spark.sql(values_query([(c, types[c]) for c in state.partition_by], tuples, index))
        rows = relation.where(holds).select(index).collect()
    except (PySparkException, ValueError):  # ValueError: a stored value not of its column's type
        return None
    return {tuples[row[0]] for row in rows if row[0] >= 0}


def _text_over_partitions(state: TableState, condition: str) -> bool:
    """Whether ``condition``'s text, read whole (:mod:`~sleeper_spark.spark.conditions.condition_text`,
    which knows no function, so nothing it reads is drawn per row), names partition columns only."""
    from sleeper_spark.spark.conditions.condition_text import read_condition
    from sleeper_spark.spark.conditions.sql_conditions import Column, Node, Predicate, Unknown

    types = {f.name: f.dataType.typeName() for f in spark_schema(state.schema, guarded=False).fields}

    def over_partitions(node: Node) -> bool:
        if isinstance(node, Predicate):
            return all(over_partitions(arg) for arg in node.args)
        if isinstance(node, Column):
            return node.side == "target" and node.name in state.partition_by
        return not isinstance(node, Unknown)

    return over_partitions(read_condition(condition, types, None))


def _references(condition: Any) -> set[str]:
    """The names of the columns a resolved Spark expression reads."""
    attributes = condition.references().toList()
    return {attributes.apply(i).name() for i in range(attributes.size())}


def values_query(columns: Sequence[tuple[str, str]], tuples: Sequence[tuple[str | None, ...]], index: str) -> str:
    """``SELECT * FROM VALUES ...`` of ``tuples``, each row ending with its position in ``tuples``.

    ``columns`` are (name, Spark type) pairs. A table without files still needs a row for the
    query to parse: one of NULLs at position -1, which the caller ignores.
    """
    rows = [(values, position) for position, values in enumerate(tuples)] or [((None,) * len(columns), -1)]
    types = [spark_type for _, spark_type in columns]
    written = ", ".join(
        "(" + ", ".join([*map(spark_literal, values, types), str(position)]) + ")" for values, position in rows)
    names = ", ".join([*(quoted_column(name) for name, _ in columns), quoted_column(index)])
    return f"SELECT * FROM VALUES {written} AS {_RELATION}({names})"


def spark_literal(value: str | None, spark_type: str) -> str:
    """A stored partition value (:func:`~sleeper_spark.datafiles.stats.partition_value_to_string`)
    as a Spark SQL expression of ``spark_type``; each value is parsed first, so that nothing but a
    literal can reach the query."""
    if value is None:
        return f"CAST(NULL AS {spark_type.upper()})"
    if spark_type == "string":
        return "CAST('" + value.replace("\\", "\\\\").replace("'", "\\'") + "' AS STRING)"
    if spark_type in _INTEGERS:
        return f"CAST({int(value)} AS {spark_type.upper()})"
    if spark_type == "date":
        return f"CAST(DATE '{dt.date.fromisoformat(value).isoformat()}' AS DATE)"
    if spark_type == "boolean":
        return f"CAST({'true' if value == 'true' else 'false'} AS BOOLEAN)"  # as the pruning reads it
    raise ValueError(f"a partition column of Spark type {spark_type} (the table allows no such partition column)")


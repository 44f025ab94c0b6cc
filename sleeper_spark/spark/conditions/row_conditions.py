"""Which files an UPDATE's ``where`` or a MERGE's condition may need, as the table's file pruning.

The condition is resolved by Spark and read into nodes (:mod:`sleeper_spark.spark.conditions.sql_conditions`).
Each node gets two row filters: one true for every row where the node is TRUE, one true for
every row where it is FALSE; ``None`` stands for "every row" (nothing known). Files are then
pruned by the first filter of the whole condition (:func:`~sleeper_spark.datafiles.pruning.prune_table`).
Both are needed because ``NOT`` swaps them, and in SQL's three-valued logic "not TRUE" is not
"FALSE" (it may be NULL):

- ``a AND b`` is TRUE only where both are, FALSE where either is; ``a OR b`` the other way round;
- a column compared with a constant (``=``, ``<=>``, ``<``, ``<=``, ``>``, ``>=``, ``IN``,
  ``IS [NOT] NULL``, ``LIKE 'abc%'`` and other ``LIKE`` patterns without ``_``, ``startswith``,
  ``endswith``, ``contains``, a boolean column alone; ``BETWEEN`` is two comparisons) becomes the
  pushed filter Spark would give a data source, which :func:`~sleeper_spark.spark.conditions.filters.prune_expression`
  turns into pruning, including its rules for types, nulls and NaN;
- in a merge, ``target.k = source.k`` (or ``<=>``) is TRUE only for target rows whose ``k`` is
  one of the source's keys, which ``keys`` gives (see :mod:`sleeper_spark.spark.rows.merge_builder`);
  so is ``target.k`` equal to an expression of source columns alone (``source.id + 100000``),
  whose values the source gives the same way; so ``target.id = source.id OR target.id =
  source.id + 100000`` reads the files of either key set. Anything else over source columns may
  be TRUE for any target row;
- everything else says nothing, and a condition that says nothing reads every file.

A session without a JVM (Spark Connect) cannot read Spark's resolved tree: the condition's text
is read instead (:mod:`sleeper_spark.spark.conditions.condition_text`), which knows a smaller part
of Spark SQL and reads the rest as "any row". A condition Spark cannot resolve reads every file;
the change itself then reports Spark's error, or runs as it would have.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeGuard

import pyarrow as pa
import pyarrow.compute as pc
from py4j.protocol import Py4JError  # type: ignore[import-untyped]
from pyspark.errors import PySparkException
from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringContains,
    StringEndsWith,
    StringStartsWith,
)

from sleeper_spark.models import TableSchema
from sleeper_spark.spark.common.conversions import quoted_column, spark_schema
from sleeper_spark.spark.conditions.condition_text import read_condition
from sleeper_spark.spark.conditions.filters import prune_expression
from sleeper_spark.spark.conditions.sql_conditions import (
    Column,
    Constant,
    Node,
    Predicate,
    SourceValue,
    TreeReader,
    Unknown,
    attribute_sides,
)

log = logging.getLogger(__name__)

# (target column, source value as Spark SQL over the source's columns, null-safe): a filter true
# for the target rows such an equality may match, or None when the source's keys cannot be turned
# into one.
KeyRows = Callable[[str, str, bool], pc.Expression | None]
Sets = tuple[pc.Expression | None, pc.Expression | None]  # (where TRUE, where FALSE); None: any row

_NEVER = pc.scalar(False)
_COMPARISONS: dict[str, Callable[[tuple[str, ...], Any], Filter]] = {
    "EqualTo": EqualTo, "EqualNullSafe": EqualNullSafe, "LessThan": LessThan, "LessThanOrEqual": LessThanOrEqual,
    "GreaterThan": GreaterThan, "GreaterThanOrEqual": GreaterThanOrEqual,
}
_MIRRORED = {"EqualTo": "EqualTo", "EqualNullSafe": "EqualNullSafe", "LessThan": "GreaterThan",
             "LessThanOrEqual": "GreaterThanOrEqual", "GreaterThan": "LessThan",
             "GreaterThanOrEqual": "LessThanOrEqual"}
_STRINGS: dict[str, Callable[[tuple[str, ...], Any], Filter]] = {
    "StartsWith": StringStartsWith, "EndsWith": StringEndsWith, "Contains": StringContains,
}
_RESOLVE_ERRORS = (Py4JError, PySparkException, AttributeError, ValueError, TypeError, ArithmeticError)
_INTEGERS = frozenset({"byte", "short", "integer", "long"})


def update_rows(spark: Any, schema: TableSchema, where: str | None) -> pc.Expression | None:
    """A filter true for every row ``where`` (Spark SQL over the table's columns) holds for; None: every row."""
    if where is None:
        return None

    def resolve() -> Node:
        from pyspark.sql import functions as F

        if not _has_jvm(spark):
            return text_nodes(schema, where)
        empty = spark.createDataFrame([], spark_schema(schema, guarded=False))
        plan = empty.where(F.expr(where))._jdf.queryExecution().analyzed()
        if plan.getClass().getSimpleName() != "Filter":
            return Unknown()
        return TreeReader(attribute_sides(plan.child().output(), "target", list(schema.names))).read(plan.condition())

    return Translation(schema.to_arrow(), None).sets(_resolved(resolve))[0]


def merge_rows(source: Any, schema: TableSchema, condition: str, keys: KeyRows) -> pc.Expression | None:
    """A filter true for every target row that ``condition`` may match with some source row; None: every row."""
    def resolve() -> Node:
        from pyspark.sql import functions as F

        if not _has_jvm(source.sparkSession):
            return text_nodes(schema, condition, source)
        empty = source.sparkSession.createDataFrame([], spark_schema(schema, guarded=False))
        joined = empty.alias("target").join(source.alias("source"), F.expr(condition), "inner")
        plan = joined._jdf.queryExecution().analyzed()
        if plan.getClass().getSimpleName() != "Join" or plan.condition().isEmpty():
            return Unknown()
        sides = {**attribute_sides(plan.left().output(), "target", list(schema.names)),
                 **attribute_sides(plan.right().output(), "source", list(source.columns))}
        return TreeReader(sides).read(plan.condition().get())

    return Translation(schema.to_arrow(), keys).sets(_resolved(resolve))[0]


def text_nodes(schema: TableSchema, condition: str, source: Any | None = None) -> Node:
    """The nodes of an UPDATE's ``where`` (or, given its ``source``, a MERGE's condition) read from
    its text (:mod:`~sleeper_spark.spark.conditions.condition_text`), as a session without a JVM reads them."""
    source_types = None if source is None else spark_types(source.schema)
    return read_condition(condition, spark_types(spark_schema(schema, guarded=False)), source_types,
                          None if source is None else lambda sql: _source_type(source, sql))


def _has_jvm(spark: Any) -> bool:
    """Whether Spark's resolved tree can be read here (not on a Spark Connect client)."""
    return getattr(spark, "_jsparkSession", None) is not None


def spark_types(struct: Any) -> dict[str, str]:
    """Each column of a Spark ``StructType`` with its type's name as the JVM gives it."""
    from pyspark.sql.types import DecimalType

    return {f.name: f.dataType.simpleString() if isinstance(f.dataType, DecimalType) else f.dataType.typeName()
            for f in struct.fields}


def _source_type(source: Any, sql: str) -> str | None:
    """Spark's type of ``sql`` over the source's columns, or None where Spark cannot resolve it."""
    from pyspark.sql import functions as F

    try:
        return next(iter(spark_types(source.alias("source").select(F.expr(sql)).schema).values()))
    except PySparkException:
        return None


def _resolved(resolve: Callable[[], Node]) -> Node:
    try:
        return resolve()
    except _RESOLVE_ERRORS as error:  # the change itself reports a bad condition; here it only prunes nothing
        log.debug("the condition gives no file pruning: %s", str(error).splitlines()[0] if str(error) else error)
        return Unknown()


class Translation:
    """Nodes to (where TRUE, where FALSE) filters over the target table's columns (see the module doc)."""

    def __init__(self, schema: pa.Schema, keys: KeyRows | None) -> None:
        self._schema = schema
        self._keys = keys

    def sets(self, node: Node) -> Sets:
        if isinstance(node, Constant):
            if node.value is None:
                return _NEVER, _NEVER  # NULL is neither TRUE nor FALSE
            if isinstance(node.value, bool):
                return (None, _NEVER) if node.value else (_NEVER, None)
            return None, None
        if isinstance(node, Column) and node.spark_type == "boolean":
            node = Predicate("EqualTo", (node, Constant(True)))  # a boolean column alone: "column = true"
        if not isinstance(node, Predicate):
            return None, None
        name, args = node.name, node.args
        if name in ("And", "Or") and len(args) == 2:
            (left_true, left_false), (right_true, right_false) = self.sets(args[0]), self.sets(args[1])
            if name == "And":
                return _both(left_true, right_true), _either(left_false, right_false)
            return _either(left_true, right_true), _both(left_false, right_false)
        if name == "Not" and len(args) == 1:
            true, false = self.sets(args[0])
            return false, true
        key = self._key_pair(node)
        if key is not None:
            return key, None
        leaf = _leaf(node)
        if leaf is None:
            return None, None
        return prune_expression(leaf, self._schema), prune_expression(Not(leaf), self._schema)

    def _key_pair(self, node: Predicate) -> pc.Expression | None:
        """The target rows a ``target.k = source.k`` (or ``= <expression of source columns>``) may
        match, if ``node`` is one and the keys are known."""
        if self._keys is None or node.name not in ("EqualTo", "EqualNullSafe") or len(node.args) != 2:
            return None
        target = next((arg for arg in node.args if isinstance(arg, Column) and arg.side == "target"), None)
        source = next((arg for arg in node.args if (isinstance(arg, Column) and arg.side == "source")
                       or isinstance(arg, SourceValue)), None)
        if target is None or source is None:
            return None
        # Spark compares other types after casting one side, which the key values would not follow.
        if target.spark_type != source.spark_type and not {target.spark_type, source.spark_type} <= _INTEGERS:
            return None
        value = source.sql if isinstance(source, SourceValue) else quoted_column(source.name)
        return self._keys(target.name, value, node.name == "EqualNullSafe")


def _leaf(node: Predicate) -> Filter | None:
    """The pushed filter that means the same as ``node``: a target column against constants."""
    name, args = node.name, node.args
    if name in _COMPARISONS and len(args) == 2:
        left, right = args
        if isinstance(left, Constant) and isinstance(right, Column):
            name, left, right = _MIRRORED[name], right, left
        if _is_target(left) and isinstance(right, Constant):
            return _COMPARISONS[name]((left.name,), right.value)
        return None
    column = args[0] if args else None
    if not _is_target(column):
        return None
    values = [arg.value for arg in args[1:] if isinstance(arg, Constant)]
    if len(values) != len(args) - 1:
        return None
    if name in ("IsNull", "IsNotNull") and not values:
        return IsNull((column.name,)) if name == "IsNull" else IsNotNull((column.name,))
    if name == "In" and values:
        return In((column.name,), tuple(values))
    if len(values) != 1 or not isinstance(values[0], str):
        return None
    if name in _STRINGS:
        return _STRINGS[name]((column.name,), values[0])
    return _like((column.name,), values[0]) if name == "Like" else None


def _like(column: tuple[str, ...], pattern: str) -> Filter | None:
    """``LIKE`` with ``%`` only at either end (no ``_``, no escapes) as a string filter."""
    if "_" in pattern or "\\" in pattern:
        return None
    inner = pattern.strip("%")
    if "%" in inner:
        return None
    starts, ends = pattern.startswith("%"), pattern.endswith("%")
    if starts and ends:
        return StringContains(column, inner)
    if starts:
        return StringEndsWith(column, inner)
    return StringStartsWith(column, inner) if ends else EqualTo(column, inner)


def _is_target(node: Node | None) -> TypeGuard[Column]:
    return isinstance(node, Column) and node.side == "target"


def _both(left: pc.Expression | None, right: pc.Expression | None) -> pc.Expression | None:
    """Rows in both sets (None: every row)."""
    if left is None or right is None:
        return right if left is None else left
    return left & right


def _either(left: pc.Expression | None, right: pc.Expression | None) -> pc.Expression | None:
    """Rows in either set (None: every row)."""
    if left is None or right is None:
        return None
    return left | right

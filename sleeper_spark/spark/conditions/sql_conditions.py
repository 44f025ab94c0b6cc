"""A Spark SQL condition as Spark resolves it, read into a few Python nodes.

Spark's analyzer resolves the condition against the columns it will run on: it finds each
column (case-insensitively, by alias), and its type coercion adds the casts the comparison
needs (``day = '2024-05-01'`` on a date column compares with ``CAST('2024-05-01' AS DATE)``).
The resolved tree is read through py4j, so the nodes here mean what Spark will evaluate, not
what a second parser of Spark SQL would guess:

- a column becomes :class:`Column`, named as in the table (or the source), with the side of a
  merge it belongs to; a cast of a column that keeps every value (a wider integer or decimal)
  is the column itself, any other cast of a column is :class:`Unknown`;
- literals, and casts and arithmetic of them, become :class:`Constant`,
  its value as PySpark hands a pushed filter its literals (``datetime.date``, a UTC
  ``datetime`` for ``timestamp``, a naive one for ``timestamp_ntz``, ``Decimal``);
- the predicates in :data:`PREDICATES` become :class:`Predicate`;
- any other deterministic expression over a merge's source columns alone (``source.id + 100000``)
  becomes :class:`SourceValue`, Spark's own SQL text of it, which the source can be asked for;
- everything else is :class:`Unknown`, which pruning reads as "may hold any row".

The node names are Catalyst's class names: internal to Spark, and pinned by the tests of
UPDATE and MERGE (tests/changes/test_conditions.py). A Spark that names them otherwise only
makes conditions :class:`Unknown`, never wrong.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from dataclasses import dataclass
from typing import Any

from py4j.protocol import Py4JError  # type: ignore[import-untyped]

PREDICATES = frozenset({
    "And", "Or", "Not", "EqualTo", "EqualNullSafe", "LessThan", "LessThanOrEqual", "GreaterThan",
    "GreaterThanOrEqual", "In", "IsNull", "IsNotNull", "Like", "StartsWith", "EndsWith", "Contains",
})
MOST_NODES = 2_000  # past this many nodes read over py4j, the rest of a condition is Unknown
MOST_IN_VALUES = 1_000  # an IN list longer than this is Unknown (each value is a round trip)
# What a constant may be made of: literals, casts and arithmetic, whose value never changes.
_CONSTANT_PARTS = frozenset({"Literal", "Cast", "UnaryMinus", "UnaryPositive", "Add", "Subtract", "Multiply",
                             "Divide", "Remainder", "Concat"})
_INTEGERS = ("byte", "short", "integer", "long")
_DECIMAL = re.compile(r"^decimal\((\d+),\s*(\d+)\)$")
_EPOCH = dt.datetime(1970, 1, 1)


@dataclass(frozen=True)
class Column:
    name: str
    side: str  # "target" or "source"
    spark_type: str  # the column's own type (Spark's typeName), before any widening cast


@dataclass(frozen=True)
class Constant:
    value: Any


@dataclass(frozen=True)
class Predicate:
    name: str  # one of PREDICATES
    args: tuple[Node, ...]


@dataclass(frozen=True)
class SourceValue:
    """An expression over source columns only: one value per source row, which Spark computes
    from the source alone. ``sql`` is Spark's text of the resolved expression, its columns
    qualified ``source.``; ``spark_type`` the type of its value."""

    sql: str
    spark_type: str


@dataclass(frozen=True)
class Unknown:
    """A part of the condition that is not read: it may be true or false for any row."""


Node = Column | Constant | Predicate | SourceValue | Unknown


class TreeReader:
    """Reads one resolved Catalyst expression; ``sides`` maps attribute ids to (side, column name)."""

    def __init__(self, sides: dict[int, tuple[str, str]]) -> None:
        self._sides = sides
        self._budget = MOST_NODES
        self._shared: dict[int, Any] = {}  # With's common expressions by id

    def read(self, expression: Any) -> Node:
        self._budget -= 1
        if self._budget < 0:
            return Unknown()
        kind = expression.getClass().getSimpleName()
        if kind == "AttributeReference":
            return self._column(expression)
        if kind == "Cast" and expression.child().getClass().getSimpleName() == "AttributeReference":
            keeps = _keeps_values(expression.child().dataType().typeName(), expression.dataType().typeName())
            return self._column(expression.child()) if keeps else Unknown()
        if kind == "Between":  # its one child is the With below
            return self.read(_children(expression)[0])
        if expression.foldable() and _plain_constant(expression):
            try:
                return Constant(python_value(expression.eval(None), expression.dataType().typeName()))
            except (Py4JError, ValueError, ArithmeticError):  # ANSI casts fail here as they would in the run
                return Unknown()
        if kind == "With":  # Spark's BETWEEN: a condition over references to shared expressions
            children = _children(expression)
            for definition in children[1:]:
                self._shared[definition.id().id()] = definition.child()
            return self.read(children[0])
        if kind == "CommonExpressionRef":
            shared = self._shared.get(expression.id().id())
            return Unknown() if shared is None else self.read(shared)
        if kind not in PREDICATES:
            return self._source_value(expression)
        if kind == "Like" and str(expression.escapeChar()) != "\\":
            return Unknown()
        children = _children(expression)
        if kind == "In" and len(children) > 1 + MOST_IN_VALUES:
            return Unknown()
        return Predicate(kind, tuple(self.read(child) for child in children))

    def _source_value(self, expression: Any) -> Node:
        """``expression`` as a :class:`SourceValue` if it is deterministic and reads source columns
        only; :class:`Unknown` otherwise."""
        try:
            if not expression.deterministic():
                return Unknown()
            references = expression.references().toSeq()
            ids = [references.apply(i).exprId().id() for i in range(references.size())]
            if not ids or any(self._sides.get(i, ("", ""))[0] != "source" for i in ids):
                return Unknown()
            return SourceValue(str(expression.sql()), str(expression.dataType().typeName()))
        except Py4JError:
            return Unknown()

    def _column(self, attribute: Any) -> Node:
        side = self._sides.get(attribute.exprId().id())
        if side is None:
            return Unknown()
        return Column(side[1], side[0], attribute.dataType().typeName())


def attribute_sides(output: Any, side: str, names: list[str]) -> dict[int, tuple[str, str]]:
    """The attributes of a plan's ``output`` (a Scala Seq), in order, as the columns ``names``."""
    count = output.size()
    if count != len(names):
        raise ValueError("the resolved plan's columns are not the ones asked for")
    return {output.apply(i).exprId().id(): (side, names[i]) for i in range(count)}


def python_value(value: Any, type_name: str) -> Any:
    """A folded Catalyst value (its internal form) as the Python value of a pushed filter."""
    if value is None or type_name == "void":
        return None
    if type_name == "boolean":
        return bool(value)
    if type_name in _INTEGERS:
        return int(value)
    if type_name in ("float", "double"):
        return float(value)
    if type_name == "string":
        return str(value.toString())
    if _DECIMAL.match(type_name):
        return decimal.Decimal(str(value.toString()))
    if type_name == "date":
        return (_EPOCH + dt.timedelta(days=int(value))).date()
    if type_name == "timestamp":
        return (_EPOCH + dt.timedelta(microseconds=int(value))).replace(tzinfo=dt.timezone.utc)
    if type_name == "timestamp_ntz":
        return _EPOCH + dt.timedelta(microseconds=int(value))
    raise ValueError(f"no Python form for a folded {type_name}")


def _plain_constant(expression: Any) -> bool:
    """Is ``expression`` made of literals and arithmetic only? ``current_date()`` folds too, but
    to the date when it is folded, which need not be the date the change runs on."""
    if expression.getClass().getSimpleName() not in _CONSTANT_PARTS:
        return False
    return all(_plain_constant(child) for child in _children(expression))


def _children(expression: Any) -> list[Any]:
    children = expression.children()
    return [children.apply(i) for i in range(children.size())]


def _keeps_values(source: str, target: str) -> bool:
    """Does casting ``source`` to ``target`` keep every value as it is (so the cast can be ignored)?"""
    if source == target:
        return True
    if source in _INTEGERS and target in _INTEGERS:
        return _INTEGERS.index(source) <= _INTEGERS.index(target)
    narrow, wide = _DECIMAL.match(source), _DECIMAL.match(target)
    if narrow is None or wide is None:
        return False
    (precision, scale), (wide_precision, wide_scale) = map(int, narrow.groups()), map(int, wide.groups())
    return wide_scale >= scale and wide_precision - wide_scale >= precision - scale

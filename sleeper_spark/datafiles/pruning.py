"""Skips data files that cannot hold rows matching a filter: vectorized over the files table.

The filter (a pyarrow compute expression over the table's columns) is read as a tree (see
:mod:`sleeper_spark.datafiles.expressions`) and evaluated once over the files table (see
:mod:`sleeper_spark.state.file_columns`), giving per file three facts for every sub-expression:
*can it be TRUE for some row*, *can it be FALSE* and *can it be null*. A file is read when the
whole filter can be TRUE. All facts are over-approximations — "unknown" counts as "can" —
which is what makes skipping safe:

- a partition column's value is exact (``partition.<c>`` cast to the column's type);
- another column is bounded by ``min.<c>``/``max.<c>`` over its non-null values, and
  ``null_count.<c>`` against ``row_count`` says whether nulls and non-nulls occur; a comparison
  with a null is never TRUE or FALSE (three-valued logic), so nulls never make one match;
- float columns may hold NaN, which statistics leave out: ``!=`` may be TRUE and any
  comparison may be FALSE for NaN, whatever the bounds;
- ``NOT`` swaps TRUE and FALSE, ``AND``/``OR`` combine the facts, ``is_null(p)`` is TRUE where
  ``p`` can be null (a delete uses that to find files whose every row matches); any function
  not listed in
  :data:`_COMPARISONS` or below, a literal of another type, or a column the table lacks makes
  that part unknown.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from sleeper_spark.datafiles.expressions import Call, Field, Literal, Node, parse
from sleeper_spark.datafiles.stats import partition_value_to_string
from sleeper_spark.models import FileRef, TableSchema
from sleeper_spark.state.file_columns import FileLayout

# name: (may be TRUE given the bounds, may be FALSE given the bounds) for "column <op> literal"
_COMPARISONS: dict[str, tuple[Callable[[pa.Array, pa.Array, pa.Scalar], pa.Array],
                              Callable[[pa.Array, pa.Array, pa.Scalar], pa.Array]]] = {
    "equal": (lambda lo, hi, v: pc.and_(pc.less_equal(lo, v), pc.greater_equal(hi, v)),
              lambda lo, hi, v: pc.invert(pc.and_(pc.equal(lo, v), pc.equal(hi, v)))),
    "not_equal": (lambda lo, hi, v: pc.invert(pc.and_(pc.equal(lo, v), pc.equal(hi, v))),
                  lambda lo, hi, v: pc.and_(pc.less_equal(lo, v), pc.greater_equal(hi, v))),
    "less": (lambda lo, hi, v: pc.less(lo, v), lambda lo, hi, v: pc.greater_equal(hi, v)),
    "less_equal": (lambda lo, hi, v: pc.less_equal(lo, v), lambda lo, hi, v: pc.greater(hi, v)),
    "greater": (lambda lo, hi, v: pc.greater(hi, v), lambda lo, hi, v: pc.less_equal(lo, v)),
    "greater_equal": (lambda lo, hi, v: pc.greater_equal(hi, v), lambda lo, hi, v: pc.less(lo, v)),
}
_FLIPPED = {"equal": "equal", "not_equal": "not_equal", "less": "greater", "less_equal": "greater_equal",
            "greater": "less", "greater_equal": "less_equal"}
_IN_LIST_LOOP = 64  # value sets up to this size are checked value by value against ranges
_ERRORS = (pa.ArrowException, TypeError, ValueError, OverflowError)


@dataclass(frozen=True)
class _Facts:
    """Per file: may the sub-expression be TRUE for some row; FALSE; null (arrays without nulls)."""

    true: pa.BooleanArray
    false: pa.BooleanArray
    null: pa.BooleanArray

    def negated(self) -> _Facts:
        return _Facts(self.false, self.true, self.null)


@dataclass(frozen=True)
class _Bounds:
    """What a column holds in each file."""

    low: pa.Array | None  # typed; null where unknown
    high: pa.Array | None
    some_null: pa.BooleanArray  # a null may occur
    some_value: pa.BooleanArray  # a non-null value may occur
    floating: bool
    exact: bool  # low == high is the value of every non-null row (a partition column)


def keep_mask(files: pa.Table, schema: TableSchema, partition_by: Sequence[str],
              filter: pc.Expression | None) -> pa.BooleanArray:
    """True for each file (row of ``files``) that may hold rows matching ``filter``."""
    if filter is None or files.num_rows == 0:
        return pa.array([True] * files.num_rows, pa.bool_())
    evaluation = _Evaluation(files, schema, tuple(partition_by))
    return evaluation.facts(parse(filter)).true


def prune_table(files: pa.Table, schema: TableSchema, partition_by: Sequence[str],
                filter: pc.Expression | None) -> pa.Table:
    """The rows of the files table that may hold rows matching ``filter``."""
    if filter is None:
        return files
    return files.filter(keep_mask(files, schema, partition_by, filter))


def prune_files(files: Sequence[FileRef], schema: TableSchema, filter: pc.Expression | None,
                partition_by: Sequence[str] | None = None) -> list[FileRef]:
    """The files that may hold rows matching ``filter`` (all of them when there is none).

    For a list of FileRefs (e.g. the files of one transaction); a state's files are pruned as
    a table with :func:`prune_table`. ``partition_by`` defaults to the files' partition keys.
    """
    if filter is None or not files:
        return list(files)
    keys = tuple(partition_by) if partition_by is not None else tuple(files[0].partition)
    table = pa.Table.from_batches([FileLayout(schema, keys).batch(files, [None] * len(files))])
    mask = keep_mask(table, schema, keys, filter).to_pylist()
    return [file for file, keep in zip(files, mask, strict=True) if keep]


class _Evaluation:
    def __init__(self, files: pa.Table, schema: TableSchema, partition_by: tuple[str, ...]) -> None:
        self.files = files
        self.names = frozenset(files.column_names)  # each call of column_names builds a list of them all
        self.schema = schema
        self.arrow_schema = schema.to_arrow()
        self.partition_by = partition_by
        self.count = files.num_rows
        self._bounds: dict[str, _Bounds | None] = {}

    def constant(self, value: bool) -> pa.BooleanArray:
        return pa.repeat(pa.scalar(value), self.count)

    def unknown(self) -> _Facts:
        everywhere = self.constant(True)
        return _Facts(everywhere, everywhere, everywhere)

    def facts(self, node: Node) -> _Facts:
        try:
            return self._facts(node)
        except _ERRORS:
            return self.unknown()

    def _facts(self, node: Node) -> _Facts:
        if isinstance(node, Literal):
            if not pa.types.is_boolean(node.value.type) and node.value.is_valid:
                return self.unknown()
            value = node.value.as_py()
            return _Facts(self.constant(value is True), self.constant(value is False), self.constant(value is None))
        if isinstance(node, Field):
            return self._boolean_column(node.name)
        if not isinstance(node, Call):
            return self.unknown()
        name, args = node.name, node.args
        if name in ("and", "and_kleene", "or", "or_kleene", "and_not", "and_not_kleene") and len(args) == 2:
            left, right = self.facts(args[0]), self.facts(args[1])
            if name.startswith("and_not"):
                right = right.negated()
            conjunction = name.startswith("and")
            null = _kleene_null(left, right, conjunction) if "kleene" in name else pc.or_(left.null, right.null)
            if conjunction:
                return _Facts(pc.and_(left.true, right.true), pc.or_(left.false, right.false), null)
            return _Facts(pc.or_(left.true, right.true), pc.and_(left.false, right.false), null)
        if name == "invert" and len(args) == 1:
            return self.facts(args[0]).negated()
        if name in _COMPARISONS and len(args) == 2:
            return self._comparison(name, args[0], args[1])
        if name in ("is_null", "is_valid") and len(args) == 1 and isinstance(args[0], Field):
            return self._nullness(name, args[0].name, node.options)
        if name in ("is_null", "is_valid") and len(args) == 1 and isinstance(args[0], Call):
            inner, never = self.facts(args[0]), self.constant(False)
            not_null = pc.or_(inner.true, inner.false)
            return _Facts(inner.null, not_null, never) if name == "is_null" else _Facts(not_null, inner.null, never)
        if name == "is_in" and len(args) == 1 and isinstance(args[0], Field) and node.options is not None:
            return self._in_list(args[0].name, node.options)
        return self.unknown()

    # -- leaves --------------------------------------------------------------------------

    def bounds(self, column: str) -> _Bounds | None:
        if column not in self._bounds:
            self._bounds[column] = self._read_bounds(column) if column in self.arrow_schema.names else None
        return self._bounds[column]

    def _read_bounds(self, column: str) -> _Bounds | None:
        arrow_type = self.arrow_schema.field(column).type
        floating = pa.types.is_floating(arrow_type)
        if column in self.partition_by and f"partition.{column}" in self.names:
            text = self.files.column(f"partition.{column}")
            values = pc.equal(text, "true") if pa.types.is_boolean(arrow_type) else pc.cast(text, arrow_type)
            return _Bounds(values, values, pc.is_null(text), pc.is_valid(text), floating, exact=True)
        if f"null_count.{column}" not in self.names:
            return None
        nulls, rows = self.files.column(f"null_count.{column}"), self.files.column("row_count")
        some_null = pc.fill_null(pc.greater(nulls, 0), True)
        some_value = pc.fill_null(pc.less(nulls, rows), True)
        low = self.files.column(f"min.{column}") if f"min.{column}" in self.names else None
        high = self.files.column(f"max.{column}") if f"max.{column}" in self.names else None
        if floating and low is not None and high is not None:
            # NaN bounds from another writer would compare false with everything: unknown instead.
            low = pc.if_else(pc.is_nan(low), pa.scalar(None, low.type), low)
            high = pc.if_else(pc.is_nan(high), pa.scalar(None, high.type), high)
        return _Bounds(low, high, some_null, some_value, floating, exact=False)

    def _partition_strings(self, column: str, values: pa.Array) -> tuple[pa.ChunkedArray, pa.Array] | None:
        """For equality on a partition column: its stored strings and ``values`` written the same way.

        Comparing strings spares casting every file's value to the column's type. Floats are
        left out: -0.0 equals 0.0 but is written differently.
        """
        name = f"partition.{column}"
        if column not in self.partition_by or name not in self.names or \
                column not in self.arrow_schema.names:
            return None
        arrow_type = self.arrow_schema.field(column).type
        if pa.types.is_floating(arrow_type):
            return None
        typed = _exact_cast(values, arrow_type)
        if typed is None:
            return None  # the cast fails or rounds (a double to a decimal): compare by value instead
        strings = pa.array([partition_value_to_string(v) for v in typed.to_pylist()], pa.string())
        return self.files.column(name), strings

    def _boolean_column(self, column: str) -> _Facts:
        bounds = self.bounds(column)
        if bounds is None or bounds.low is None or bounds.high is None or not pa.types.is_boolean(bounds.low.type):
            return self.unknown()
        return _Facts(pc.and_(bounds.some_value, _maybe(bounds.high)),
                      pc.and_(bounds.some_value, _maybe(pc.invert(bounds.low))), bounds.some_null)

    def _comparison(self, name: str, left: Node, right: Node) -> _Facts:
        if isinstance(left, Literal) and isinstance(right, Field):
            name, left, right = _FLIPPED[name], right, left
        if not (isinstance(left, Field) and isinstance(right, Literal)):
            return self.unknown()
        if name in ("equal", "not_equal") and right.value.is_valid:
            as_text = self._partition_strings(left.name, pa.array([right.value]))
            if as_text is not None:
                text, strings = as_text
                same = pc.fill_null(pc.equal(text, strings[0]), False)
                hit, miss = pc.and_(pc.is_valid(text), same), pc.and_(pc.is_valid(text), pc.invert(same))
                return _Facts(hit, miss, pc.is_null(text)) if name == "equal" else _Facts(miss, hit, pc.is_null(text))
        bounds = self.bounds(left.name)
        if bounds is None:
            return self.unknown()
        value = right.value
        if not value.is_valid:
            anything = pc.or_(bounds.some_value, bounds.some_null)  # a comparison with null is null
            return _Facts(self.constant(False), self.constant(False), anything)
        if bounds.low is None or bounds.high is None:
            return _Facts(bounds.some_value, bounds.some_value, bounds.some_null)
        value = _like(value, bounds.low.type)
        can_true, can_false = _COMPARISONS[name]
        true = pc.and_(bounds.some_value, _maybe(can_true(bounds.low, bounds.high, value)))
        false = pc.and_(bounds.some_value, _maybe(can_false(bounds.low, bounds.high, value)))
        if bounds.floating:  # NaN: "!=" is TRUE for it, every comparison may be FALSE
            false = bounds.some_value
            if name == "not_equal":
                true = bounds.some_value
        return _Facts(true, false, bounds.some_null)

    def _nullness(self, name: str, column: str, options: pa.StructScalar | None) -> _Facts:
        bounds = self.bounds(column)
        if bounds is None:
            return self.unknown()
        if name == "is_valid":
            return _Facts(bounds.some_value, bounds.some_null, self.constant(False))
        nan_is_null = options is not None and bool(options.as_py().get("nan_is_null"))
        true = pc.or_(bounds.some_null, bounds.some_value) if nan_is_null and bounds.floating else bounds.some_null
        return _Facts(true, bounds.some_value, self.constant(False))

    def _in_list(self, column: str, options: pa.StructScalar) -> _Facts:
        names = [field.name for field in options.type]
        if "value_set" not in names:
            return self.unknown()
        value_set = options["value_set"].values
        values = pc.drop_null(value_set)
        as_text = self._partition_strings(column, values)
        bounds = None if as_text is not None else self.bounds(column)
        if as_text is not None:
            some_null, some_value = pc.is_null(as_text[0]), pc.is_valid(as_text[0])
        elif bounds is not None:
            some_null, some_value = bounds.some_null, bounds.some_value
        else:
            return self.unknown()
        # Null rows: MATCH (the default) makes them TRUE if the set holds a null, else FALSE;
        # SKIP makes them FALSE; EMIT_NULL and INCONCLUSIVE make them (and maybe others) null.
        behaviour = options["null_matching_behavior"].as_py() if "null_matching_behavior" in names else None
        nulls_match = behaviour in (0, None) and value_set.null_count > 0
        null_true = pc.and_(some_null, self.constant(nulls_match))
        null_false = pc.and_(some_null, self.constant(not nulls_match))
        null = pc.or_(some_value, some_null) if behaviour not in (0, 1, None) else self.constant(False)
        if as_text is not None:
            hit = pc.fill_null(pc.is_in(as_text[0], value_set=as_text[1]), False)
            return _Facts(pc.or_(null_true, pc.and_(some_value, hit)),
                          pc.or_(null_false, pc.and_(some_value, pc.invert(hit))), null)
        assert bounds is not None
        if bounds.low is None or bounds.high is None or (bounds.floating and pc.any(pc.is_nan(values)).as_py()):
            return _Facts(pc.or_(null_true, some_value), pc.or_(null_false, some_value), null)
        values = values.cast(bounds.low.type)
        hit = self._may_hit(bounds, values)
        single = pc.and_(pc.equal(bounds.low, bounds.high), pc.is_in(bounds.low, value_set=values))
        miss = some_value if bounds.floating else pc.and_(some_value, _maybe(pc.invert(single)))
        return _Facts(pc.or_(null_true, pc.and_(some_value, hit)), pc.or_(null_false, miss), null)

    def _may_hit(self, bounds: _Bounds, values: pa.Array) -> pa.Array:
        """Per file: may one of ``values`` lie within the file's bounds."""
        assert bounds.low is not None and bounds.high is not None
        if bounds.exact:
            return _maybe(pc.is_in(bounds.low, value_set=values))
        if len(values) > _IN_LIST_LOOP:  # many values: the range they span
            span = pc.min_max(values)
            return _maybe(pc.and_(pc.less_equal(bounds.low, span["max"]), pc.greater_equal(bounds.high, span["min"])))
        hit = self.constant(False)
        for value in values:
            hit = pc.or_(hit, _maybe(pc.and_(pc.less_equal(bounds.low, value), pc.greater_equal(bounds.high, value))))
        return hit


def _kleene_null(left: _Facts, right: _Facts, conjunction: bool) -> pa.Array:
    """May ``left AND right`` (or ``OR``) be null: one side null and the other not deciding it."""
    def undecided(side: _Facts) -> pa.Array:  # null or the neutral value
        return pc.or_(side.null, side.true if conjunction else side.false)

    return pc.or_(pc.and_(left.null, undecided(right)), pc.and_(right.null, undecided(left)))


def _maybe(facts: pa.Array) -> pa.Array:
    """Unknown (null) counts as possible."""
    return pc.fill_null(facts, True)


def _like(value: pa.Scalar, arrow_type: pa.DataType) -> pa.Scalar:
    """The literal in the column's type where that loses nothing (zones, units, widths)."""
    typed = _exact_cast(value, arrow_type)
    return value if typed is None else typed  # as is: 2.5 against an integer column compares as doubles


def _exact_cast(value: Any, arrow_type: pa.DataType) -> Any:
    """An Arrow array or scalar in ``arrow_type``; None if the cast fails or loses anything.

    A safe cast may still round (a double to float32 or to a decimal), so the cast value must
    also cast back to the original.
    """
    if value.type.equals(arrow_type):
        return value
    try:
        cast = value.cast(arrow_type, safe=True)
        return cast if cast.cast(value.type, safe=True).equals(value) else None
    except _ERRORS:
        return None

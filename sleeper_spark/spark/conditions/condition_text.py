"""A MERGE or UPDATE condition read from its text, where Spark cannot hand over its resolved tree.

A Spark Connect client has no JVM, so the tree Spark resolves (:mod:`.sql_conditions`) cannot be
read. Its text can: this module reads a small part of Spark SQL into the same nodes, so that the
same translation (:mod:`.row_conditions`) prunes files the same way, and leaves the rest to Spark.
Reading only ever costs pruning, never rows, because what is not read is :class:`Unknown` ("may
be true for any row"), and a text this module cannot read whole is Unknown altogether:

- ``AND``, ``OR``, ``NOT``, parentheses; ``=``, ``==``, ``<=>``, ``<>``, ``!=``, ``<``, ``<=``,
  ``>``, ``>=``, ``[NOT] BETWEEN``, ``IS [NOT] NULL``, ``[NOT] IN (…)``, ``[NOT] LIKE '…'``, with
  Spark's precedence (``OR`` below ``AND`` below ``NOT`` below the comparisons);
- function calls, whatever their arguments, as an operand that is :class:`Unknown`;
- columns named ``target.c`` / ``source.c`` (case as Spark matches them, backquotes allowed), or
  unqualified where only one side has the name; integer literals, string literals without
  escapes, ``TRUE``, ``FALSE``, ``NULL``; ``+ - * / %`` and unary minus over source columns and
  integer literals, which become a :class:`SourceValue` that Spark computes from the source;
- a comparison of a target column with a constant is kept only where Spark would compare them
  without a cast that changes the constant (integers with integers, strings with strings,
  booleans with booleans, anything with NULL); any other operand (another literal) is Unknown;
- text outside this part of the grammar (comments, double-quoted text, ``CASE``, ``||``, a
  string with a backslash, a sub-query, ...) makes the whole condition Unknown.

The types of a source expression are Spark's: each is asked of Spark once (a schema request).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from sleeper_spark.spark.common.conversions import quoted_column
from sleeper_spark.spark.conditions.sql_conditions import Column, Constant, Node, Predicate, SourceValue, Unknown

_TOKEN = re.compile(r"\s*(?:(?P<string>'[^'\\]*')|(?P<quoted>`(?:[^`]|``)+`)|(?P<number>\d+[LSY]?(?![\w.]))"
                    r"|(?P<other_number>\d[\w.]*|\.\d[\w.]*)|(?P<word>[A-Za-z_][A-Za-z0-9_]*)"
                    r"|(?P<op><=>|<=|>=|<>|!=|==|=|<|>|\+|\*|/|%|\(|\)|,|\.|-(?!-)))")
_COMPARE = {"=": "EqualTo", "==": "EqualTo", "<=>": "EqualNullSafe", "<": "LessThan", "<=": "LessThanOrEqual",
            ">": "GreaterThan", ">=": "GreaterThanOrEqual"}
_INTEGERS = frozenset({"byte", "short", "integer", "long"})
# Constants a target column of each type is compared with as they are
_SAME_KIND: dict[type, Callable[[str], bool]] = {
    bool: lambda t: t == "boolean", int: lambda t: t in _INTEGERS, str: lambda t: t == "string"}
SourceType = Callable[[str], str | None]  # Spark's type of a source expression (SQL text), None if it has none


class _Unreadable(Exception):
    """The text is outside the part of Spark SQL this module reads."""


@dataclass(frozen=True)
class _Token:
    kind: str  # string, quoted, number, other_number, word, op
    text: str


@dataclass(frozen=True)
class _Value:
    """An operand: a node, and for a source expression its SQL text (None: not one)."""

    node: Node
    source_sql: str | None = None


def read_condition(text: str, target: Mapping[str, str], source: Mapping[str, str] | None,
                   source_type: SourceType | None = None) -> Node:
    """The condition ``text`` as nodes; ``target`` and ``source`` map each side's column names to
    their Spark type names (``source`` None: an UPDATE's condition, over the table alone)."""
    try:
        reader = _Reader(_tokens(text), target, source or {}, source_type)
        node = reader.disjunction()
        if reader.peek() is not None:
            raise _Unreadable("text after the condition")
        return node
    except _Unreadable:
        return Unknown()


def _tokens(text: str) -> list[_Token]:
    if "--" in text or "/*" in text:
        raise _Unreadable("a comment")
    tokens, position = [], 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            if text[position:].strip():
                raise _Unreadable(f"cannot read {text[position:position + 10]!r}")
            break
        kind = match.lastgroup or ""
        tokens.append(_Token(kind, match.group(kind)))
        position = match.end()
    return tokens


class _Reader:
    def __init__(self, tokens: list[_Token], target: Mapping[str, str], source: Mapping[str, str],
                 source_type: SourceType | None) -> None:
        self._tokens = tokens
        self._at = 0
        self._target = {name.lower(): (name, type_) for name, type_ in target.items()}
        self._source = {name.lower(): (name, type_) for name, type_ in source.items()}
        self._source_type = source_type

    def peek(self, ahead: int = 0) -> _Token | None:
        return self._tokens[self._at + ahead] if self._at + ahead < len(self._tokens) else None

    def _word(self, *words: str) -> bool:
        token = self.peek()
        if token is not None and token.kind == "word" and token.text.upper() in words:
            self._at += 1
            return True
        return False

    def _op(self, *ops: str) -> str | None:
        token = self.peek()
        if token is not None and token.kind == "op" and token.text in ops:
            self._at += 1
            return token.text
        return None

    def _expect(self, op: str) -> None:
        if self._op(op) is None:
            raise _Unreadable(f"{op!r} expected")

    def disjunction(self) -> Node:
        node = self._conjunction()
        while self._word("OR"):
            node = Predicate("Or", (node, self._conjunction()))
        return node

    def _conjunction(self) -> Node:
        node = self._negation()
        while self._word("AND"):
            node = Predicate("And", (node, self._negation()))
        return node

    def _negation(self) -> Node:
        if self._word("NOT"):
            return Predicate("Not", (self._negation(),))
        return self._predicate()

    def _predicate(self) -> Node:
        left = self._sum()
        negated = self._word("NOT")
        if self._word("BETWEEN"):
            low = self._sum()
            if not self._word("AND"):
                raise _Unreadable("BETWEEN without AND")
            high = self._sum()
            node: Node = Predicate("And", (self._compare("GreaterThanOrEqual", left, low),
                                           self._compare("LessThanOrEqual", left, high)))
        elif self._word("IN"):
            self._expect("(")
            items = [self._sum()]
            while self._op(","):
                items.append(self._sum())
            self._expect(")")
            node = Predicate("In", (left.node, *[self._constant_for(left.node, item.node) for item in items]))
        elif self._word("LIKE"):
            pattern = self._sum()
            node = Predicate("Like", (left.node, self._constant_for(left.node, pattern.node)))
        elif negated:
            raise _Unreadable("NOT where no predicate follows")
        elif self._word("IS"):
            negated = self._word("NOT")
            if not self._word("NULL"):
                raise _Unreadable("IS without NULL")
            node = Predicate("IsNotNull" if negated else "IsNull", (left.node,))
            negated = False
        else:
            op = self._op(*_COMPARE, "<>", "!=")
            if op is None:
                return left.node
            node = self._compare(_COMPARE.get(op, "EqualTo"), left, self._sum())
            negated = op in ("<>", "!=")
            if self.peek() is not None and self.peek().text in (*_COMPARE, "<>", "!="):  # type: ignore[union-attr]
                raise _Unreadable("a comparison of a comparison")
        return Predicate("Not", (node,)) if negated else node

    def _compare(self, name: str, left: _Value, right: _Value) -> Node:
        return Predicate(name, (self._constant_for(right.node, left.node), self._constant_for(left.node, right.node)))

    @staticmethod
    def _constant_for(other: Node, node: Node) -> Node:
        """``node`` as it may stand beside ``other``: a constant of another kind than a target
        column it is compared with is Unknown (Spark would cast one of them)."""
        if not isinstance(node, Constant) or node.value is None or not isinstance(other, Column):
            return node
        kind = _SAME_KIND.get(type(node.value))
        return node if kind is not None and kind(other.spark_type) else Unknown()

    def _sum(self) -> _Value:
        value = self._product()
        while (op := self._op("+", "-")) is not None:
            value = self._arithmetic(op, value, self._product())
        return value

    def _product(self) -> _Value:
        value = self._unary()
        while (op := self._op("*", "/", "%")) is not None:
            value = self._arithmetic(op, value, self._unary())
        return value

    def _unary(self) -> _Value:
        if self._op("-") is None:
            return self._atom()
        inner = self._unary()
        if isinstance(inner.node, Constant) and isinstance(inner.node.value, int) \
                and not isinstance(inner.node.value, bool):
            return _Value(Constant(-inner.node.value), f"(- {inner.source_sql})")
        return self._source_value(f"(- {inner.source_sql})" if inner.source_sql is not None else None)

    def _arithmetic(self, op: str, left: _Value, right: _Value) -> _Value:
        sql = None if left.source_sql is None or right.source_sql is None else \
            f"({left.source_sql} {op} {right.source_sql})"
        return self._source_value(sql)

    def _source_value(self, sql: str | None) -> _Value:
        """An expression over source columns and integers: Spark gives its type, or it is Unknown."""
        type_ = self._source_type(sql) if sql is not None and self._source_type is not None else None
        return _Value(SourceValue(sql, type_) if sql is not None and type_ is not None else Unknown(), sql)

    def _atom(self) -> _Value:
        token = self.peek()
        if token is None:
            raise _Unreadable("the condition ends early")
        self._at += 1
        if token.kind == "op" and token.text == "(":
            if self._starts_operand():  # an operand in parentheses: (source.id + 1) = target.id
                value = self._sum()
                if self._op(")") is not None:
                    return _Value(value.node, value.source_sql)
                raise _Unreadable("parentheses around more than an operand")
            node = self.disjunction()
            self._expect(")")
            return _Value(node)
        if token.kind == "number":
            return _Value(Constant(int(token.text.rstrip("LSY"))), token.text.rstrip("LSY"))
        if token.kind == "other_number":
            return _Value(Unknown())  # decimals and doubles: Spark's types for them are not read here
        if token.kind == "string":
            if self.peek() is not None and self.peek().kind == "string":  # type: ignore[union-attr]
                raise _Unreadable("Spark joins adjacent strings")
            return _Value(Constant(token.text[1:-1]))
        if token.kind == "word" and token.text.upper() in ("TRUE", "FALSE", "NULL"):
            return _Value(Constant({"TRUE": True, "FALSE": False, "NULL": None}[token.text.upper()]))
        if token.kind in ("word", "quoted"):
            return self._column(_name(token))
        raise _Unreadable(f"unexpected {token.text!r}")

    def _starts_operand(self) -> bool:
        """Whether the parentheses just opened hold an operand, not a condition: reads ahead to
        the closing parenthesis for a comparison or a logical word at their own depth."""
        depth = 0
        for token in self._tokens[self._at:]:
            if token.text == "(":
                depth += 1
            elif token.text == ")":
                if depth == 0:
                    return True
                depth -= 1
            elif depth == 0 and (token.text in (*_COMPARE, "<>", "!=") or (
                    token.kind == "word" and token.text.upper() in ("AND", "OR", "NOT", "IS", "IN", "BETWEEN",
                                                                    "LIKE"))):
                return False
        raise _Unreadable("unclosed parenthesis")

    def _skip_arguments(self) -> None:
        """Past the closing parenthesis of a function call's arguments (strings are tokens of their own)."""
        depth = 0
        while (token := self.peek()) is not None:
            self._at += 1
            if token.kind == "op" and token.text == "(":
                depth += 1
            elif token.kind == "op" and token.text == ")":
                if depth == 0:
                    return
                depth -= 1
        raise _Unreadable("unclosed parenthesis")

    def _column(self, first: str) -> _Value:
        if self._op("(") is not None:
            self._skip_arguments()
            return _Value(Unknown())  # a function's value: not read (it may not even be deterministic)
        if self._op(".") is None:
            in_target, in_source = first.lower() in self._target, first.lower() in self._source
            if in_target == in_source:
                return _Value(Unknown())  # on neither side, or ambiguous
            return self._side("target" if in_target else "source", first)
        token = self.peek()
        if token is None or token.kind not in ("word", "quoted"):
            raise _Unreadable("a qualified name without its column")
        self._at += 1
        if self.peek() is not None and self.peek().text in (".", "("):  # type: ignore[union-attr]
            raise _Unreadable("a nested field or a function")
        side = first.lower()
        if side not in ("target", "source"):
            return _Value(Unknown())
        return self._side(side, _name(token))

    def _side(self, side: str, name: str) -> _Value:
        columns = self._target if side == "target" else self._source
        found = columns.get(name.lower())
        if found is None:
            return _Value(Unknown())
        column = Column(found[0], side, found[1])
        return _Value(column, f"source.{quoted_column(found[0])}" if side == "source" else None)


def _name(token: _Token) -> str:
    return token.text[1:-1].replace("``", "`") if token.kind == "quoted" else token.text

"""A pyarrow expression read back as its tree: names, argument order, literals of every type and
the options of calls; what cannot be read is Opaque, never an error."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from sleeper_spark.datafiles.expressions import Call, Field, Literal, Opaque, parse


@pytest.mark.parametrize(("expression", "name"), [
    (pc.field("a") == 1, "equal"), (pc.field("a") != 1, "not_equal"), (pc.field("a") < 1, "less"),
    (pc.field("a") <= 1, "less_equal"), (pc.field("a") > 1, "greater"), (pc.field("a") >= 1, "greater_equal"),
])
def test_each_comparison_reads_back_with_its_name_and_arguments(expression: pc.Expression, name: str) -> None:
    assert parse(expression) == Call(name, (Field("a"), Literal(pa.scalar(1))), None)


def test_argument_order_is_kept() -> None:
    flipped = pc.Expression._call("less", [pc.scalar(3), pc.field("a")])

    assert parse(flipped) == Call("less", (Literal(pa.scalar(3)), Field("a")), None)


@pytest.mark.parametrize("value", [
    pa.scalar(dt.datetime(2024, 1, 2, 3, 4, 5, 6), pa.timestamp("us", "Europe/Paris")),
    pa.scalar(1_700_000_000_000_000_001, pa.timestamp("ns")), pa.scalar(dt.date(2024, 2, 29)),
    pa.scalar(decimal.Decimal("-1.005"), pa.decimal128(10, 3)), pa.scalar("ünï=côde/"), pa.scalar(2.5, pa.float32()),
    pa.scalar(None, pa.int16()), pa.scalar(True), pa.scalar(b"\x00\xff"), pa.scalar(2**63 - 1),
])
def test_a_literal_keeps_its_type_and_value(value: pa.Scalar) -> None:
    tree = parse(pc.field("c") == pc.scalar(value))

    assert isinstance(tree, Call)
    literal = tree.args[1]
    assert isinstance(literal, Literal)
    assert literal.value.type == value.type and literal.value.equals(value)


@pytest.mark.parametrize("name", ["a", "with space", "ünï=côde/", "x" * 300, ""])
def test_a_field_keeps_its_name(name: str) -> None:
    assert parse(pc.field(name).is_valid()) == Call("is_valid", (Field(name),), None)


def test_is_in_keeps_its_value_set_and_null_matching() -> None:
    tree = parse(pc.field("a").isin(pa.array([1, None, 3])))

    assert isinstance(tree, Call) and tree.name == "is_in" and tree.args == (Field("a"),)
    assert tree.options is not None
    options = tree.options.as_py()
    assert options["value_set"] == [1, None, 3]
    assert options["null_matching_behavior"] == 0  # MATCH


def test_is_null_keeps_nan_is_null() -> None:
    for nan_is_null in (False, True):
        tree = parse(pc.field("f").is_null(nan_is_null=nan_is_null))

        assert isinstance(tree, Call) and tree.name == "is_null" and tree.options is not None
        assert tree.options.as_py()["nan_is_null"] is nan_is_null


def test_boolean_operators_nest() -> None:
    a, b, c = pc.field("a"), pc.field("b"), pc.field("c")

    tree = parse((a | ~b) & c)

    assert tree == Call("and_kleene", (Call("or_kleene", (Field("a"), Call("invert", (Field("b"),), None)), None),
                                       Field("c")), None)


def test_a_long_chain_reads_back_whole() -> None:
    expression = pc.field("v") == 0
    for i in range(1, 200):
        expression = expression | (pc.field("v") == i)

    tree = parse(expression)

    depth = 0
    while isinstance(tree, Call) and tree.name == "or_kleene":
        tree, depth = tree.args[0], depth + 1
    assert depth == 199 and tree == Call("equal", (Field("v"), Literal(pa.scalar(0))), None)


def test_any_function_reads_back_as_a_call() -> None:
    tree = parse(pc.field("s").cast(pa.int64()) + 1 > pc.field("t"))

    assert isinstance(tree, Call) and tree.name == "greater"
    add, right = tree.args
    assert right == Field("t")
    assert isinstance(add, Call) and add.name == "add_checked"
    cast, one = add.args
    assert one == Literal(pa.scalar(1))
    assert isinstance(cast, Call) and cast.name == "cast" and cast.args == (Field("s"),)


def test_a_literal_alone_is_a_literal() -> None:
    assert parse(pc.scalar(True)) == Literal(pa.scalar(True))
    assert parse(pc.field("a")) == Field("a")


def test_a_nested_field_is_opaque_inside_a_readable_tree() -> None:
    tree = parse((pc.field(("a", "b")) == 1) & (pc.field("c") == 2))

    assert isinstance(tree, Call) and tree.name == "and_kleene"
    nested, plain = tree.args
    assert nested == Call("equal", (Opaque(), Literal(pa.scalar(1))), None)
    assert plain == Call("equal", (Field("c"), Literal(pa.scalar(2))), None)

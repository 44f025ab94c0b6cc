"""MERGE and UPDATE conditions read from their text, as a Spark Connect client without a JVM
reads them, as file pruning: against the truth (Spark evaluating the condition over every raw
row, or every pair of a target and a source row), with the random conditions of
tests/changes/test_conditions.py, whose forms the text reader partly knows."""

from __future__ import annotations

import random
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import sleeper_spark as ss
from sleeper_spark.spark.conditions.condition_text import read_condition
from sleeper_spark.spark.conditions.row_conditions import Translation, text_nodes
from sleeper_spark.spark.conditions.sql_conditions import Column, Constant, Predicate, SourceValue, Unknown
from sleeper_spark.spark.rows.merge_builder import key_rows
from sleeper_spark.table.reading import planned_files
from tests.changes.test_conditions import _file_keys, condition, leaf, truth_frame, write_table
from tests.reliability import budget

TARGET = {"id": "long", "part": "string", "flag": "boolean", "day": "date", "Mixed": "integer"}
SOURCE = {"id": "long", "k": "integer"}
# Random merge conditions per seed: each needs a Spark job for its source keys (24 in a long run).
MERGE_CONDITIONS = 24 if budget.LONG_RUN else 14


def _types(sql: str) -> str | None:
    return "long" if "source." in sql else "integer"


def test_a_function_beside_a_key_equality_leaves_the_key_to_prune_by() -> None:
    node = read_condition("target.id = source.id AND upper(target.part, ')') = 'A'", TARGET, SOURCE, _types)

    assert isinstance(node, Predicate) and node.name == "And"
    assert node.args[0] == Predicate("EqualTo", (Column("id", "target", "long"), Column("id", "source", "long")))
    assert node.args[1] == Predicate("EqualTo", (Unknown(), Constant("A")))


def test_either_of_two_key_expressions_reads_as_two_key_equalities() -> None:
    node = read_condition("target.id = source.id OR target.id = source.id + 100000", TARGET, SOURCE, _types)

    target_id = Column("id", "target", "long")
    assert node == Predicate("Or", (Predicate("EqualTo", (target_id, Column("id", "source", "long"))),
                                    Predicate("EqualTo", (target_id, SourceValue("(source.`id` + 100000)", "long")))))


def test_precedence_negation_between_in_and_names_read_as_spark_reads_them() -> None:
    read = read_condition("NOT target.id = 1 AND `Part` IN ('a', 'b') OR mixed BETWEEN -2 AND 5L",
                          TARGET, SOURCE, _types)

    mixed = Column("Mixed", "target", "integer")
    assert read == Predicate("Or", (
        Predicate("And", (Predicate("Not", (Predicate("EqualTo", (Column("id", "target", "long"), Constant(1))),)),
                          Predicate("In", (Column("part", "target", "string"), Constant("a"), Constant("b"))))),
        Predicate("And", (Predicate("GreaterThanOrEqual", (mixed, Constant(-2))),
                          Predicate("LessThanOrEqual", (mixed, Constant(5)))))))


@pytest.mark.parametrize("text", [
    "target.id = source.id -- a comment", "target.id = source.id /* x */", 'target.part = "a"',
    "target.part = 'it\\'s'", "target.part = 'a' 'b'", "CASE WHEN target.flag THEN true END",
    "target.part || 'x' = 'ax'", "target.id = source.id AND", "target.id IN (SELECT 1)", "target.id = 1 = true",
    "target.id IS TRUE", "(target.id = 1", "target.s.f = 1", "target.day = DATE '2024-01-01'",
])
def test_text_outside_what_is_read_prunes_nothing(text: str) -> None:
    # (a function's arguments are skipped whole, strings and parentheses inside them included)
    assert read_condition(text, TARGET, SOURCE, _types) == Unknown()


@pytest.mark.parametrize(("text", "unknown"), [
    ("target.day = '2024-01-01'", "a date compared with text: Spark casts the text"),
    ("target.part = 1", "text compared with a number"), ("target.id = 1.5", "a decimal literal"),
    ("id = 1", "a name both sides have"), ("target.id = upper(source.id)", "a function"),
    ("target.id = source.id + target.id", "an expression of both sides"), ("target.nope = 1", "no such column"),
    ("target.id = cast(source.k AS BIGINT)", "a cast"), ("concat(')', target.part) = 'x'", "a function"),
])
def test_operands_that_are_not_read_are_unknown_leaves(text: str, unknown: str) -> None:
    node = read_condition(text, TARGET, SOURCE, _types)

    assert isinstance(node, (Predicate, Unknown)), unknown
    assert isinstance(node, Unknown) or any(isinstance(arg, Unknown) for arg in node.args), unknown


@pytest.mark.spark
@pytest.mark.parametrize("seed", [1, pytest.param(4, marks=budget.long_run_only)])
def test_an_update_read_from_its_text_reads_every_file_that_holds_a_row_it_selects(
        spark: SparkSession, tmp_path: Any, seed: int) -> None:
    rng = random.Random(seed)
    table, raw = write_table(ss.Catalog.local(str(tmp_path)), rng)
    state, names = table.state(), _file_keys(table.state())
    conditions = [condition(rng, 3, leaf) for _ in range(60)]

    columns = [F.coalesce(F.expr(c), F.lit(False)).alias(f"c{n}") for n, c in enumerate(conditions)]
    truth = truth_frame(spark, raw).select("version", "part", *columns).collect()

    skipped = 0
    for n, sql in enumerate(conditions):
        rows = Translation(state.schema.to_arrow(), None).sets(text_nodes(state.schema, sql))[0]
        kept = {names[f.path] for f in planned_files(state, rows)}
        needed = {(row["part"], row["version"]) for row in truth if row[f"c{n}"]}
        assert needed <= kept, f"{sql!r} skipped files holding rows it selects: {sorted(needed - kept)}"
        skipped += len(kept) < len(state.files)
    assert skipped >= len(conditions) // 8


@pytest.mark.spark
@pytest.mark.parametrize("seed", [1, pytest.param(5, marks=budget.long_run_only)])
def test_a_merge_read_from_its_text_reads_every_file_that_holds_a_row_it_may_match(
        spark: SparkSession, tmp_path: Any, seed: int) -> None:
    rng = random.Random(seed)
    table, raw = write_table(ss.Catalog.local(str(tmp_path)), rng)
    state, names = table.state(), _file_keys(table.state())
    source = spark.createDataFrame([(3, "b", 2), (44, "a", None), (500, "a", 91), (None, "b", 3)],
                                   "id long, part string, k int")

    def atom(rng: random.Random) -> str:
        return rng.choice([
            "target.id = source.id", "source.id = target.id", "target.id <=> source.id", "target.i = source.k",
            "target.id = source.k", "target.part = source.part", "source.part = 'a'", "target.id < source.id",
            "target.value = source.id", leaf(rng, "target."), "target.id = source.id + 40",
            "source.k * 10 = target.id", "target.id <=> source.id - 1", "target.id = (source.id + source.k)",
            "target.i = source.k + 100", "target.id = -source.id", "target.i = source.k % 7",
        ])

    conditions = [condition(rng, 3, atom) for _ in range(MERGE_CONDITIONS)]
    pairs = truth_frame(spark, raw).alias("target").crossJoin(source.alias("source"))
    columns = [F.coalesce(F.expr(c), F.lit(False)).alias(f"c{n}") for n, c in enumerate(conditions)]
    truth = pairs.select("target.version", "target.part", *columns).collect()

    def keys(target: str, column: str, null_safe: bool) -> Any:
        return key_rows(source, state.schema, target, column, null_safe)

    skipped = 0
    for n, sql in enumerate(conditions):
        rows = Translation(state.schema.to_arrow(), keys).sets(text_nodes(state.schema, sql, source))[0]
        kept = {names[f.path] for f in planned_files(state, rows)}
        needed = {(row["part"], row["version"]) for row in truth if row[f"c{n}"]}
        assert needed <= kept, f"{sql!r} skipped files holding rows it matches: {sorted(needed - kept)}"
        skipped += len(kept) < len(state.files)
    assert skipped >= len(conditions) // 8

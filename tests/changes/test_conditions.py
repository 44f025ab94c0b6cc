"""UPDATE's ``where`` and MERGE's condition as file pruning, against the truth.

The truth is Spark evaluating the same condition over every raw row (for a merge, over every
pair of a target and a source row), with no pruning: a file that holds a row for which the
condition is TRUE must be read, whatever the condition. Random conditions mix every form the
translation knows (comparisons both ways round, IN, BETWEEN, IS NULL, LIKE, a boolean column,
AND, OR, NOT, NULL and constants) with forms it does not, over columns of every type, nulls
and NaN included.
"""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import sleeper_spark as ss
from sleeper_spark.spark.conditions.row_conditions import merge_rows, update_rows
from sleeper_spark.spark.rows.merge_builder import key_rows
from sleeper_spark.table.reading import planned_files
from tests.reliability.budget import LONG_RUN, long_run_only

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.string()), ("value", pa.float64()), ("note", pa.string()),
                    ("day", pa.date32()), ("flag", pa.bool_()), ("i", pa.int32()), ("amount", pa.decimal128(10, 2)),
                    ("at", pa.timestamp("us", "UTC"))])
DDL = ("id long, part string, value double, note string, day date, flag boolean, i int, amount decimal(10,2), "
       "at timestamp, version long")
WRITES = 12
# One seed's 50 update and 10 merge conditions by default; a long run (SLEEPER_LONG_RUN=1) checks 120 and 40
# of each of two seeds.
UPDATE_CONDITIONS = 120 if LONG_RUN else 50
MERGE_CONDITIONS = 40 if LONG_RUN else 10
T0 = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)


def write_table(catalog: ss.Catalog, rng: random.Random) -> tuple[ss.Table, list[dict[str, Any]]]:
    """``WRITES`` writes of clustered ids, a file per partition each; every row with the version that wrote it."""
    table = catalog.create_table("t", SCHEMA, partition_by=["part"])
    raw: list[dict[str, Any]] = []
    for k in range(WRITES):
        ids: list[int | None] = list(range(k * 10, k * 10 + 6)) + ([None] if k % 5 == 0 else [])
        rows = [{"id": i, "part": "a" if (i or 0) % 2 == 0 else "b",
                 "value": rng.choice([None, float("nan"), -1.5, 0.0, 2.5, float(k)]),
                 "note": None if i is not None and i % 7 == 3 else f"old{i}",
                 "day": dt.date(2024, 1, 1) + dt.timedelta(days=k), "flag": rng.choice([True, False, None]),
                 "i": k * 100 + j, "amount": Decimal(k) + Decimal("0.25"),
                 "at": T0 + dt.timedelta(hours=k, minutes=j)} for j, i in enumerate(ids)]
        version = table.write(pa.Table.from_pylist(rows, schema=SCHEMA)).version
        raw += [{**row, "version": version} for row in rows]
    return table, raw


def leaf(rng: random.Random, prefix: str = "") -> str:
    """One random comparison over the table's columns (``prefix``: ``target.`` in a merge)."""
    c = prefix
    n = rng.randrange(-5, 125)
    op = rng.choice(["=", "<", "<=", ">", ">=", "!=", "<=>"])
    day = f"'2024-01-{rng.randrange(1, 15):02d}'"
    return rng.choice([
        f"{c}id {op} {n}", f"{n} {op} {c}id", f"{c}id in ({n}, {n + 3}, {n + 40})", f"{c}id not in ({n}, {n + 1})",
        f"{c}id between {n} and {n + rng.randrange(0, 30)}", f"{c}id is null", f"{c}id is not null",
        f"{c}part = '{rng.choice('ab')}'", f"{c}part in ('a', 'c')", f"{c}note like 'old{rng.randrange(1, 12)}%'",
        f"{c}note like '%{rng.randrange(10)}'", f"{c}note like 'old_{rng.randrange(10)}'", f"{c}note is null",
        f"startswith({c}note, 'old{rng.randrange(12)}')", f"{c}value {op} {rng.choice(['2.5', '0', '-1.5', '7'])}",
        f"{c}value is null", f"isnan({c}value)", f"{c}day {op} {day}", f"{c}flag", f"not {c}flag",
        f"{c}flag is null", f"{c}i {op} {rng.choice([n * 10, 5_000_000_000, 305])}",
        f"{c}amount {op} {rng.choice(['3.25', '3', '11.250'])}",
        f"{c}at >= '2024-01-01 0{rng.randrange(10)}:00:00'", f"{c}at < timestamp'2024-01-01 05:03:00'",
        f"upper({c}part) = 'A'", f"{c}id % 2 = 0", f"cast({c}id as string) = '{n}'", f"{c}id = {n} + 1",
        "null", "true", "false", f"{c}id = null",
    ])


def condition(rng: random.Random, depth: int, atom: Any) -> str:
    if depth == 0 or rng.random() < 0.3:
        return atom(rng)
    shape = rng.choice(["and", "or", "not", "and"])
    if shape == "not":
        return f"not ({condition(rng, depth - 1, atom)})"
    return f"({condition(rng, depth - 1, atom)}) {shape} ({condition(rng, depth - 1, atom)})"


def truth_frame(spark: SparkSession, raw: list[dict[str, Any]]) -> Any:
    return spark.createDataFrame([tuple(row[name] for name in [*SCHEMA.names, "version"]) for row in raw], DDL)


@pytest.mark.parametrize("seed", [1, pytest.param(2, marks=long_run_only)])
def test_an_update_reads_every_file_that_holds_a_row_its_where_selects(spark: SparkSession, tmp_path: Any,
                                                                       seed: int) -> None:
    # Given a table of 24 files, and UPDATE_CONDITIONS random conditions
    rng = random.Random(seed)
    table, raw = write_table(ss.Catalog.local(str(tmp_path)), rng)
    state, names = table.state(), _file_keys(table.state())
    conditions = [condition(rng, 3, leaf) for _ in range(UPDATE_CONDITIONS)]

    # When Spark evaluates each over every raw row
    columns = [F.coalesce(F.expr(c), F.lit(False)).alias(f"c{n}") for n, c in enumerate(conditions)]
    truth = truth_frame(spark, raw).select("version", "part", *columns).collect()

    # Then the files pruning keeps hold every row a condition is TRUE for, and some conditions skip files
    skipped = 0
    for n, sql in enumerate(conditions):
        kept = {names[f.path] for f in planned_files(state, update_rows(spark, state.schema, sql))}
        needed = {(row["part"], row["version"]) for row in truth if row[f"c{n}"]}
        assert needed <= kept, f"{sql!r} skipped files holding rows it selects: {sorted(needed - kept)}"
        skipped += len(kept) < len(state.files)
    assert skipped >= len(conditions) // 4


@pytest.mark.parametrize("seed", [1, pytest.param(2, marks=long_run_only)])
def test_a_merge_reads_every_file_that_holds_a_row_its_condition_may_match(spark: SparkSession, tmp_path: Any,
                                                                           seed: int) -> None:
    # Given a table of 24 files, a source of a few keys, and MERGE_CONDITIONS random merge
    # conditions (a Spark job each)
    rng = random.Random(seed)
    table, raw = write_table(ss.Catalog.local(str(tmp_path)), rng)
    state, names = table.state(), _file_keys(table.state())
    source = spark.createDataFrame([(3, "b", 2), (44, "a", None), (500, "a", 91), (None, "b", 3)],
                                   "id long, part string, k int")

    def atom(rng: random.Random) -> str:
        return rng.choice([
            "target.id = source.id", "source.id = target.id", "target.id <=> source.id", "target.i = source.k",
            "target.id = source.k", "target.part = source.part", "source.part = 'a'", "target.id < source.id",
            "target.value = source.id", leaf(rng, "target."),
            # a target column equal to an expression of source columns alone: a key set too
            "target.id = source.id + 40", "source.k * 10 = target.id", "target.id <=> source.id - 1",
            "target.part = lower(source.part)", "target.id = source.id + source.k", "target.i = source.k + 100",
        ])

    conditions = [condition(rng, 3, atom) for _ in range(MERGE_CONDITIONS)]

    # When Spark evaluates each over every pair of a target and a source row
    pairs = truth_frame(spark, raw).alias("target").crossJoin(source.alias("source"))
    columns = [F.coalesce(F.expr(c), F.lit(False)).alias(f"c{n}") for n, c in enumerate(conditions)]
    truth = pairs.select("target.version", "target.part", *columns).collect()

    # Then the files pruning keeps hold every target row a condition matches
    skipped = 0
    for n, sql in enumerate(conditions):
        rows = merge_rows(source, state.schema, sql,
                          lambda target, column, null_safe: key_rows(source, state.schema, target, column, null_safe))
        kept = {names[f.path] for f in planned_files(state, rows)}
        needed = {(row["part"], row["version"]) for row in truth if row[f"c{n}"]}
        assert needed <= kept, f"{sql!r} skipped files holding rows it matches: {sorted(needed - kept)}"
        skipped += len(kept) < len(state.files)
    assert skipped >= len(conditions) // 4


@pytest.mark.usefixtures("io_path")
@pytest.mark.parametrize("seed", [3])
def test_update_and_merge_with_pruning_give_the_rows_the_raw_rows_give(spark: SparkSession, catalog: ss.Catalog,
                                                                        seed: int) -> None:
    # Given a table, and random conditions
    rng = random.Random(seed)
    table, raw = write_table(catalog, rng)
    where = condition(rng, 2, leaf)
    frame = truth_frame(spark, raw)
    selected = {row["i"] for row in frame.where(F.expr(where)).collect()}  # i is unique per row

    # When an UPDATE sets note where the condition holds
    snapshot = table.update(spark, {"note": "'updated'"}, where=where)

    # Then exactly those rows changed, and the update read no more files than pruning keeps
    after = {row["i"]: row["note"] for row in table.scan().to_pylist()}
    assert {i for i, note in after.items() if note == "updated"} == selected, where
    assert snapshot.operation_metrics["rows_updated"] == len(selected)

    # When a MERGE inserts a source row no target row matches under a condition with OR
    merge = f"target.id = source.id or ({condition(rng, 2, lambda r: leaf(r, 'target.'))})"
    source = spark.createDataFrame([(3, 1_000_001), (45, 1_000_002), (777, 1_000_003)], "id long, i int")
    current = [{**row, "version": 0} for row in table.scan().to_pylist()]
    matched = {row["i"] for row in truth_frame(spark, current).alias("target")
               .crossJoin(source.alias("source")).where(F.expr(merge)).select("source.i").collect()}
    table.merge(source, merge).when_not_matched_insert(values={"id": "source.id", "i": "source.i",
                                                               "part": "'c'"}).execute()

    # Then exactly the source rows nothing matched were inserted
    inserted = {row["i"] for row in table.scan().to_pylist() if row["part"] == "c"}
    assert inserted == {1_000_001, 1_000_002, 1_000_003} - matched, merge


def test_an_update_of_one_key_reads_only_the_files_whose_range_holds_it(spark: SparkSession, tmp_path: Any) -> None:
    table, _ = write_table(ss.Catalog.local(str(tmp_path)), random.Random(0))

    snapshot = table.update(spark, {"note": "'x'"}, where="id = 42")

    # (both files of that write span 42: 40..44 in partition a, 41..45 in b)
    assert snapshot.operation_metrics == {"rows_updated": 1, "rows_copied": 2, "files_read": 2, "files_rewritten": 1}
    assert [row["note"] for row in table.scan().to_pylist() if row["id"] == 42] == ["x"]


def test_a_merge_on_either_of_two_key_expressions_reads_only_the_files_of_their_keys(spark: SparkSession,
                                                                                   tmp_path: Any) -> None:
    # Given 24 files of clustered ids (write k holds ids 10k..10k+5, a file per partition)
    table, _ = write_table(ss.Catalog.local(str(tmp_path)), random.Random(0))
    source = spark.createDataFrame([(3, "x")], "id long, note string")

    # When a MERGE matches a target row by the source's id, or by that id plus 100
    snapshot = (table.merge(source, "target.id = source.id OR target.id = source.id + 100")
                .when_matched_update(set={"note": "source.note"}).execute())

    # Then it reads the two files whose ranges hold 3 and the two that hold 103, of 24, and
    # changes those two rows
    assert snapshot.operation_metrics is not None
    assert (snapshot.operation_metrics["files_read"], snapshot.operation_metrics["rows_updated"]) == (4, 2)
    assert sorted(row["id"] for row in table.scan().to_pylist() if row["note"] == "x") == [3, 103]


def _file_keys(state: Any) -> dict[str, tuple[str, int]]:
    """Each file's (partition, version that wrote it): how the raw rows name their file."""
    files = state.files.table()
    return {path: (part, version) for path, part, version in zip(
        files.column("path").to_pylist(), files.column("partition.part").to_pylist(),
        files.column("added_version").to_pylist(), strict=True)}

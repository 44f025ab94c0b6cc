"""MERGE INTO, UPDATE and DELETE FROM on the SQL catalog's tables (``sleeper.spark.SleeperExtensions``).

Each statement is checked against the rows it must leave, computed here from the raw rows, and
against what the same change through the Python builders does to a copy of the table.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession

import sleeper_spark as ss

pytestmark = pytest.mark.spark

ROWS = [(1, "a", 1.0), (2, "a", 2.0), (3, "b", 3.0), (4, "c", 4.0)]
SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string()), ("amount", pa.float64())])


def make_table(lake: ss.Catalog, name: str, rows: list[tuple[Any, ...]] = ROWS) -> ss.Table:
    table = lake.create_table(name, SCHEMA, partition_by=["day"])
    table.write(pa.Table.from_pylist([dict(zip(SCHEMA.names, r, strict=True)) for r in rows], SCHEMA))
    return table


def rows_of(table: ss.Table) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in table.scan().to_pylist())


def source(spark: SparkSession, rows: list[tuple[Any, ...]]) -> DataFrame:
    return spark.createDataFrame(rows, "id long, day string, amount double")


def test_merge_into_runs_every_clause_against_the_truth(spark: SparkSession, lake: ss.Catalog) -> None:
    # Given a table and a source with a key to update, a key to delete and a new key
    table = make_table(lake, "db.t")
    source(spark, [(2, "a", 20.0), (3, "b", -1.0), (5, "b", 50.0)]).createOrReplaceTempView("src")

    # When a MERGE INTO uses every kind of clause Spark 4 has
    answer = spark.sql("""
        MERGE INTO lake.db.t AS t USING src AS s ON t.id = s.id
        WHEN MATCHED AND s.amount < 0 THEN DELETE
        WHEN MATCHED THEN UPDATE SET amount = s.amount + 1
        WHEN NOT MATCHED THEN INSERT *
        WHEN NOT MATCHED BY SOURCE AND t.day = 'c' THEN UPDATE SET amount = t.amount * 10
        WHEN NOT MATCHED BY SOURCE AND t.id = 1 THEN DELETE""").collect()

    # Then the table holds exactly the rows those clauses leave, in one merge snapshot whose
    # metrics and answer count what happened
    assert rows_of(table) == [(2, "a", 21.0), (4, "c", 40.0), (5, "b", 50.0)]
    snapshot = table.history()[-1]
    assert snapshot.operation == "merge"
    metrics = snapshot.operation_metrics
    assert (metrics["rows_updated"], metrics["rows_deleted"], metrics["rows_inserted"]) == (2, 2, 1)
    assert answer[0].asDict() == {"num_affected_rows": 5, "num_updated_rows": 2, "num_deleted_rows": 2,
                                  "num_inserted_rows": 1}


def test_merge_with_only_inserts_checks_the_target(spark: SparkSession, lake: ss.Catalog) -> None:
    # Given a source with one key the table has and one it lacks
    table = make_table(lake, "db.t")
    source(spark, [(1, "a", 9.0), (7, "c", 7.0)]).createOrReplaceTempView("src")

    # When a MERGE INTO has only a NOT MATCHED clause (which Spark would plan as a plain append)
    spark.sql("MERGE INTO lake.db.t t USING src s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *")

    # Then only the new key is inserted
    assert rows_of(table) == sorted([*ROWS, (7, "c", 7.0)])


def test_update_with_and_without_where(spark: SparkSession, lake: ss.Catalog) -> None:
    table = make_table(lake, "db.t")

    # When rows are updated by a condition, then every row
    first = spark.sql("UPDATE lake.db.t SET amount = amount + 100 WHERE id > 2 AND day <> 'c'").collect()
    spark.sql("UPDATE lake.db.t SET amount = -amount")

    # Then each UPDATE changed the rows it names, in an update snapshot each
    assert rows_of(table) == [(1, "a", -1.0), (2, "a", -2.0), (3, "b", -103.0), (4, "c", -4.0)]
    assert first[0]["num_affected_rows"] == 1
    assert [s.operation for s in table.history()[-2:]] == ["update", "update"]
    assert table.history()[-2].operation_metrics["rows_updated"] == 1


def test_dataframe_merge_into(spark: SparkSession, lake: ss.Catalog) -> None:
    from pyspark.sql import functions as F

    table = make_table(lake, "db.t")

    # When Spark 4's DataFrame API merges a source into the table
    (source(spark, [(1, "a", 10.0), (6, "b", 6.0)]).alias("s")
     .mergeInto("lake.db.t", F.expr("lake.db.t.id = s.id"))
     .whenMatched().updateAll().whenNotMatched().insertAll().merge())

    # Then the matched row is updated and the new one inserted
    assert rows_of(table) == sorted([(1, "a", 10.0), (2, "a", 2.0), (3, "b", 3.0), (4, "c", 4.0), (6, "b", 6.0)])


def test_a_cached_source_stays_cached(spark: SparkSession, lake: ss.Catalog) -> None:
    table = make_table(lake, "db.t")
    cached = source(spark, [(1, "a", 5.0)]).cache()
    cached.count()
    cached.createOrReplaceTempView("src")

    spark.sql("MERGE INTO lake.db.t t USING src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *")

    # The merge neither cached it again nor dropped the caller's cache when it was done
    assert spark.catalog.isCached("src")
    assert rows_of(table) == sorted([(1, "a", 5.0), *ROWS[1:]])
    cached.unpersist()


def test_two_source_rows_for_one_target_row_commit_nothing(spark: SparkSession, lake: ss.Catalog) -> None:
    table = make_table(lake, "db.t")
    versions = len(table.history())
    source(spark, [(1, "a", 5.0), (1, "a", 6.0)]).createOrReplaceTempView("src")

    with pytest.raises(Exception) as raised:
        spark.sql("MERGE INTO lake.db.t t USING src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *")

    assert isinstance(ss.sleeper_error(raised.value), ss.MergeCardinalityError)
    assert len(table.history()) == versions and rows_of(table) == sorted(ROWS)


def test_a_subquery_in_a_condition_is_refused_with_what_to_do(spark: SparkSession, lake: ss.Catalog) -> None:
    table = make_table(lake, "db.t")

    with pytest.raises(Exception) as raised:
        spark.sql("UPDATE lake.db.t SET amount = 0 WHERE id IN (SELECT 1)")

    assert "join what it reads into the source" in str(raised.value)
    assert rows_of(table) == sorted(ROWS)


def test_delete_of_partitions_reads_no_data_file_and_starts_no_spark_job(spark: SparkSession,
                                                                         lake: ss.Catalog) -> None:
    table = make_table(lake, "db.t")
    jobs = spark._jsparkSession.sparkContext().dagScheduler()
    before = jobs.nextJobId()

    # When whole partitions are deleted
    answer = spark.sql("DELETE FROM lake.db.t WHERE day IN ('a', 'c')").collect()

    # Then no Spark job ran, and the rows of the other partitions are left
    assert jobs.nextJobId() == before
    assert rows_of(table) == [(3, "b", 3.0)]
    assert answer[0]["num_affected_rows"] == 3
    assert table.history()[-1].operation == "delete"


def test_delete_by_a_data_column_rewrites_what_it_must(spark: SparkSession, lake: ss.Catalog) -> None:
    table = make_table(lake, "db.t")

    spark.sql("DELETE FROM lake.db.t WHERE amount >= 2 AND amount < 4")

    assert rows_of(table) == [(1, "a", 1.0), (4, "c", 4.0)]


# -- the same changes through SQL and through the Python builders --------------------------------

_MERGE_ON = ["{t}.id = {s}.id", "{t}.id = {s}.id AND {t}.day = {s}.day"]
_TARGET_CONDITIONS = [None, "{t}.amount > 40", "{t}.day = 'b'", "{t}.id % 3 = 0"]
_SOURCE_CONDITIONS = [None, "{s}.amount < 50", "{s}.day <> 'a'"]
_ROW_CONDITIONS = [None, "amount > 30", "day = 'c'", "id % 2 = 1 OR amount IS NULL", "day IN ('a', 'b')"]
_UPDATES = ["amount + 1", "amount * 2", "CAST(id AS DOUBLE)"]


def _statements(rng: random.Random, spark: SparkSession) -> tuple[str, Callable[[ss.Table, DataFrame], object]]:
    """One random change as SQL over ``lake.db.a`` (aliases t, s) and as the Python builder call."""
    kind = rng.choice(["merge", "merge", "update", "delete"])
    if kind == "update":
        where = rng.choice(_ROW_CONDITIONS)
        value = rng.choice(_UPDATES)
        sql = f"UPDATE lake.db.a SET amount = {value}" + (f" WHERE {where}" if where else "")
        return sql, lambda table, _: table.update(spark, {"amount": value}, where)
    if kind == "delete":
        where = rng.choice(_ROW_CONDITIONS[1:])
        return (f"DELETE FROM lake.db.a WHERE {where}",
                lambda table, _: table.delete_where(spark, where))
    on = rng.choice(_MERGE_ON)
    clauses: list[tuple[str, str | None]] = []
    for clause in rng.sample(["matched_update", "matched_delete", "insert", "by_source_update",
                              "by_source_delete"], rng.randint(1, 4)):
        pool = _SOURCE_CONDITIONS if clause == "insert" else _TARGET_CONDITIONS
        clauses.append((clause, rng.choice(pool)))
    # SQL takes the clauses in this order: MATCHED, NOT MATCHED, NOT MATCHED BY SOURCE
    def group(clause: str) -> int:
        return 0 if clause.startswith("matched") else 1 if clause == "insert" else 2

    clauses.sort(key=lambda c: group(c[0]))
    # ... and only the last clause of a group may leave out its condition
    for i, (clause, condition) in enumerate(clauses[:-1]):
        if condition is None and group(clauses[i + 1][0]) == group(clause):
            pool = _SOURCE_CONDITIONS if clause == "insert" else _TARGET_CONDITIONS
            clauses[i] = (clause, pool[1])
    sql = f"MERGE INTO lake.db.a AS t USING src AS s ON {on.format(t='t', s='s')}"
    texts = {"matched_update": "WHEN MATCHED{c} THEN UPDATE SET amount = s.amount + t.amount",
             "matched_delete": "WHEN MATCHED{c} THEN DELETE",
             "insert": "WHEN NOT MATCHED{c} THEN INSERT *",
             "by_source_update": "WHEN NOT MATCHED BY SOURCE{c} THEN UPDATE SET amount = t.amount - 1",
             "by_source_delete": "WHEN NOT MATCHED BY SOURCE{c} THEN DELETE"}
    for clause, condition in clauses:
        sql += " " + texts[clause].format(c=f" AND {condition.format(t='t', s='s')}" if condition else "")

    def python(table: ss.Table, src: DataFrame) -> object:
        builder = table.merge(src, on.format(t="target", s="source"))
        for clause, condition in clauses:
            where = condition.format(t="target", s="source") if condition else None
            if clause == "matched_update":
                builder.when_matched_update({"amount": "source.amount + target.amount"}, where)
            elif clause == "matched_delete":
                builder.when_matched_delete(where)
            elif clause == "insert":
                builder.when_not_matched_insert(None, where)
            elif clause == "by_source_update":
                builder.when_not_matched_by_source_update({"amount": "target.amount - 1"}, where)
            else:
                builder.when_not_matched_by_source_delete(where)
        return builder.execute()

    return sql, python


def test_random_changes_through_sql_and_python_agree(spark: SparkSession, lake: ss.Catalog) -> None:
    """SQL statements and the Python builders, on two copies of one table, leave the same rows and
    count the same metrics (SLEEPER_DIFFERENTIAL_CHANGES sets the number of statements)."""
    rng = random.Random(7)
    days = ["a", "b", "c"]
    rows = [(i, days[i % 3], float(i * 5) if i % 7 else None) for i in range(1, 40)]
    by_sql, by_python = make_table(lake, "db.a", rows), make_table(lake, "db.b", rows)
    for _ in range(int(os.environ.get("SLEEPER_DIFFERENTIAL_CHANGES", "6"))):
        keys = rng.sample(range(1, 60), 12)  # distinct keys: a merge never matches a row twice
        src = source(spark, [(k, rng.choice(days), float(rng.randint(0, 90))) for k in keys])
        src.createOrReplaceTempView("src")
        sql, python = _statements(rng, spark)

        spark.sql(sql).collect()
        python(by_python, src)

        assert rows_of(by_sql) == rows_of(by_python), sql
        assert by_sql.history()[-1].operation_metrics == by_python.history()[-1].operation_metrics, sql

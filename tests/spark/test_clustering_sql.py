"""CLUSTER BY through Spark: CREATE TABLE, ALTER TABLE, df.writeTo(...).clusterBy, DESCRIBE, CALL compact.

The clustering columns Spark is told are the table property the Python API keeps
(``clustering.columns``); a compaction through SQL lays the files out by them.
"""

from __future__ import annotations

import json

import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

import sleeper_spark as ss

pytestmark = pytest.mark.spark


def clustering(catalog: ss.Catalog, name: str) -> list[str] | None:
    text = catalog.table(name).state().properties.get("clustering.columns")
    return None if text is None else json.loads(text)


def clustering_information(spark: SparkSession, name: str) -> list[str]:
    """The column names DESCRIBE TABLE EXTENDED lists under ``# Clustering Information``."""
    rows = [(r.col_name, r.data_type) for r in spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()]
    names = [row[0] for row in rows]
    if "# Clustering Information" not in names:
        return []
    start = names.index("# Clustering Information") + 2  # after the "# col_name" header row
    found = []
    for col_name, _ in rows[start:]:
        if not col_name or col_name.startswith("#"):
            break
        found.append(col_name)
    return found


def test_create_alter_and_describe_a_clustered_table(spark: SparkSession, lake: ss.Catalog) -> None:
    # When a table is created with CLUSTER BY
    spark.sql("CREATE TABLE lake.db.c (id BIGINT, a BIGINT, b STRING) USING sleeper CLUSTER BY (a, b)")
    # Then the Python API sees the clustering, and DESCRIBE shows it
    assert clustering(lake, "db.c") == ["a", "b"]
    assert clustering_information(spark, "lake.db.c") == ["a", "b"]

    # When a partitioned table is clustered by ALTER TABLE (Spark's parser takes CLUSTER BY or
    # PARTITIONED BY in one CREATE TABLE, not both), changed, and unclustered
    spark.sql("CREATE TABLE lake.db.k (id BIGINT, a BIGINT, b STRING, day STRING) USING sleeper PARTITIONED BY (day)")
    spark.sql("INSERT INTO lake.db.k VALUES (1, 10, 'x', 'd1'), (2, 20, 'y', 'd2')")
    files = {f.path for f in lake.table("db.k").files()}
    spark.sql("ALTER TABLE lake.db.k CLUSTER BY (a, b)")
    # Then each shows in the Python API and in DESCRIBE, the partitioning stays, and no file is rewritten
    assert clustering(lake, "db.k") == ["a", "b"] and clustering_information(spark, "lake.db.k") == ["a", "b"]
    assert lake.table("db.k").partition_by == ("day",)
    spark.sql("ALTER TABLE lake.db.k CLUSTER BY (b)")
    assert clustering(lake, "db.k") == ["b"] and clustering_information(spark, "lake.db.k") == ["b"]
    spark.sql("ALTER TABLE lake.db.k CLUSTER BY NONE")
    assert clustering(lake, "db.k") is None and clustering_information(spark, "lake.db.k") == []
    assert {f.path for f in lake.table("db.k").files()} == files


def test_write_to_cluster_by_creates_a_clustered_table_and_call_compact_clusters_it(
        spark: SparkSession, lake: ss.Catalog) -> None:
    # Given a clustered table made by df.writeTo(...).clusterBy(...) and appended to twice
    frame = spark.range(0, 400).selectExpr("id", "(id * 7919) % 400 AS a", "cast(id % 13 AS string) AS b")
    frame.writeTo("lake.db.w").clusterBy("a").create()
    spark.range(400, 800).selectExpr("id", "(id * 7919) % 400 AS a", "cast(id % 13 AS string) AS b") \
        .writeTo("lake.db.w").append()
    assert clustering(lake, "db.w") == ["a"]
    before = sorted(r.id for r in spark.table("lake.db.w").collect())

    # When it is compacted through CALL
    spark.sql("CALL lake.system.compact(table => 'db.w')")

    # Then one compaction clustered every file, and the rows are the same
    latest = lake.table("db.w").latest()
    assert latest.operation == "compact" and json.loads(latest.metadata["clustering.columns"]) == ["a"]
    assert sorted(r.id for r in spark.table("lake.db.w").collect()) == before


@pytest.mark.parametrize(("statement", "message"), [
    ("CREATE TABLE lake.db.bad (id BIGINT, day STRING) USING sleeper PARTITIONED BY (day) "
     """TBLPROPERTIES ('clustering.columns' = '["day"]')""", "'day' is a partition column"),
    ("CREATE TABLE lake.db.bad (id BIGINT, m MAP<STRING, BIGINT>) USING sleeper CLUSTER BY (m)",
     "cannot cluster by 'm' of type map"),
])
def test_clustering_that_cannot_work_is_refused_before_anything_is_made(
        spark: SparkSession, lake: ss.Catalog, statement: str, message: str) -> None:
    spark.sql("CREATE TABLE lake.db.other (id BIGINT) USING sleeper")
    with pytest.raises(Exception, match=message):
        spark.sql(statement)
    assert lake.tables() == ["db.other"]


@pytest.mark.parametrize(("columns", "message"), [("nope", "nope"), ("day", "'day' is a partition column")])
def test_alter_cluster_by_a_column_that_cannot_cluster_changes_nothing(
        spark: SparkSession, lake: ss.Catalog, columns: str, message: str) -> None:
    spark.sql("CREATE TABLE lake.db.k (id BIGINT, a BIGINT, day STRING) USING sleeper PARTITIONED BY (day)")
    spark.sql("ALTER TABLE lake.db.k CLUSTER BY (a)")
    version = lake.table("db.k").state().version
    with pytest.raises((AnalysisException, Exception), match=message):
        spark.sql(f"ALTER TABLE lake.db.k CLUSTER BY ({columns})")
    assert clustering(lake, "db.k") == ["a"] and lake.table("db.k").state().version == version


def test_the_session_catalog_takes_cluster_by_on_unqualified_names(
        spark: SparkSession, session_catalog: ss.Catalog, db: str) -> None:
    spark.sql(f"CREATE TABLE {db}.k (id BIGINT, a BIGINT, day STRING) USING sleeper CLUSTER BY (a)")
    assert clustering(session_catalog, f"{db}.k") == ["a"]
    assert clustering_information(spark, f"{db}.k") == ["a"]
    spark.sql(f"ALTER TABLE {db}.k CLUSTER BY (id, a)")
    assert clustering(session_catalog, f"{db}.k") == ["id", "a"]
    assert clustering_information(spark, f"{db}.k") == ["id", "a"]

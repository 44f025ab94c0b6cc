"""The sleeper session catalog (``sleeper.spark.SleeperSessionCatalog``): sleeper tables in
Spark's own catalog, beside the tables of every other format, by unqualified names.

The session here is the run's shared one with Spark's in-memory catalog as the metastore (the
Hive metastore, embedded and as a service, and the Thrift server are tested in their own driver
processes). Every statement's rows are compared with the Python API's ``scan()`` of the same
table and with the rows written.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession

import sleeper_spark as ss
from tests.fixtures.sql_catalog import RecordingBuilder

pytestmark = pytest.mark.spark


def rows(frame: DataFrame) -> list[tuple[object, ...]]:
    return sorted(tuple(row) for row in frame.collect())


def scanned(catalog: ss.Catalog, name: str) -> list[tuple[object, ...]]:
    table = catalog.table(name).scan()
    return sorted(zip(*(table.column(n).to_pylist() for n in table.column_names), strict=True))


def tables_in(spark: SparkSession, db: str | None = None) -> list[str]:
    """What SHOW TABLES lists of ``db`` (the current database if None), sorted, without the session's
    temporary views (which it lists in every database, and which other tests of the session make)."""
    shown = spark.sql("SHOW TABLES" if db is None else f"SHOW TABLES IN {db}").collect()
    return sorted(r.tableName for r in shown if not r.isTemporary)


def metastore_entry(spark: SparkSession, db: str, name: str) -> Any:
    """The session catalog's own record of ``db.name`` (Spark's CatalogTable), as the metastore keeps it."""
    jvm = spark._jvm
    return spark._jsparkSession.sessionState().catalog().getTableMetadata(
        jvm.org.apache.spark.sql.catalyst.TableIdentifier(name, jvm.scala.Some(db)))


def events(spark: SparkSession, ids: range, day: str = "d1") -> DataFrame:
    return spark.createDataFrame([(i, f"v{i}", day) for i in ids], "id long, v string, day string")


def test_configure_spark_sets_the_session_catalog_class_options_and_extension(catalog: ss.Catalog) -> None:
    conf = ss.configure_spark(RecordingBuilder(), catalogs={"lake": catalog}, session_catalog=catalog)._options

    assert conf["spark.sql.catalog.spark_catalog"] == "sleeper.spark.SleeperSessionCatalog"
    assert conf["spark.sql.catalog.lake"] == "sleeper.spark.SleeperCatalog"
    assert "sleeper.spark.SleeperExtensions" in conf["spark.sql.extensions"].split(",")
    for key, value in catalog.options().items():
        assert conf[f"spark.sql.catalog.spark_catalog.{key}"] == value
    assert ss.catalog_conf("spark_catalog", catalog)["spark.sql.catalog.spark_catalog"] == \
        "sleeper.spark.SleeperSessionCatalog"


def test_save_as_table_in_every_mode_is_the_python_api_table_of_that_name(
        spark: SparkSession, session_catalog: ss.Catalog, db: str) -> None:
    name = f"{db}.events"
    # errorifexists (the default) creates the table, partitioned as asked
    events(spark, range(3)).write.format("sleeper").partitionBy("day").saveAsTable(name)
    assert session_catalog.table(name).partition_by == ("day",)
    assert rows(spark.table(name)) == scanned(session_catalog, name) == [(i, f"v{i}", "d1") for i in range(3)]

    # ... and refuses a second time; ignore leaves the table as it was
    with pytest.raises(Exception, match=r"TABLE_OR_VIEW_ALREADY_EXISTS|already exists"):
        events(spark, range(10, 12)).write.format("sleeper").saveAsTable(name)
    events(spark, range(10, 12)).write.format("sleeper").mode("ignore").saveAsTable(name)
    assert len(session_catalog.table(name).history()) == 1

    # append adds one snapshot; overwrite replaces the rows and keeps the history
    events(spark, range(3, 5), "d2").write.format("sleeper").mode("append").saveAsTable(name)
    assert rows(spark.table(name)) == scanned(session_catalog, name)
    assert len(scanned(session_catalog, name)) == 5
    events(spark, range(7, 9)).write.format("sleeper").mode("overwrite").saveAsTable(name)
    assert rows(spark.table(name)) == scanned(session_catalog, name) == [(7, "v7", "d1"), (8, "v8", "d1")]
    assert [s.operation for s in session_catalog.table(name).history()] == ["append", "append", "overwrite"]
    assert rows(spark.sql(f"SELECT * FROM {name} VERSION AS OF 3")) == \
        sorted([(i, f"v{i}", "d1") for i in range(3)] + [(i, f"v{i}", "d2") for i in range(3, 5)])


def test_time_travel_by_timestamp_on_a_session_catalog_name(spark: SparkSession, session_catalog: ss.Catalog,
                                                             db: str) -> None:
    events(spark, range(2)).write.format("sleeper").saveAsTable(f"{db}.timed")
    first = session_catalog.table(f"{db}.timed").latest()
    events(spark, range(2, 4)).write.format("sleeper").mode("append").saveAsTable(f"{db}.timed")

    at = first.committed_at.strftime("%Y-%m-%d %H:%M:%S.%f")
    assert rows(spark.sql(f"SELECT id FROM {db}.timed TIMESTAMP AS OF '{at}'")) == [(0,), (1,)]


def test_an_unqualified_name_is_in_the_current_database(spark: SparkSession, session_catalog: ss.Catalog,
                                                        db: str) -> None:
    spark.sql(f"USE {db}")
    try:
        events(spark, range(2)).write.format("sleeper").saveAsTable("events")
        spark.sql("INSERT INTO events VALUES (5, 'v5', 'd5')")
        assert rows(spark.table("events")) == scanned(session_catalog, f"{db}.events")
        assert tables_in(spark) == ["events"]
    finally:
        spark.sql("USE default")


def test_sql_ddl_and_dml_on_unqualified_names(spark: SparkSession, session_catalog: ss.Catalog, db: str) -> None:
    spark.sql(f"USE {db}")
    try:
        spark.sql("CREATE TABLE t (id BIGINT, v STRING, day STRING) USING sleeper PARTITIONED BY (day) "
                  "TBLPROPERTIES ('team' = 'sales')")
        table = session_catalog.table(f"{db}.t")
        assert table.partition_by == ("day",)
        assert table.state().properties["team"] == "sales"
        spark.sql("INSERT INTO t VALUES (1, 'a', 'd1'), (2, 'b', 'd2'), (3, 'c', 'd2')")
        events(spark, range(4, 6)).createOrReplaceTempView(f"{db}_source")
        spark.sql(f"MERGE INTO t USING {db}_source s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * "
                  "WHEN NOT MATCHED THEN INSERT *")
        spark.catalog.dropTempView(f"{db}_source")
        spark.sql("UPDATE t SET v = 'B' WHERE id = 2")
        spark.sql("DELETE FROM t WHERE id = 3")
        expected = [(1, "a", "d1"), (2, "B", "d2"), (4, "v4", "d1"), (5, "v5", "d1")]
        assert rows(spark.table("t")) == scanned(session_catalog, f"{db}.t") == expected
        assert [r.operation for r in spark.sql("SELECT operation FROM t.history ORDER BY version").collect()] == \
            ["append", "merge", "update", "delete"]
        assert spark.sql("SELECT count(*) FROM t.files").first()[0] == len(session_catalog.table(f"{db}.t").files())
        changed = spark.sql("SELECT id, _change_type FROM t CHANGES FROM VERSION 5 TO VERSION 5").collect()
        assert sorted((r.id, r._change_type) for r in changed) == [(3, "delete")]

        spark.sql("INSERT OVERWRITE t SELECT 9, 'z', 'd9'")
        assert rows(spark.table("t")) == [(9, "z", "d9")]
        spark.sql("CREATE TABLE c USING sleeper AS SELECT id, v FROM t")
        spark.sql("CREATE OR REPLACE TABLE c USING sleeper AS SELECT id, v FROM t UNION ALL SELECT 10, 'y'")
        assert rows(spark.table("c")) == scanned(session_catalog, f"{db}.c") == [(9, "z"), (10, "y")]
        spark.createDataFrame([(1, "w")], "id long, v string").writeTo("w").using("sleeper").create()
        spark.createDataFrame([(2, "w")], "id long, v string").writeTo("w").append()
        assert rows(spark.table("w")) == scanned(session_catalog, f"{db}.w") == [(1, "w"), (2, "w")]
    finally:
        spark.sql("USE default")


def test_describe_and_show_tables_show_a_sleeper_table_beside_a_parquet_one(
        spark: SparkSession, session_catalog: ss.Catalog, db: str) -> None:
    spark.sql(f"CREATE TABLE {db}.s (id BIGINT, day STRING) USING sleeper PARTITIONED BY (day)")
    spark.sql(f"CREATE TABLE {db}.p USING parquet AS SELECT 1L AS id")
    spark.sql(f"INSERT INTO {db}.p VALUES (2)")

    assert tables_in(spark, db) == ["p", "s"]
    described = {r.col_name: r.data_type for r in spark.sql(f"DESCRIBE TABLE EXTENDED {db}.s").collect()}
    assert described["Provider"] == "sleeper"
    assert described["Location"].rstrip("/").endswith(f"{db}.s")
    assert {r.col_name: r.data_type for r in spark.sql(f"DESCRIBE TABLE EXTENDED {db}.p").collect()}["Provider"] \
        == "parquet"
    # The parquet table is Spark's own, read and written as without the sleeper catalog
    assert rows(spark.table(f"{db}.p")) == [(1,), (2,)]
    assert session_catalog.tables() == [f"{db}.s"]
    # The metastore entry has the columns and partitioning of the sleeper table
    entry = metastore_entry(spark, db, "s")
    assert entry.provider().get() == "sleeper"
    assert [f.name() for f in entry.schema().fields()] == ["id", "day"]
    assert list(spark._jvm.scala.jdk.javaapi.CollectionConverters.asJava(entry.partitionColumnNames())) == ["day"]


def test_alter_table_changes_the_log_and_the_metastore_entry(spark: SparkSession, session_catalog: ss.Catalog,
                                                             db: str) -> None:
    spark.sql(f"CREATE TABLE {db}.a (id BIGINT) USING sleeper")
    spark.sql(f"ALTER TABLE {db}.a ADD COLUMNS (n INT)")

    assert session_catalog.table(f"{db}.a").schema.names == ["id", "n"]
    assert spark.table(f"{db}.a").columns == ["id", "n"]
    entry = metastore_entry(spark, db, "a")
    assert [f.name() for f in entry.schema().fields()] == ["id", "n"]


def test_a_schema_changed_through_the_python_api_reaches_the_metastore_entry_at_the_next_load(
        spark: SparkSession, session_catalog: ss.Catalog, db: str) -> None:
    spark.sql(f"CREATE TABLE {db}.evolved (id BIGINT, day STRING) USING sleeper PARTITIONED BY (day)")
    # Given columns added and dropped where no session catalog sees it
    table = session_catalog.table(f"{db}.evolved")
    table.add_columns([pa.field("amount", pa.float64())])
    table.drop_column("id")
    assert [f.name() for f in metastore_entry(spark, db, "evolved").schema().fields()] == ["id", "day"]  # stale

    # Then a read returns the log's columns, and its load brings the entry up to them (partition columns last)
    assert spark.table(f"{db}.evolved").columns == ["day", "amount"]
    assert [f.name() for f in metastore_entry(spark, db, "evolved").schema().fields()] == ["amount", "day"]


def test_drop_table_drops_the_sleeper_table_and_purge_its_files(spark: SparkSession, session_catalog: ss.Catalog,
                                                                db: str) -> None:
    events(spark, range(2)).write.format("sleeper").saveAsTable(f"{db}.kept")
    events(spark, range(2)).write.format("sleeper").saveAsTable(f"{db}.purged")
    kept_root = session_catalog.table(f"{db}.kept").root

    spark.sql(f"DROP TABLE {db}.kept")
    spark.sql(f"DROP TABLE {db}.purged PURGE")

    assert session_catalog.tables() == []
    assert tables_in(spark, db) == []
    store = session_catalog.backend.store
    assert any(i.key.endswith(".parquet") for i in store.list(f"{kept_root}/"))  # DROP keeps data files
    assert list(store.list(f"{db}.purged/")) == []


def test_create_table_with_location_registers_an_existing_table_with_its_history(
        spark: SparkSession, session_catalog: ss.Catalog, db: str) -> None:
    name = f"{db}.old"
    table = session_catalog.create_table(name, pa.schema([("id", pa.int64())]))
    table.write(pa.table({"id": [1, 2]}))
    table.write(pa.table({"id": [3]}))

    spark.sql(f"CREATE TABLE {name} USING sleeper LOCATION '{table.location}'")

    assert rows(spark.table(name)) == [(1,), (2,), (3,)]
    assert rows(spark.sql(f"SELECT * FROM {name} VERSION AS OF 2")) == [(1,), (2,)]
    assert len(table.history()) == 2  # registering committed nothing


def test_create_table_without_columns_registers_the_sleeper_table_of_that_name(
        spark: SparkSession, session_catalog: ss.Catalog, db: str) -> None:
    session_catalog.create_table(f"{db}.made", pa.schema([("id", pa.int64())])).write(pa.table({"id": [7]}))

    spark.sql(f"CREATE TABLE {db}.made USING sleeper")

    assert rows(spark.table(f"{db}.made")) == [(7,)]


def test_a_location_that_is_not_a_sleeper_table_is_refused_and_registers_nothing(
        spark: SparkSession, session_catalog: ss.Catalog, db: str, tmp_path: Path) -> None:
    other = session_catalog.create_table(f"{db}.other", pa.schema([("id", pa.int64())]))
    plain = tmp_path / "plain"
    spark.range(3).write.parquet(str(plain))

    with pytest.raises(Exception, match=r"TableNotFoundError: LOCATION .* is not the root of a table"):
        spark.sql(f"CREATE TABLE {db}.nothing USING sleeper LOCATION '{plain}'")
    with pytest.raises(Exception, match=rf"ConfigError: LOCATION .* is the root of the sleeper table '{db}.other'"):
        spark.sql(f"CREATE TABLE {db}.renamed USING sleeper LOCATION '{other.location}'")

    assert tables_in(spark, db) == []
    assert session_catalog.tables() == [f"{db}.other"]


def test_an_entry_whose_table_is_gone_is_a_clear_error_and_drop_table_removes_it(
        spark: SparkSession, session_catalog: ss.Catalog, db: str) -> None:
    events(spark, range(2)).write.format("sleeper").saveAsTable(f"{db}.gone")
    session_catalog.drop_table(f"{db}.gone")  # behind the metastore's back

    with pytest.raises(Exception, match=r"TableNotFoundError: the metastore's entry .*DROP TABLE"):
        spark.table(f"{db}.gone").collect()
    spark.sql(f"DROP TABLE {db}.gone")
    assert tables_in(spark, db) == []


def test_a_failed_save_as_table_leaves_no_table_and_no_entry(spark: SparkSession, session_catalog: ss.Catalog,
                                                            db: str) -> None:
    failing = spark.range(5).selectExpr("id", "IF(id = 3, raise_error('boom'), 'x') AS v")

    with pytest.raises(Exception, match="boom"):
        failing.write.format("sleeper").saveAsTable(f"{db}.failed")

    assert session_catalog.tables() == []
    assert tables_in(spark, db) == []


def test_without_the_session_catalog_save_as_table_names_the_setting_and_records_nothing(
        spark: SparkSession) -> None:
    name = f"plain_{uuid.uuid4().hex[:8]}"

    with pytest.raises(Exception, match=r"ConfigError: .*spark\.sql\.catalog\.spark_catalog="
                                        r"sleeper\.spark\.SleeperSessionCatalog"):
        spark.range(2).write.format("sleeper").saveAsTable(name)

    assert name not in tables_in(spark)


QUERIES = [
    "SELECT * FROM {t}",
    "SELECT id, v FROM {t} WHERE day = 'd2'",
    "SELECT day, count(*), sum(id) FROM {t} GROUP BY day",
    "SELECT * FROM {t} WHERE id BETWEEN 5 AND 40 AND v IS NOT NULL",
    "SELECT * FROM {t} WHERE v IS NULL",
]


def test_every_query_on_a_sleeper_table_answers_as_on_a_parquet_copy(spark: SparkSession, session_catalog: ss.Catalog,
                                                                    db: str) -> None:
    source = spark.createDataFrame([(i, None if i % 7 == 0 else f"v{i}", f"d{i % 3}") for i in range(60)],
                                   "id long, v string, day string")
    source.write.format("sleeper").partitionBy("day").saveAsTable(f"{db}.s")
    source.where("id >= 50").write.format("sleeper").mode("append").saveAsTable(f"{db}.s")
    source.write.format("parquet").partitionBy("day").saveAsTable(f"{db}.p")
    source.where("id >= 50").write.format("parquet").partitionBy("day").mode("append").saveAsTable(f"{db}.p")

    for query in QUERIES:
        assert rows(spark.sql(query.format(t=f"{db}.s"))) == rows(spark.sql(query.format(t=f"{db}.p"))), query
    assert rows(spark.table(f"{db}.s")) == scanned(session_catalog, f"{db}.s")

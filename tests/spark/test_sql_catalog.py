"""The SQL catalog (``sleeper.spark.SleeperCatalog``): named tables in Spark SQL and in
Spark's table APIs, over the same tables, log and commits as the Python API.

Each statement's result is compared with the rows the Python API gives for the same table, and
claims about how a statement ran (Spark's own Parquet scan, pruning by partition) are checked on
the plan, not assumed.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from chispa import assert_df_equality
from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

import sleeper_spark as ss
from sleeper_spark.spark.common.jvm import catalog_conf
from tests.fixtures import catalogs
from tests.fixtures.sql_catalog import RecordingBuilder, session_conf

pytestmark = pytest.mark.spark

ORDERS = "CREATE TABLE lake.sales.orders (id BIGINT, day STRING, amount DOUBLE) USING sleeper PARTITIONED BY (day)"


def test_configure_spark_writes_the_catalog_class_and_every_option(catalog: ss.Catalog) -> None:
    # Given a builder that records its settings, When the catalog is configured under the name lake
    conf = ss.configure_spark(RecordingBuilder(), catalogs={"lake": catalog})._options

    # Then the catalog class and each of catalog.options() are set under spark.sql.catalog.lake
    assert conf["spark.sql.catalog.lake"] == "sleeper.spark.SleeperCatalog"
    for key, value in catalog.options().items():
        assert conf[f"spark.sql.catalog.lake.{key}"] == value


def test_create_table_makes_the_python_api_table_of_the_prefixed_name(spark: SparkSession, lake: ss.Catalog) -> None:
    # When a table is created in the namespace sales
    spark.sql(ORDERS)

    # Then the Python API sees the table sales.orders, partitioned and typed as declared
    table = lake.table("sales.orders")
    assert table.partition_by == ("day",)
    assert table.schema.field("id").type == pa.int64()
    assert table.schema.field("amount").type == pa.float64()


def test_insert_and_select_round_trip_against_the_python_api(spark: SparkSession, lake: ss.Catalog) -> None:
    # Given a table written by two INSERT statements
    spark.sql(ORDERS)
    spark.sql("INSERT INTO lake.sales.orders VALUES (1, '2024-01-01', 1.5), (2, '2024-01-02', 2.5)")
    spark.sql("INSERT INTO lake.sales.orders VALUES (3, '2024-01-01', 3.5)")

    # When it is read with SQL and with spark.table
    by_sql = spark.sql("SELECT * FROM lake.sales.orders")
    by_name = spark.table("lake.sales.orders")

    # Then both give the rows the Python API reads, and each INSERT was one snapshot
    expected = spark.createDataFrame(lake.table("sales.orders").scan().to_pylist(), by_sql.schema)
    assert_df_equality(by_sql, expected, ignore_row_order=True, ignore_nullable=True)
    assert_df_equality(by_name, expected, ignore_row_order=True, ignore_nullable=True)
    assert [s.operation for s in lake.table("sales.orders").history()] == ["append", "append"]


def test_a_select_is_sparks_parquet_scan_pruned_by_partition(spark: SparkSession, lake: ss.Catalog) -> None:
    # Given a table with two partitions
    spark.sql(ORDERS)
    spark.sql("INSERT INTO lake.sales.orders VALUES (1, '2024-01-01', 1.5), (2, '2024-01-02', 2.5)")

    # When a query filters on the partition column
    query = spark.sql("SELECT sum(amount) AS total FROM lake.sales.orders WHERE day = '2024-01-02'")
    plan = query._jdf.queryExecution().executedPlan().toString()

    # Then Spark's own file source scan reads the table's file index (as format("sleeper") does),
    # the filter is a partition filter, and the answer is that partition's
    assert "FileScan parquet" in plan and "SleeperFileIndex" in plan
    assert "PartitionFilters: [isnotnull(day" in plan
    assert query.collect()[0]["total"] == 2.5

    # And with the file source scan switched off, Spark's V2 Parquet scan prunes the same way
    spark.conf.set("spark.sleeper_spark.catalog.fileSourceScan", "false")
    try:
        query = spark.sql("SELECT sum(amount) AS total FROM lake.sales.orders WHERE day = '2024-01-02'")
        plan = query._jdf.queryExecution().executedPlan().toString()
        assert "ParquetScan" in plan and "CatalogFileIndex" in plan
        assert "PartitionFilters: [isnotnull(day" in plan
        assert query.collect()[0]["total"] == 2.5
    finally:
        spark.conf.unset("spark.sleeper_spark.catalog.fileSourceScan")


def test_a_dataframe_over_a_table_reads_the_version_current_at_each_action(spark: SparkSession,
                                                                           lake: ss.Catalog) -> None:
    # Given a DataFrame over a table with one row
    spark.sql(ORDERS)
    spark.sql("INSERT INTO lake.sales.orders VALUES (1, '2024-01-01', 1.5)")
    orders = spark.table("lake.sales.orders")
    assert orders.count() == 1

    # When a row is inserted after the DataFrame was made
    spark.sql("INSERT INTO lake.sales.orders VALUES (2, '2024-01-02', 2.5)")

    # Then the DataFrame's next action reads the new version
    assert sorted(r["id"] for r in orders.collect()) == [1, 2]


def test_a_cached_table_is_refreshed_by_a_write_to_it(spark: SparkSession, lake: ss.Catalog) -> None:
    # Given a table whose read Spark has cached
    spark.sql(ORDERS)
    spark.sql("INSERT INTO lake.sales.orders VALUES (1, '2024-01-01', 1.5)")
    spark.sql("CACHE TABLE lake.sales.orders")
    try:
        assert spark.table("lake.sales.orders").count() == 1

        # When a row is inserted through the catalog
        spark.sql("INSERT INTO lake.sales.orders VALUES (2, '2024-01-02', 2.5)")

        # Then the cached read holds it, and queries use the cache
        query = spark.sql("SELECT id FROM lake.sales.orders")
        assert "InMemoryRelation" in query._jdf.queryExecution().executedPlan().toString()
        assert sorted(r["id"] for r in query.collect()) == [1, 2]
    finally:
        spark.sql("UNCACHE TABLE IF EXISTS lake.sales.orders")


def test_time_travel_by_version_and_by_option(spark: SparkSession, lake: ss.Catalog) -> None:
    # Given a table with two versions
    spark.sql(ORDERS)
    spark.sql("INSERT INTO lake.sales.orders VALUES (1, '2024-01-01', 1.5)")
    spark.sql("INSERT INTO lake.sales.orders VALUES (2, '2024-01-02', 2.5)")
    first = lake.table("sales.orders").history()[0].version

    # When the first version is read with VERSION AS OF and with the versionAsOf option
    by_sql = spark.sql(f"SELECT id FROM lake.sales.orders VERSION AS OF {first}").collect()
    by_option = spark.read.option("versionAsOf", first).table("lake.sales.orders").collect()

    # Then each sees only that version's row
    assert [r["id"] for r in by_sql] == [1]
    assert [r["id"] for r in by_option] == [1]


def test_a_version_that_does_not_exist_is_the_typed_error(spark: SparkSession, lake: ss.Catalog) -> None:
    spark.sql(ORDERS)
    with pytest.raises(Exception) as raised:
        spark.sql("SELECT * FROM lake.sales.orders VERSION AS OF 99").collect()
    assert isinstance(ss.sleeper_error(raised.value), ss.SnapshotNotFoundError)


def test_an_unknown_table_is_sparks_table_or_view_not_found(spark: SparkSession, lake: ss.Catalog) -> None:
    with pytest.raises(AnalysisException) as raised:
        spark.sql("SELECT * FROM lake.sales.nope")
    assert raised.value.getCondition() == "TABLE_OR_VIEW_NOT_FOUND"
    assert "`lake`.`sales`.`nope`" in str(raised.value)


def test_insert_overwrite_replaces_the_table_in_one_snapshot(spark: SparkSession, lake: ss.Catalog) -> None:
    # Given a table with rows in two partitions
    spark.sql(ORDERS)
    spark.sql("INSERT INTO lake.sales.orders VALUES (1, '2024-01-01', 1.5), (2, '2024-01-02', 2.5)")

    # When it is overwritten
    spark.sql("INSERT OVERWRITE lake.sales.orders SELECT 9, '2024-02-02', 9.0")

    # Then only the new row is left, committed as an overwrite
    assert lake.table("sales.orders").scan().to_pylist() == [{"id": 9, "day": "2024-02-02", "amount": 9.0}]
    assert lake.table("sales.orders").latest().operation == "overwrite"


def test_write_to_appends_and_creates(spark: SparkSession, lake: ss.Catalog) -> None:
    from pyspark.sql.functions import col

    # When a DataFrame creates a table and another appends to it
    rows = spark.range(3).selectExpr("id", "'d' AS day")
    rows.writeTo("lake.db.events").partitionedBy(col("day")).create()
    rows.writeTo("lake.db.events").append()

    # Then the table is partitioned as asked and holds both writes
    table = lake.table("db.events")
    assert table.partition_by == ("day",)
    assert sorted(r["id"] for r in table.scan().to_pylist()) == [0, 0, 1, 1, 2, 2]


def test_create_table_as_select(spark: SparkSession, lake: ss.Catalog) -> None:
    spark.sql("CREATE TABLE lake.db.c USING sleeper PARTITIONED BY (day) AS SELECT 1L AS id, 'x' AS day")
    assert lake.table("db.c").scan().to_pylist() == [{"id": 1, "day": "x"}]
    assert lake.table("db.c").partition_by == ("day",)


def test_a_time_travelled_table_cannot_be_written(spark: SparkSession, lake: ss.Catalog) -> None:
    # Given a table with one version
    spark.sql(ORDERS)
    spark.sql("INSERT INTO lake.sales.orders VALUES (1, '2024-01-01', 1.5)")
    version = lake.table("sales.orders").latest().version

    # When a write names that version, Then Spark refuses it and nothing is committed
    with pytest.raises(AnalysisException):
        spark.range(1).selectExpr("id", "'x' AS day", "0.0 AS amount").write.option("versionAsOf", version) \
            .insertInto("lake.sales.orders")
    assert lake.table("sales.orders").latest().version == version


def test_tables_and_namespaces_follow_the_names(spark: SparkSession, lake: ss.Catalog) -> None:
    # Given tables in a namespace, in a nested one and outside any, and an empty created namespace
    schema = pa.schema([("id", pa.int64())])
    for name in ("sales.orders", "sales.eu.orders", "top"):
        lake.create_table(name, schema)
    lake.create_namespace("empty")

    # Then SHOW TABLES and SHOW NAMESPACES list them by prefix, and the created one too
    assert [r["tableName"] for r in spark.sql("SHOW TABLES IN lake.sales").collect()] == ["orders"]
    assert [r["tableName"] for r in spark.sql("SHOW TABLES IN lake.sales.eu").collect()] == ["orders"]
    assert spark.sql("SHOW TABLES IN lake.empty").collect() == []
    assert [r["namespace"] for r in spark.sql("SHOW NAMESPACES IN lake").collect()] == ["empty", "sales"]
    assert [r["namespace"] for r in spark.sql("SHOW NAMESPACES IN lake.sales").collect()] == ["sales.eu"]


def test_create_namespace_on_a_new_warehouse_records_and_describes_it(spark: SparkSession, lake: ss.Catalog) -> None:
    # Given a catalog whose warehouse does not exist yet
    assert not lake.backend.store.root_exists()

    # When a namespace, and one nested in it, are created before any table
    spark.sql("CREATE NAMESPACE lake.sales COMMENT 'Orders' WITH DBPROPERTIES ('tier' = 'gold')")
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.sales.eu")

    # Then Spark lists and describes them, with the comment and properties the Python API reads
    assert [r["namespace"] for r in spark.sql("SHOW NAMESPACES IN lake").collect()] == ["sales"]
    assert [r["namespace"] for r in spark.sql("SHOW NAMESPACES IN lake.sales").collect()] == ["sales.eu"]
    described = {r["info_name"]: r["info_value"]
                 for r in spark.sql("DESCRIBE NAMESPACE EXTENDED lake.sales").collect()}
    assert (described["Comment"], described["Properties"]) == ("Orders", "((tier,gold))")
    sales = lake.namespace("sales")
    assert sales.recorded and sales.comment == "Orders" and sales.properties["tier"] == "gold"
    assert "comment" not in sales.properties and lake.tables() == []

    # And creating it again is Spark's SCHEMA_ALREADY_EXISTS
    with pytest.raises(AnalysisException) as raised:
        spark.sql("CREATE NAMESPACE lake.sales")
    assert raised.value.getCondition() == "SCHEMA_ALREADY_EXISTS"


def test_alter_namespace_and_comment_on_namespace_change_its_record(spark: SparkSession, lake: ss.Catalog) -> None:
    # Given a namespace with a comment and a property
    lake.create_namespace("sales", comment="Orders", properties={"tier": "gold"})

    # When a property is set, one unset and the comment replaced
    spark.sql("ALTER NAMESPACE lake.sales SET DBPROPERTIES ('retention' = '7d')")
    spark.sql("ALTER NAMESPACE lake.sales UNSET DBPROPERTIES ('tier')")
    spark.sql("COMMENT ON NAMESPACE lake.sales IS 'All orders'")

    # Then the record holds them; COMMENT ... IS NULL removes the comment
    sales = lake.namespace("sales")
    assert (sales.comment, sales.properties) == ("All orders", {"retention": "7d"})
    spark.sql("COMMENT ON NAMESPACE lake.sales IS NULL")
    assert lake.namespace("sales").comment is None

    # And a location, which a sleeper namespace does not have, is refused with the typed error
    with pytest.raises(Exception, match="no location of its own") as raised:
        spark.sql("ALTER NAMESPACE lake.sales SET LOCATION '/elsewhere'")
    assert isinstance(ss.sleeper_error(raised.value), ss.ConfigError)


def test_drop_namespace_is_refused_while_it_holds_tables_unless_cascade(spark: SparkSession, lake: ss.Catalog) -> None:
    # Given a namespace holding a table, one holding a created namespace, and an empty one
    lake.create_table("db.a", pa.schema([("id", pa.int64())]))
    spark.sql("CREATE NAMESPACE lake.web")
    spark.sql("CREATE NAMESPACE lake.web.eu")
    spark.sql("CREATE NAMESPACE lake.empty")

    # When each is dropped without CASCADE, Then the empty one goes and the others are refused
    spark.sql("DROP NAMESPACE lake.empty")
    for name in ("db", "web"):
        with pytest.raises(AnalysisException) as raised:
            spark.sql(f"DROP NAMESPACE lake.{name}")
        assert raised.value.getCondition() == "SCHEMA_NOT_EMPTY"
    assert lake.tables() == ["db.a"] and lake.namespaces() == ["db", "web"]

    # And with CASCADE their tables and namespaces go with them
    spark.sql("DROP NAMESPACE lake.db CASCADE")
    spark.sql("DROP NAMESPACE lake.web CASCADE")
    assert lake.tables() == [] and lake.namespaces() == []


def test_drop_table_removes_it_from_the_catalog(spark: SparkSession, lake: ss.Catalog) -> None:
    spark.sql(ORDERS)
    spark.sql("DROP TABLE lake.sales.orders")
    assert lake.tables() == []
    spark.sql("DROP TABLE IF EXISTS lake.sales.orders")  # nothing left to drop: no error


def test_describe_names_the_partitioning_and_the_provider(spark: SparkSession, lake: ss.Catalog) -> None:
    spark.sql(ORDERS)
    rows = {r["col_name"]: r["data_type"] for r in spark.sql("DESCRIBE TABLE EXTENDED lake.sales.orders").collect()}
    assert rows["Provider"] == "sleeper"
    assert "sales.orders" in rows["Location"]


def test_time_travel_by_timestamp(spark: SparkSession, lake: ss.Catalog) -> None:
    # Given a table with two versions
    spark.sql(ORDERS)
    spark.sql("INSERT INTO lake.sales.orders VALUES (1, '2024-01-01', 1.5)")
    first = lake.table("sales.orders").latest()
    spark.sql("INSERT INTO lake.sales.orders VALUES (2, '2024-01-02', 2.5)")

    # When it is read as of the first version's commit time
    at = first.committed_at.strftime("%Y-%m-%d %H:%M:%S.%f")
    rows = spark.sql(f"SELECT id FROM lake.sales.orders TIMESTAMP AS OF '{at}'").collect()

    # Then it sees that version
    assert [r["id"] for r in rows] == [1]


def test_two_catalogs_side_by_side_and_a_default_one(spark: SparkSession, lake: ss.Catalog,
                                                      tmp_path: Path) -> None:
    # Given a second catalog configured next to lake, and lake made the default catalog
    other = ss.Catalog.local(str(tmp_path / "other"))
    other.create_table("db.t", pa.schema([("id", pa.int64())])).write(pa.table({"id": [7]}))
    lake.create_table("db.t", pa.schema([("id", pa.int64())])).write(pa.table({"id": [1]}))
    with session_conf(spark, {**catalog_conf("lake", lake), **catalog_conf("other", other),
                              "spark.sql.defaultCatalog": "lake"}):
        # When each is read by its name, and the default one without a catalog name
        both = spark.sql("SELECT l.id AS mine, o.id AS theirs FROM lake.db.t l CROSS JOIN other.db.t o").collect()
        unqualified = spark.sql("SELECT id FROM db.t").collect()

    # Then each name reaches its own warehouse
    assert [(r["mine"], r["theirs"]) for r in both] == [(1, 7)]
    assert [r["id"] for r in unqualified] == [1]


@pytest.mark.integration
def test_ddl_and_dml_on_dynamodb_and_s3(spark: SparkSession, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    # Given a catalog on DynamoDB Local + SeaweedFS (which this session's Hadoop cannot open, so
    # reads and writes take the Python data source) as the Spark catalog lake
    aws = catalogs.make_catalog("aws", request, tmp_path)
    with session_conf(spark, catalog_conf("lake", aws)):
        # When a table is created, inserted into, appended to, changed, overwritten, read and dropped with SQL
        spark.sql(ORDERS)
        spark.sql("INSERT INTO lake.sales.orders VALUES (1, '2024-01-01', 1.5), (2, '2024-01-02', 2.5)")
        spark.range(3, 5).selectExpr("id", "'2024-01-03' AS day", "0.5 AS amount").writeTo("lake.sales.orders").append()
        appended = sorted(r["id"] for r in spark.sql("SELECT id FROM lake.sales.orders").collect())
        first = aws.table("sales.orders").history()[0].version
        old = spark.sql(f"SELECT id FROM lake.sales.orders VERSION AS OF {first}").collect()
        # ... changed row by row, and partition by partition ...
        spark.sql("MERGE INTO lake.sales.orders t USING (SELECT 2L AS id, '2024-01-02' AS day, 20.0D AS amount "
                  "UNION ALL SELECT 5L, '2024-01-03', 5.0D) s ON t.id = s.id "
                  "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
        spark.sql("UPDATE lake.sales.orders SET amount = amount * 2 WHERE id = 1")
        spark.sql("DELETE FROM lake.sales.orders WHERE day = '2024-01-03'")
        spark.sql("INSERT OVERWRITE lake.sales.orders PARTITION (day = '2024-01-01') SELECT 7L, 7.0D")
        changed = sorted((r["id"], r["amount"]) for r in spark.table("lake.sales.orders").collect())
        spark.sql("INSERT OVERWRITE lake.sales.orders SELECT 9, '2024-02-02', 9.0")
        overwritten = spark.table("lake.sales.orders").collect()
        operations = [s.operation for s in aws.table("sales.orders").history()]
        spark.sql("DROP TABLE lake.sales.orders")

    # Then each statement did what it does on the local disk
    assert appended == [1, 2, 3, 4]
    assert sorted(r["id"] for r in old) == [1, 2]
    assert changed == [(2, 20.0), (7, 7.0)]
    assert [(r["id"], r["day"]) for r in overwritten] == [(9, "2024-02-02")]
    assert operations == ["append", "append", "merge", "update", "delete", "overwrite", "overwrite"]
    assert aws.tables() == []


def test_alter_table_adds_widens_and_drops_columns_and_sets_properties(spark: SparkSession, lake: ss.Catalog) -> None:
    # Given a table with a row
    spark.sql("CREATE TABLE lake.db.t (id INT, name STRING) USING sleeper")
    spark.sql("INSERT INTO lake.db.t VALUES (1, 'a')")

    # When columns are added, widened and dropped and properties set and unset with SQL
    spark.sql("ALTER TABLE lake.db.t ADD COLUMNS (score DOUBLE, note STRING)")
    spark.sql("ALTER TABLE lake.db.t ALTER COLUMN id TYPE BIGINT")
    spark.sql("ALTER TABLE lake.db.t DROP COLUMN note")
    spark.sql("ALTER TABLE lake.db.t SET TBLPROPERTIES ('team' = 'sales', 'tier' = 'gold')")
    spark.sql("ALTER TABLE lake.db.t UNSET TBLPROPERTIES ('tier')")

    # Then the Python API sees the new schema, the old row reads with nulls, and the properties are the table's
    table = lake.table("db.t")
    assert table.schema.names == ["id", "name", "score"]
    assert table.schema.field("id").type == pa.int64()
    assert table.scan().to_pylist() == [{"id": 1, "name": "a", "score": None}]
    assert table.state().properties.get("team") == "sales" and "tier" not in table.state().properties
    shown = {r["key"]: r["value"] for r in spark.sql("SHOW TBLPROPERTIES lake.db.t").collect()}
    assert shown["team"] == "sales"
    assert [s.operation for s in table.history()] == ["append", "schema", "schema", "schema", "properties",
                                                      "properties"]


def test_alter_column_type_takes_exactly_the_widenings_of_widen_column(spark: SparkSession, lake: ss.Catalog) -> None:
    # Given a table with an int column
    spark.sql("CREATE TABLE lake.db.t (id INT) USING sleeper")
    before = lake.table("db.t").head.catch_up().version

    # When it is narrowed, Then Spark refuses it itself
    with pytest.raises(AnalysisException) as narrowing:
        spark.sql("ALTER TABLE lake.db.t ALTER COLUMN id TYPE SMALLINT")
    assert narrowing.value.getCondition() == "NOT_SUPPORTED_CHANGE_COLUMN"

    # When it is changed to double (an up-cast for Spark, not a widening for sleeper tables),
    # Then the table's rule refuses it, naming it, and nothing is committed
    with pytest.raises(Exception) as to_double:
        spark.sql("ALTER TABLE lake.db.t ALTER COLUMN id TYPE DOUBLE")
    assert isinstance(ss.sleeper_error(to_double.value), ss.SchemaMismatchError)
    assert lake.table("db.t").head.catch_up().version == before
    assert lake.table("db.t").schema.field("id").type == pa.int32()


def test_alter_table_rename_column_is_refused_with_what_to_do(spark: SparkSession, lake: ss.Catalog) -> None:
    spark.sql("CREATE TABLE lake.db.t (id BIGINT) USING sleeper")
    with pytest.raises(Exception) as raised:
        spark.sql("ALTER TABLE lake.db.t RENAME COLUMN id TO key")
    assert isinstance(ss.sleeper_error(raised.value), ss.ConfigError)
    assert "ADD COLUMNS" in str(raised.value)
    assert lake.table("db.t").schema.names == ["id"]


def test_history_and_files_metadata_tables_with_time_travel(spark: SparkSession, lake: ss.Catalog) -> None:
    # Given a table with two appends
    spark.sql(ORDERS)
    spark.sql("INSERT INTO lake.sales.orders VALUES (1, '2024-01-01', 1.5), (2, '2024-01-02', 2.5)")
    spark.sql("INSERT INTO lake.sales.orders VALUES (3, '2024-01-01', 3.5)")
    table = lake.table("sales.orders")
    first = table.history()[0].version

    # When its history and files are read with SQL, now and as of the first version
    history = spark.sql("SELECT version, operation, rows_added, metadata FROM lake.sales.orders.history "
                        "ORDER BY version").collect()
    files = spark.sql("SELECT path, partition, row_count, size_bytes, checksum, column_stats['id'] AS id "
                      "FROM lake.sales.orders.files").collect()
    old_files = spark.sql(f"SELECT path FROM lake.sales.orders.files VERSION AS OF {first}").collect()

    # Then they hold what the Python API gives
    assert [(r["version"], r["operation"], r["rows_added"]) for r in history] == \
        [(s.version, s.operation, s.rows_added) for s in table.history()]
    assert {r["path"]: (r["partition"], r["row_count"], r["size_bytes"], r["checksum"]) for r in files} == \
        {f.path: (f.partition, f.row_count, f.size_bytes, f.checksum) for f in table.files()}
    by_path = {f.path: f for f in table.files()}
    for r in files:
        stats = by_path[r["path"]].column_stats["id"]
        assert (r["id"]["min"], r["id"]["max"], r["id"]["null_count"]) == (str(stats.min), str(stats.max),
                                                                           stats.null_count)
    assert {r["path"] for r in old_files} == {f.path for f in table.files(first)}


def test_call_procedures_run_the_table_operations(spark: SparkSession, lake: ss.Catalog) -> None:
    # Given a table written in three small appends
    spark.sql(ORDERS)
    for i in range(3):
        spark.sql(f"INSERT INTO lake.sales.orders VALUES ({i}, '2024-01-01', 1.0)")
    table = lake.table("sales.orders")
    first = table.history()[0].version

    # When it is compacted, verified, snapshotted, vacuumed (dry run) and restored through CALL
    compacted = spark.sql("CALL lake.system.compact(table => 'sales.orders')").collect()
    verified = spark.sql("CALL lake.system.verify(table => 'sales.orders')").collect()
    captured = spark.sql("CALL lake.system.create_state_snapshot(table => 'sales.orders')").collect()
    vacuumed = spark.sql("CALL lake.system.vacuum(table => 'sales.orders', dry_run => true)").collect()
    restored = spark.sql(f"CALL lake.system.restore(table => 'sales.orders', version => {first})").collect()

    # Then each did what the Python API does, and answered a row saying so
    history = table.history()
    compaction = next(s for s in history if s.operation == "compact")
    assert (compacted[0]["version"], compacted[0]["files_removed"]) == (compaction.version, 3)
    assert verified[0]["problem"] is None and verified[0]["files_checked"] == 1
    assert captured[0]["transaction"] == compaction.version
    assert vacuumed[0]["dry_run"] is True
    assert (restored[0]["version"], restored[0]["operation"]) == (history[-1].version, "restore")
    assert sorted(r["id"] for r in table.scan().to_pylist()) == [0]


def test_call_truncate_log_answers_what_the_python_api_reports(spark: SparkSession, lake: ss.Catalog) -> None:
    spark.sql(ORDERS)
    spark.sql("INSERT INTO lake.sales.orders VALUES (1, '2024-01-01', 1.0)")
    table = lake.table("sales.orders")
    table.create_state_snapshot()

    answer = spark.sql("CALL lake.system.truncate_log(table => 'sales.orders', keep_version => 2, "
                       "safety_margin => 0, dry_run => true)").collect()

    expected = table.truncate_log(2, 0, dry_run=True)
    assert answer[0].asDict() == expected.model_dump()
    with pytest.raises(Exception) as raised:
        spark.sql("CALL lake.system.truncate_log(table => 'sales.orders', keep_hours => 1, keep_version => 2)")
    assert isinstance(ss.sleeper_error(raised.value), ss.ConfigError)


def test_call_an_unknown_procedure_is_sparks_failed_to_load_routine(spark: SparkSession, lake: ss.Catalog) -> None:
    with pytest.raises(AnalysisException) as raised:
        spark.sql("CALL lake.system.optimize(table => 'x')")
    assert raised.value.getCondition() == "FAILED_TO_LOAD_ROUTINE"
    assert "`lake`.`system`.`optimize`" in str(raised.value)


def test_a_failed_create_table_as_select_leaves_no_table(spark: SparkSession, lake: ss.Catalog) -> None:
    # When the query of a CREATE TABLE AS SELECT fails while its rows are written
    with pytest.raises(Exception, match="boom"):
        spark.sql("CREATE TABLE lake.db.c USING sleeper AS "
                  "SELECT id, IF(id = 3, raise_error('boom'), 'x') AS day FROM range(5)")

    # Then no table is left behind (the table made for the rows is dropped again)
    assert lake.tables() == []

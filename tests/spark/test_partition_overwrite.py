"""Overwrites of part of a table: partitionOverwriteMode=dynamic and replaceWhere, checked against
the rows a plain Python computation expects, through format("sleeper") and t.write."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import sleeper_spark as ss
from sleeper_spark.spark.common.jvm import NATIVE_CONF
from tests.spark.conftest import CatalogFactory, data_files

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("day", pa.string()), ("id", pa.int64()), ("v", pa.string())])
OLD = [(day, i, "old") for day in ("d1", "d2", "d3") for i in range(3)]
OPTION_NAMES = {"replace_where": "replaceWhere", "partition_overwrite_mode": "partitionOverwriteMode"}
Row = tuple[str, int, str]
Write = Callable[[list[Row], dict[str, str]], ss.Snapshot]


def arrow(rows: list[Row]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, r, strict=True)) for r in rows], SCHEMA)


def rows_of(table: ss.Table) -> list[Row]:
    data = table.scan(columns=["day", "id", "v"]).to_pylist()
    return sorted((r["day"], r["id"], r["v"]) for r in data)


def kept(old: list[Row], replaced_days: set[str], new: list[Row]) -> list[Row]:
    """The truth: the old rows outside the replaced partitions, and the new ones."""
    return sorted([r for r in old if r[0] not in replaced_days] + new)


@pytest.fixture
def table(catalog: ss.Catalog) -> ss.Table:
    created = catalog.create_table("t", SCHEMA, partition_by=["day"])
    created.write(arrow(OLD))
    return created


@pytest.fixture(params=["format", "helper", "helper-python"])
def overwrite(request: pytest.FixtureRequest, spark: SparkSession, catalog: ss.Catalog, table: ss.Table,
              entry: Any) -> Iterator[Write]:
    """An overwrite of table ``t`` with rows and keyword arguments: ``format("sleeper")`` with options
    (Spark's own writer), ``t.write`` (Spark's own writer), ``t.write`` in a session without the jar."""
    route = str(request.param)

    def write(rows: list[Row], kwargs: dict[str, str]) -> ss.Snapshot:
        df = spark.createDataFrame(rows, "day string, id long, v string")
        if route != "format":
            return catalog.table("t").write(df, mode="overwrite", **kwargs)  # type: ignore[arg-type]
        options = {OPTION_NAMES[key]: value for key, value in kwargs.items()}
        try:
            df.write.format("sleeper").options(**catalog.options()).options(**options).mode("overwrite").save("t")
        except Exception as error:
            raise ss.sleeper_error(error) or error from error
        return catalog.table("t").latest()

    if route == "helper-python":
        spark.conf.set(NATIVE_CONF, "false")
    try:
        yield write
    finally:
        spark.conf.unset(NATIVE_CONF)


def test_dynamic_replaces_only_the_partitions_written_to(overwrite: Write, table: ss.Table) -> None:
    new = [("d2", 10, "new"), ("d2", 11, "new"), ("d4", 12, "new")]

    snapshot = overwrite(new, {"partition_overwrite_mode": "dynamic"})

    assert rows_of(table) == kept(OLD, {"d2"}, new)
    assert snapshot.operation == "overwrite"
    assert (snapshot.files_removed, snapshot.rows_removed) == (1, 3)
    assert snapshot.operation_metrics == {"partitions_replaced": 1}


def test_static_overwrites_the_whole_table(overwrite: Write, table: ss.Table) -> None:
    new = [("d2", 10, "new")]

    snapshot = overwrite(new, {"partition_overwrite_mode": "static"})

    assert rows_of(table) == new
    assert snapshot.files_removed == 3 and snapshot.operation_metrics == {}


def test_replace_where_replaces_the_partitions_it_holds_for(overwrite: Write, table: ss.Table) -> None:
    # d3 matches but the data has no rows there: it goes all the same.
    new = [("d2", 10, "new"), ("d2", 11, "new")]

    snapshot = overwrite(new, {"replace_where": "day >= 'd2'"})

    assert rows_of(table) == kept(OLD, {"d2", "d3"}, new)
    assert snapshot.operation_metrics == {"partitions_replaced": 2}


def test_a_row_outside_replace_where_commits_nothing(overwrite: Write, table: ss.Table,
                                                     catalog: ss.Catalog) -> None:
    before = (table.latest().version, data_files(catalog, "t"))

    with pytest.raises(ss.ConfigError, match="partition day=d1, for which replaceWhere \"day >= 'd2'\""):
        overwrite([("d2", 10, "new"), ("d1", 11, "new")], {"replace_where": "day >= 'd2'"})

    assert (catalog.table("t").latest().version, data_files(catalog, "t")) == before  # no staged file left
    assert rows_of(table) == sorted(OLD)


def test_replace_where_takes_partition_columns_only(overwrite: Write, table: ss.Table,
                                                    catalog: ss.Catalog) -> None:
    before = (table.latest().version, data_files(catalog, "t"))

    expected = r"replaceWhere takes a deterministic condition over partition columns only.*partition columns: day"
    with pytest.raises(ss.ConfigError, match=expected):
        overwrite([("d2", 10, "new")], {"replace_where": "id > 1"})

    assert (catalog.table("t").latest().version, data_files(catalog, "t")) == before


def test_the_python_source_overwrites_dynamically_and_refuses_replace_where(
        spark: SparkSession, catalog: ss.Catalog, table: ss.Table) -> None:
    new = [("d1", 30, "new")]
    df = spark.createDataFrame(new, "day string, id long, v string")

    def save(option: str, value: str) -> None:
        (df.write.format("sleeper").options(**catalog.options()).option(option, value).mode("overwrite")
         .save("t"))

    spark.conf.set(NATIVE_CONF, "false")
    try:
        save("partitionOverwriteMode", "DYNAMIC")
        with pytest.raises(Exception) as raised:
            save("replaceWhere", "day = 'd1'")
    finally:
        spark.conf.unset(NATIVE_CONF)
    assert rows_of(table) == kept(OLD, {"d1"}, new)
    typed = ss.sleeper_error(raised.value)
    assert isinstance(typed, ss.ConfigError) and "replaceWhere needs Spark's own Parquet writer" in str(typed)


def test_a_write_that_lands_first_in_a_replaced_partition_is_replaced_too(
        catalog_factory: CatalogFactory, table: ss.Table) -> None:
    stale = catalog_factory().table("t")
    stale.state()  # cached before the other writer's append
    other = [("d2", 40, "other"), ("d4", 41, "other")]
    table.write(arrow(other))
    new = [("d2", 42, "new")]

    snapshot = stale.write(arrow(new), mode="overwrite", partition_overwrite_mode="dynamic")

    # Built against the state with the other append: its d2 row goes, its d4 row stays.
    assert rows_of(table) == kept(OLD + other, {"d2"}, new)
    assert snapshot.files_removed == 2


def test_dynamic_with_arrow_data(table: ss.Table) -> None:
    new = [("d3", 20, "new"), ("d5", 21, "new")]

    snapshot = table.write(arrow(new), mode="overwrite", partition_overwrite_mode="dynamic")

    assert rows_of(table) == kept(OLD, {"d3"}, new)
    assert snapshot.operation_metrics == {"partitions_replaced": 1}
    with pytest.raises(ss.ConfigError, match=r"replace_where .* needs a Spark DataFrame"):
        table.write(pa.Table.from_pylist([], SCHEMA), mode="overwrite", replace_where="day = 'd1'")


def test_refused_combinations(table: ss.Table) -> None:
    data = pa.Table.from_pylist([], SCHEMA)
    cases = [({"mode": "overwrite", "partition_overwrite_mode": "sideways"}, "must be 'static' or 'dynamic'"),
             ({"mode": "append", "replace_where": "day = 'd1'"}, "applies to an overwrite"),
             ({"mode": "overwrite", "replace_where": "day = 'd1'", "partition_overwrite_mode": "dynamic"},
              "not both")]
    for kwargs, message in cases:
        with pytest.raises(ss.ConfigError, match=message):
            table.write(data, **kwargs)  # type: ignore[arg-type]
    assert table.latest().version == 2

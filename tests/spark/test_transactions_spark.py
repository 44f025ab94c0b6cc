"""Multi-table transactions with Spark DataFrames: Spark's own writer stages the files, one
decision commits every table; without the jar (the Python data source, which commits in a
worker of its own) a transaction refuses a DataFrame before anything is written."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import sleeper_spark as ss
from tests.transactions.checks import check_transactions_whole

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("day", pa.string()), ("id", pa.int64())])


def test_spark_dataframes_commit_in_one_transaction_or_not_at_all(io_path: str, spark: SparkSession,
                                                                 tmp_path: Path) -> None:
    catalog = ss.Catalog.local(str(tmp_path / "warehouse"))
    orders = catalog.create_table("orders", SCHEMA, partition_by=["day"])
    lines = catalog.create_table("lines", SCHEMA)
    frame = spark.createDataFrame([("d1", 1), ("d2", 2), ("d2", 3)], "day string, id long")
    if io_path == "python":
        with pytest.raises(ss.ConfigError, match="jar"), catalog.transaction() as tx:
            tx.write("orders", pa.table({"day": ["d9"], "id": [9]}))
            tx.write("lines", frame)
        assert orders.state().version == 1 and lines.state().version == 1
        assert not any(orders.store.list(f"{orders.root}/data/")), "the staged Arrow files are deleted"
        return
    with catalog.transaction() as tx:
        tx.write("orders", frame)
        tx.write("lines", frame.where("id > 1"), mode="overwrite")
        assert orders.scan().num_rows == 0
    assert sorted(orders.scan().column("id").to_pylist()) == [1, 2, 3]
    assert sorted(lines.scan().column("id").to_pylist()) == [2, 3]
    assert sorted(r.id for r in catalog.read(spark, "orders").collect()) == [1, 2, 3]
    before = {info.key for t in (orders, lines) for info in t.store.list(f"{t.root}/data/")}
    with pytest.raises(RuntimeError, match="stop"), catalog.transaction() as tx:
        tx.write("orders", frame)
        raise RuntimeError("stop")
    assert {info.key for t in (orders, lines) for info in t.store.list(f"{t.root}/data/")} == before
    assert check_transactions_whole(catalog, ["orders", "lines"]) == {"committed": 1}

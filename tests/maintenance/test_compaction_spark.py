"""Compaction with its rewrite running in Spark tasks (a local[2] session in a subprocess)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import sleeper_spark as ss
from tests.maintenance.tables import row_set, table_of_appends

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SPARK_COMPACTION = textwrap.dedent(
    """
    import json, sys
    from pyspark.sql import SparkSession
    import sleeper_spark as ss
    from sleeper_spark import maintenance

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    try:
        table = ss.Catalog.local(sys.argv[1]).table("events")
        snapshot = maintenance.compact(table, spark, executor="spark")
        print(json.dumps(snapshot.model_dump(mode="json")))
    finally:
        spark.stop()
    """
)


@pytest.mark.skipif(shutil.which("java") is None, reason="Spark needs Java")
def test_compaction_rewrites_in_spark_tasks_with_the_same_result(local_catalog: ss.Catalog, tmp_path: Path) -> None:
    # Given 16 small files over four partitions
    table = table_of_appends(local_catalog, 16, days=("d1", "d2", "d3", "d4"))
    before = row_set(table)
    # When a Spark session compacts it, one task per partition group
    script = tmp_path / "compact_with_spark.py"
    script.write_text(SPARK_COMPACTION)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    done = subprocess.run([sys.executable, str(script), local_catalog.config.warehouse], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    snapshot = json.loads(done.stdout.strip().splitlines()[-1])
    # Then the executors wrote one file per partition and the driver committed them
    assert (snapshot["operation"], snapshot["files_removed"], snapshot["files_added"]) == ("compact", 16, 4)
    assert row_set(table) == before and len(table.files()) == 4
    assert table.verify().ok

"""Both streaming ends on a bare object store (SeaweedFS, native conditional writes).

The other streaming tests run on the local disk and on AWS; this one shows that a catalog whose
log is an object store needs nothing else: the sink commits one snapshot per micro-batch, and
the source delivers those rows once.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import sleeper_spark as ss
from tests.fixtures.catalogs import make_catalog
from tests.invariants import check_log_invariants
from tests.streaming.streams import delivered_ids, sink_to_table, stream_table, write_inputs

pytestmark = [pytest.mark.spark, pytest.mark.integration]


def test_the_sink_and_the_source_on_an_object_store(spark: SparkSession, request: pytest.FixtureRequest,
                                                     tmp_path: Path) -> None:
    # Given a bare object-store catalog, and three input files streamed into it one per micro-batch
    options = make_catalog("object_store", request, tmp_path).options()
    catalog = ss.Catalog.from_options(options)
    write_inputs(tmp_path / "in", 0, 3, 40)
    query = sink_to_table(spark, catalog, tmp_path / "in", tmp_path / "sink-checkpoint")
    # When the table is streamed out, and streamed again after one more append
    output, checkpoint = tmp_path / "out", tmp_path / "source-checkpoint"
    stream_table(spark, catalog, output, checkpoint)
    write_inputs(tmp_path / "in", 3, 1, 40)
    sink_to_table(spark, catalog, tmp_path / "in", tmp_path / "sink-checkpoint")
    stream_table(spark, catalog, output, checkpoint)
    # Then each micro-batch is one snapshot of the query, and every row came out exactly once
    table = ss.Catalog.from_options(options).table("events")
    assert [(s.operation, s.app_id, s.app_version) for s in table.history()] == [
        ("append", str(query.id), batch) for batch in range(4)]
    assert delivered_ids(spark, output) == list(range(160))
    check_log_invariants(table)

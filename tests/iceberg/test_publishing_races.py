"""Writers in several processes commit to one table with publishing on, all at once: every version
is published (whoever published it), and reads in pyiceberg exactly as in sleeper_spark."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyiceberg.table import StaticTable

import sleeper_spark as ss
from sleeper_spark.layout import iceberg_metadata_key
from sleeper_spark.storage import join_key
from tests.fixtures.catalogs import EVENTS_SCHEMA, catalog_params, make_catalog
from tests.fixtures.processes import released_together
from tests.fixtures.publishing import APPENDS, append_many
from tests.fixtures.servers import TEST_CREDENTIALS
from tests.invariants import check_table_invariants

WRITERS = 3



def file_io_properties(catalog: ss.Catalog) -> dict[str, str]:
    endpoint = catalog.config.s3_endpoint
    if endpoint is None:
        return {}
    return {"s3.endpoint": endpoint, "s3.region": "us-east-1", "s3.access-key-id": TEST_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            "s3.secret-access-key": TEST_CREDENTIALS["AWS_SECRET_ACCESS_KEY"]}


@pytest.mark.parametrize("kind", catalog_params(["local", "aws"]))
def test_racing_writers_publish_every_version(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    catalog = make_catalog(kind, request, tmp_path)
    catalog.create_table("events", EVENTS_SCHEMA, partition_by=["day"], properties={"iceberg.publish": "true"})
    outcomes = released_together(append_many, catalog.options(), WRITERS)
    table = ss.Catalog(catalog.config).table("events")
    check_table_invariants(table, outcomes)
    versions = [s.version for s in table.history()]
    assert len(versions) == WRITERS * APPENDS
    # Looked at before anything here publishes: the racing writers published every version.
    missing = [v for v in versions if table.store.head(join_key(table.root, iceberg_metadata_key(v))) is None]
    assert missing == []
    properties = file_io_properties(catalog)
    for version in versions:
        read = StaticTable.from_metadata(table.iceberg_metadata(version), properties=properties).scan().to_arrow()
        want = table.scan(version=version)
        assert sorted(read.select(want.column_names).to_pylist(), key=repr) == sorted(want.to_pylist(), key=repr)

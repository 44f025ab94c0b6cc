"""Writers in several processes commit to one table with Delta publishing on, all at once: every
version is published (whoever published it), whole, and reads in delta-rs exactly as in sleeper_spark."""

from __future__ import annotations

from pathlib import Path

import pytest

import sleeper_spark as ss
from sleeper_spark.layout import delta_commit_key
from sleeper_spark.storage import join_key
from tests.fixtures.catalogs import EVENTS_SCHEMA, catalog_params, make_catalog
from tests.fixtures.processes import released_together
from tests.fixtures.publishing import APPENDS, append_many
from tests.fixtures.servers import TEST_CREDENTIALS
from tests.invariants import check_table_invariants

deltalake = pytest.importorskip("deltalake")

WRITERS = 3



def storage_options(catalog: ss.Catalog) -> dict[str, str]:
    """What delta-rs needs to read the table where it is (the S3 test server, plain HTTP on loopback)."""
    endpoint = catalog.config.s3_endpoint
    if endpoint is None:
        return {}
    return {"AWS_ENDPOINT_URL": endpoint, "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true",
            "AWS_ACCESS_KEY_ID": TEST_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            "AWS_SECRET_ACCESS_KEY": TEST_CREDENTIALS["AWS_SECRET_ACCESS_KEY"]}


@pytest.mark.parametrize("kind", catalog_params(["local", "aws"]))
def test_racing_writers_publish_every_version(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    catalog = make_catalog(kind, request, tmp_path)
    catalog.create_table("events", EVENTS_SCHEMA, partition_by=["day"], properties={"delta.publish": "true"})
    outcomes = released_together(append_many, catalog.options(), WRITERS)
    table = ss.Catalog(catalog.config).table("events")
    check_table_invariants(table, outcomes)
    versions = [s.version for s in table.history()]
    assert len(versions) == WRITERS * APPENDS
    # Looked at before anything here publishes: the racing writers published every version.
    missing = [v for v in range(max(versions) + 1)
               if table.store.head(join_key(table.root, delta_commit_key(v))) is None]
    assert missing == []
    options = storage_options(catalog)
    for version in versions:
        read = deltalake.DeltaTable(table.location, version=version, storage_options=options).to_pyarrow_table()
        want = table.scan(version=version)
        assert sorted(read.select(want.column_names).to_pylist(), key=repr) == sorted(want.to_pylist(), key=repr)

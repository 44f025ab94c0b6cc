"""Writers in several processes commit to one table with Delta publishing on, all at once: every
version is published (whoever published it), whole, and reads in delta-rs exactly as in sleeper_spark;
a reader opening the table meanwhile opens whole versions only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import sleeper_spark as ss
from sleeper_spark.layout import delta_commit_key
from sleeper_spark.storage import join_key
from tests.fixtures.catalogs import EVENTS_SCHEMA, catalog_params, events, make_catalog
from tests.fixtures.processes import racing_context, released_together
from tests.fixtures.publishing import APPENDS, append_many
from tests.fixtures.servers import TEST_CREDENTIALS
from tests.invariants import check_table_invariants

deltalake = pytest.importorskip("deltalake")

WRITERS = 3
# The distinct versions the racing reader opens before the writers stop (at most MAX_APPENDS each).
VERSIONS_TO_OPEN = 5
MAX_APPENDS = 300


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


def append_until(options: dict[str, str], writer: int, start: Any, enough: Any) -> None:
    """Appends once ``start`` is released until ``enough`` is set, then waits for publishing."""
    table = ss.Catalog.from_options(options).table("events")
    start.wait()
    for seq in range(MAX_APPENDS):
        if enough.is_set():
            break
        table.write(events(writer, seq))
    assert table.publishing.flush(timeout=120)


def test_a_reader_racing_the_publishers_opens_whole_versions_only(tmp_path: Path) -> None:
    # Given writers appending in other processes, publishing as they go, until the reader has
    # opened enough versions (so the two overlap however loaded the machine is)
    catalog = ss.Catalog.local(str(tmp_path / "warehouse"))
    catalog.create_table("events", EVENTS_SCHEMA, partition_by=["day"], properties={"delta.publish": "true"})
    context = racing_context()
    seen: dict[int, list[Any]] = {}
    with context.Manager() as manager:
        start, enough = manager.Event(), manager.Event()
        with context.Pool(WRITERS) as pool:
            pending = [pool.apply_async(append_until, (catalog.options(), worker, start, enough))
                       for worker in range(WRITERS)]
            start.set()
            # When delta-rs opens the newest version again and again meanwhile
            while not all(p.ready() for p in pending):
                try:
                    read = deltalake.DeltaTable(catalog.table("events").location)
                except deltalake.exceptions.TableNotFoundError:
                    continue  # nothing published yet
                seen.setdefault(read.version(), sorted(read.to_pyarrow_table().to_pylist(), key=repr))
                if len(seen) >= VERSIONS_TO_OPEN:
                    enough.set()
            for p in pending:
                p.get(timeout=120)
    # Then every version it opened held exactly the rows of that sleeper version
    table = ss.Catalog.local(str(tmp_path / "warehouse")).table("events")
    for version, rows in seen.items():
        want = table.scan(version=max(version, 1))  # Delta's version 0 is the empty table as created
        assert [{k: r[k] for k in want.column_names} for r in rows] == sorted(want.to_pylist(), key=repr), version

"""A driver whose session catalog's Hive metastore is down: its ``saveAsTable`` fails, and the
sleeper warehouse is left as it was, with no table made for the entry that was never written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import sleeper_spark as ss
from tests.fixtures.servers import free_port
from tests.session_catalog.drivers import Driver

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A warehouse holding one table, ``db.kept``: a table left behind would show beside it."""
    folder = tmp_path_factory.mktemp("sleeper-warehouse")
    ss.Catalog.local(str(folder)).create_table("db.kept", pa.schema([("id", pa.int64())]))
    return folder


@pytest.fixture(scope="module")
def refused_save(warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What a driver whose ``hive.metastore.uris`` names a port nothing listens on met in ``saveAsTable("db.events")``."""
    folder = tmp_path_factory.mktemp("driver")
    closed = free_port()  # free a moment ago, and nothing here starts listening on it
    driver = Driver("save", "save", {"warehouse": str(warehouse), "metastore_uri": f"thrift://127.0.0.1:{closed}",
                                     "spark_warehouse": str(folder / "spark-warehouse")}, folder)
    try:
        return driver.result()
    finally:
        driver.stop()


def test_a_save_through_a_metastore_that_is_down_fails_and_commits_nothing(
        refused_save: dict[str, Any], warehouse: Path) -> None:
    # Given a driver whose metastore is down, When it saves a new table db.events through saveAsTable
    # Then the save fails, saying that the metastore's client could not be made
    assert refused_save["saved"] is False
    assert "SessionHiveMetaStoreClient" in refused_save["message"], refused_save
    # And the sleeper warehouse holds what it held: no table db.events, no file of one
    catalog = ss.Catalog.local(str(warehouse))
    assert catalog.tables() == ["db.kept"]
    assert list(catalog.backend.store.list("db.events")) == []


def test_a_save_through_a_metastore_that_is_down_says_what_to_do(refused_save: dict[str, Any]) -> None:
    # Given a driver whose metastore is down, When it saves a new table through saveAsTable
    # Then the error is sleeper_spark's StorageError, naming the setting to check
    assert refused_save["sleeper_error"] == "StorageError", refused_save
    assert "hive.metastore.uris" in refused_save["sleeper_message"]

"""A mistyped warehouse path is an error, never a new empty warehouse; only creating makes one."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import sleeper_spark as ss
from sleeper_spark.errors import WarehouseNotFoundError


@pytest.fixture
def missing(tmp_path: Path) -> Path:
    return tmp_path / "no" / "such" / "warehouse"


@pytest.mark.parametrize("open_catalog", [ss.Catalog.local, ss.Catalog.object_store], ids=["local", "object_store"])
def test_reading_a_missing_warehouse_raises_and_creates_nothing(missing: Path, open_catalog: object) -> None:
    # Given a path where no warehouse exists
    catalog = open_catalog(str(missing))  # type: ignore[operator]

    # When a table is opened or the tables are listed
    with pytest.raises(WarehouseNotFoundError, match="does not exist: check the path"):
        catalog.table("events")
    with pytest.raises(WarehouseNotFoundError):
        catalog.tables()

    # Then the error is also a TableNotFoundError, and nothing was created on disk
    with pytest.raises(ss.TableNotFoundError):
        catalog.table("events")
    assert not missing.parent.parent.exists()


@pytest.mark.parametrize("open_catalog", [ss.Catalog.local, ss.Catalog.object_store], ids=["local", "object_store"])
def test_reading_namespaces_of_a_missing_warehouse_raises_and_creates_nothing(missing: Path,
                                                                               open_catalog: object) -> None:
    # Given a path where no warehouse exists
    catalog = open_catalog(str(missing))  # type: ignore[operator]

    # When its namespaces are listed, or one is described, changed or dropped
    calls = (catalog.namespaces, lambda: catalog.namespace("sales"), lambda: catalog.namespaces("sales"),
             lambda: catalog.alter_namespace("sales", set={"a": "b"}), lambda: catalog.drop_namespace("sales"))
    for call in calls:
        # Then the error says the warehouse is missing, and is a NamespaceNotFoundError too
        with pytest.raises(WarehouseNotFoundError, match="does not exist: check the path") as raised:
            call()
        assert isinstance(raised.value, ss.NamespaceNotFoundError)
    assert not missing.parent.parent.exists()


def test_creating_a_namespace_creates_the_warehouse(missing: Path) -> None:
    # Given a missing warehouse, When a namespace is created in it (a DDL statement is a write)
    ss.Catalog.local(str(missing)).create_namespace("sales", comment="Orders")

    # Then the warehouse exists and holds the namespace, and no table
    catalog = ss.Catalog.local(str(missing))
    assert catalog.namespaces() == ["sales"] and catalog.namespace("sales").comment == "Orders"
    assert catalog.tables() == []


def test_creating_a_table_or_writing_creates_the_warehouse(tmp_path: Path) -> None:
    # Given two missing warehouses
    created, written = tmp_path / "a" / "wh", tmp_path / "b" / "wh"

    # When one gets a table and the other a first write
    ss.Catalog.local(str(created)).create_table("events", pa.schema([("n", pa.int64())]))
    ss.Catalog.local(str(written)).write(pa.table({"n": [1]}), "events")

    # Then both exist and hold the table
    assert ss.Catalog.local(str(created)).tables() == ["events"]
    assert ss.Catalog.local(str(written)).table("events").scan().num_rows == 1


def test_ensure_infrastructure_creates_an_empty_warehouse(missing: Path) -> None:
    catalog = ss.Catalog.local(str(missing))

    catalog.ensure_infrastructure()

    assert missing.is_dir() and catalog.tables() == []

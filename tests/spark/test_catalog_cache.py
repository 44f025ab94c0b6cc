"""The per-process catalog cache of the data source: one catalog per warehouse, and a bounded number
(see sleeper_spark/process_state.py)."""

from __future__ import annotations

from pathlib import Path

from sleeper_spark.process_state import CATALOGS
from sleeper_spark.spark.common import options


def test_one_catalog_per_warehouse_and_the_least_recently_used_goes_first(tmp_path: Path) -> None:
    # Given the first warehouse opened, and opened again after many others
    first = options.open_catalog({"warehouse": str(tmp_path / "w0")})
    for i in range(1, CATALOGS.size):
        options.open_catalog({"warehouse": str(tmp_path / f"w{i}")})
    assert options.open_catalog({"warehouse": str(tmp_path / "w0")}) is first  # the same options: the same catalog

    # When more warehouses than the cache holds are opened
    second = options.open_catalog({"warehouse": str(tmp_path / "w1")})
    for i in range(CATALOGS.size, 2 * CATALOGS.size):
        options.open_catalog({"warehouse": str(tmp_path / f"w{i}")})

    # Then the cache stays at its size, and a catalog dropped from it is opened anew
    assert len(CATALOGS) == CATALOGS.size
    assert options.open_catalog({"warehouse": str(tmp_path / "w1")}) is not second

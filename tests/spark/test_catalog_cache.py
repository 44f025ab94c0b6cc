"""The data source's per-process catalog cache: one catalog per warehouse, and a bounded number."""

from __future__ import annotations

from pathlib import Path

from sleeper_spark.spark import options


def test_one_catalog_per_warehouse_and_the_least_recently_used_goes_first(tmp_path: Path) -> None:
    # Given the first warehouse opened, and opened again after many others
    first = options.open_catalog({"warehouse": str(tmp_path / "w0")})
    for i in range(1, options.CATALOG_CACHE_SIZE):
        options.open_catalog({"warehouse": str(tmp_path / f"w{i}")})
    assert options.open_catalog({"warehouse": str(tmp_path / "w0")}) is first  # the same options: the same catalog

    # When more warehouses than the cache holds are opened
    second = options.open_catalog({"warehouse": str(tmp_path / "w1")})
    for i in range(options.CATALOG_CACHE_SIZE, 2 * options.CATALOG_CACHE_SIZE):
        options.open_catalog({"warehouse": str(tmp_path / f"w{i}")})

    # Then the cache stays at its size, and a catalog dropped from it is opened anew
    assert len(options._catalogs) == options.CATALOG_CACHE_SIZE
    assert options.open_catalog({"warehouse": str(tmp_path / "w1")}) is not second

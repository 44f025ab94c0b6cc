"""One table of URI schemes decides the store of a warehouse, whoever opens it."""

from __future__ import annotations

from pathlib import Path

import pytest

import sleeper_spark as ss
from sleeper_spark.cli.context import Settings, open_catalog
from sleeper_spark.config import WAREHOUSE_SCHEMES, CatalogConfig, resolve_warehouse
from sleeper_spark.spark.common import options as spark_options
from sleeper_spark.storage import LocalObjectStore
from sleeper_spark.storage.s3 import S3ObjectStore


@pytest.mark.parametrize(
    ("location", "kind", "canonical"),
    [
        ("/data/warehouse", "local", "/data/warehouse"),
        ("relative/warehouse", "local", "relative/warehouse"),
        ("data:2024/warehouse", "local", "data:2024/warehouse"),
        ("file:///data/my%20warehouse", "local", "/data/my warehouse"),
        ("file:/data/warehouse", "local", "/data/warehouse"),
        ("file://localhost/data/warehouse", "local", "/data/warehouse"),
        ("s3://bucket/warehouse", "s3", "s3://bucket/warehouse"),
        ("s3://bucket/warehouse/", "s3", "s3://bucket/warehouse"),
        ("s3a://bucket/warehouse", "s3", "s3://bucket/warehouse"),
        ("S3A://bucket/warehouse", "s3", "s3://bucket/warehouse"),
        ("s3n://bucket", "s3", "s3://bucket"),
    ],
)
def test_each_known_scheme_resolves_to_its_store_in_canonical_form(location: str, kind: str, canonical: str) -> None:
    # Given a warehouse location of a known scheme (or none)
    # When it is resolved
    warehouse = resolve_warehouse(location)
    # Then it names the right store, in the form every catalog stores
    assert (warehouse.kind, warehouse.uri) == (kind, canonical)
    assert resolve_warehouse(warehouse.uri) == warehouse


@pytest.mark.parametrize("location", ["gs://bucket/w", "hdfs:///warehouse", "abfss://c@account/w", "https://host/w"])
def test_an_unknown_scheme_is_refused_naming_the_schemes_that_work(location: str) -> None:
    with pytest.raises(ss.ConfigError) as raised:
        resolve_warehouse(location)
    for scheme in WAREHOUSE_SCHEMES:
        assert f"{scheme}://" in str(raised.value)


@pytest.mark.parametrize("location", ["s3a:bucket/w", "s3://", "s3:///prefix", "file://otherhost/w"])
def test_a_malformed_uri_of_a_known_scheme_is_refused(location: str) -> None:
    with pytest.raises(ss.ConfigError):
        resolve_warehouse(location)


def test_an_object_store_catalog_on_s3a_opens_s3_and_creates_no_local_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a working directory where a mistaken local store would create "s3a:"
    monkeypatch.chdir(tmp_path)
    # When an object-store catalog is opened on s3a://
    catalog = ss.Catalog.object_store("s3a://bucket/wh", endpoint_url="http://127.0.0.1:9")
    # Then its store is S3, under the canonical URI, and nothing appeared on the disk
    assert isinstance(catalog.backend.store, S3ObjectStore)
    assert catalog.backend.store.root_uri == "s3://bucket/wh"
    assert catalog.config.warehouse == "s3://bucket/wh"
    assert catalog.options()["warehouse"] == "s3://bucket/wh"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("location", ["s3a://bucket/wh", "s3n://bucket/wh", "gs://bucket/wh"])
def test_a_local_catalog_refuses_a_remote_warehouse(
    location: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ss.ConfigError):
        ss.Catalog.local(location)
    assert list(tmp_path.iterdir()) == []


def test_every_constructor_refuses_an_unknown_scheme_with_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ss.ConfigError, match="s3a://"):
        ss.Catalog.object_store("gs://bucket/wh")
    with pytest.raises(ss.ConfigError, match="s3a://"):
        ss.Catalog.aws("hdfs:///wh")
    with pytest.raises(ss.ConfigError, match="s3a://"):
        ss.Catalog.from_options({"catalog": "object_store", "warehouse": "gs://bucket/wh"})


def test_from_options_stores_the_canonical_uri_so_options_round_trip() -> None:
    catalog = ss.Catalog.from_options({"catalog": "object_store", "warehouse": "s3a://bucket/wh/"})
    assert catalog.options()["warehouse"] == "s3://bucket/wh"
    assert ss.Catalog.from_options(catalog.options()).config == catalog.config


def test_a_file_uri_opens_the_same_local_warehouse_as_its_path(tmp_path: Path) -> None:
    by_path = ss.Catalog.local(str(tmp_path / "wh"))
    by_uri = ss.Catalog.from_options({"catalog": "local", "warehouse": (tmp_path / "wh").as_uri()})
    assert isinstance(by_uri.backend.store, LocalObjectStore)
    assert by_uri.backend.store.root_uri == by_path.backend.store.root_uri


@pytest.mark.parametrize("location", ["s3a://bucket/wh", "s3n://bucket/wh", "s3://bucket/wh"])
def test_the_cli_opens_an_object_store_catalog_for_every_s3_scheme(
    location: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    catalog = open_catalog(Settings(warehouse=location))
    assert (catalog.config.catalog, catalog.config.warehouse) == ("object_store", "s3://bucket/wh")
    assert list(tmp_path.iterdir()) == []


def test_the_cli_opens_a_local_catalog_for_a_path_or_file_uri(tmp_path: Path) -> None:
    for location in (str(tmp_path / "wh"), (tmp_path / "wh").as_uri()):
        catalog = open_catalog(Settings(warehouse=location))
        assert (catalog.config.catalog, catalog.config.warehouse) == ("local", str(tmp_path / "wh"))


def test_the_cli_refuses_an_unknown_scheme(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ss.ConfigError, match="s3://"):
        open_catalog(Settings(warehouse="gs://bucket/wh"))


def test_spark_options_of_one_warehouse_in_two_spellings_share_one_catalog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    # Given the same warehouse named by Hadoop's scheme and by the canonical one
    hadoop = {"catalog": "object_store", "warehouse": "s3a://bucket/shared", "table": "events"}
    canonical = {"catalog": "object_store", "warehouse": "s3://bucket/shared/", "versionasof": "3"}
    # When a Spark worker opens both
    # Then it opens one catalog (one cached state per table), on S3
    assert spark_options.open_catalog(hadoop) is spark_options.open_catalog(canonical)
    assert spark_options.open_catalog(hadoop).config == CatalogConfig(catalog="object_store",
                                                                      warehouse="s3://bucket/shared")
    with pytest.raises(ss.ConfigError, match="s3a://"):
        spark_options.open_catalog({"catalog": "object_store", "warehouse": "gs://bucket/shared"})

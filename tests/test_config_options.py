"""One registry declares every option: the catalog, the data source and the session conf resolve keys through it."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pytest

import sleeper_spark as ss
from sleeper_spark.config import OPTIONS, CatalogConfig
from sleeper_spark.option_specs import SCOPES, OptionSpec
from sleeper_spark.spark.common import options as spark_options

# A value other than the default for every catalog option; a new option needs one here.
CATALOG_SAMPLES = {
    "catalog": "aws", "warehouse": "s3://bucket/wh", "region": "eu-west-2",
    "endpoint_url": "http://localhost:4566", "s3_endpoint_url": "http://localhost:9000",
    "dynamodb_endpoint_url": "http://localhost:8000", "transactions_table": "txns", "snapshots_table": "snaps",
    "conditional_writes": "put-and-verify", "lock_table": "locks", "state_snapshot_interval": "7",
    "recheck_after_s": "12.5", "group_commit": "true", "iceberg_publish": "true", "delta_publish": "true",
    "iceberg_catalog": '{"glue.region": "eu-west-2", "type": "glue"}', "iceberg_namespace": "lake",
    "retry.max_attempts": "3", "retry.base_delay_s": "0.01",
    "retry.max_delay_s": "0.2", "retry.jitter": "0.5", "store_retry.max_attempts": "9",
    "store_retry.base_delay_s": "0.1", "store_retry.max_delay_s": "1.5", "store_retry.jitter": "0.25",
    "store_retry.max_elapsed_s": "30",
}


def test_every_option_is_declared_with_a_meaning_and_a_scope() -> None:
    specs = list(OPTIONS)
    assert all(spec.description for spec in specs), [spec.name for spec in specs if not spec.description]
    assert all(spec.scopes <= set(SCOPES) and spec.scopes for spec in specs)
    assert {scope for spec in specs for scope in spec.scopes} == set(SCOPES)
    assert "max_files_per_partition" not in {spec.name for spec in specs}


def test_the_catalog_options_are_the_config_fields() -> None:
    nested = {f"{group}.{name}" for group in ("retry", "store_retry")
              for name in type(getattr(CatalogConfig(warehouse="/w"), group)).model_fields}
    top = set(CatalogConfig.model_fields) - {"retry", "store_retry"}
    assert {spec.name for spec in OPTIONS.specs("catalog")} == top | nested == set(CATALOG_SAMPLES)


@pytest.mark.parametrize("name", sorted(CATALOG_SAMPLES))
def test_every_catalog_option_round_trips_through_from_options(name: str) -> None:
    # Given one catalog option with a value other than its default, its key in upper case
    options = {"warehouse": "/tmp/warehouse", name.upper(): CATALOG_SAMPLES[name]}

    # When a config is built from it and turned back into options
    config = CatalogConfig.from_options(options)
    again = config.to_options()

    # Then the option comes back under its own name with the value given, and rebuilds the same config
    spec = OPTIONS.spec(name)
    assert spec.parse(again[spec.name]) == spec.parse(CATALOG_SAMPLES[name])
    assert CatalogConfig.from_options(again) == config


def test_all_catalog_options_together_round_trip() -> None:
    config = CatalogConfig.from_options(CATALOG_SAMPLES)
    assert config.to_options() == {name: str(OPTIONS.spec(name).parse(value)) for name, value in
                                   CATALOG_SAMPLES.items()}
    assert CatalogConfig.from_options(config.to_options()) == config


@pytest.mark.parametrize("spec", [spec for spec in OPTIONS if "catalog" not in spec.scopes], ids=lambda s: s.name)
def test_a_catalog_ignores_every_read_write_and_stream_option(spec: OptionSpec) -> None:
    # Given a data source option beside the catalog's (as Spark passes them all together)
    name = spec.name.replace("<key>", "job")
    options = {"warehouse": "/tmp/warehouse", name: "anything"}

    # Then the catalog is built from its own options alone
    assert CatalogConfig.from_options(options) == CatalogConfig(warehouse="/tmp/warehouse")


def test_data_source_options_resolve_in_any_case() -> None:
    # Given options spelled as users write them and as Spark lowercases them
    write = spark_options.parse_write({"path": "events", "PARTITION_BY": "day, hour", "metadata.Job": "nightly",
                                       "app_id": "ingest", "APP_VERSION": "4", "versionAsOf": "2"})
    read = spark_options.parse_read({"table": "events", "versionasof": "3", "parallelism": "8"})
    stream = spark_options.parse_stream_read({"path": "events", "STARTINGVERSION": "latest",
                                              "ignoreChanges": "TRUE", "maxfilespertrigger": "5"})
    sink = spark_options.parse_stream_write({"path": "events", "checkpointLocation": "/tmp/checkpoint"})

    # Then each is parsed into its typed value, and options of other scopes are left aside
    # (a metadata key is lowercased, as Spark would have done: metadata_json keeps the case)
    assert (write.table, write.partition_by, write.metadata) == ("events", ("day", "hour"), {"job": "nightly"})
    assert (write.app_id, write.app_version, write.target_file_bytes) == ("ingest", 4, OPTIONS.spec(
        "target_file_bytes").default)
    assert (read.table, read.version, read.parallelism, read.timestamp) == ("events", 3, 8, None)
    assert (stream.starting_latest, stream.starting_version, stream.ignore_changes) == (True, None, True)
    assert stream.max_files_per_trigger == 5
    assert sink.checkpoint_location == "/tmp/checkpoint"


def test_the_session_conf_resolves_through_the_registry_and_explicit_options_win() -> None:
    # Given a session conf with sleeper settings and others
    conf = {"spark.sleeper.Warehouse": "/tmp/warehouse", "spark.sleeper.versionAsOf": "2",
            "spark.sql.shuffle.partitions": "4"}

    # When it is merged under explicit options
    options = spark_options.merge(spark_options.session_options(conf), {"VersionAsOf": "3", "table": "events"})

    # Then only the sleeper settings count, and the explicit option wins
    assert spark_options.parse_read(options).version == 3
    assert CatalogConfig.from_options(options).warehouse == "/tmp/warehouse"


def test_a_mistyped_session_setting_is_refused_naming_the_conf_key() -> None:
    with pytest.raises(ss.ConfigError) as raised:
        spark_options.session_options({"spark.sleeper.wharehouse": "/tmp/warehouse"})

    message = str(raised.value)
    assert message.startswith("unknown sleeper option 'wharehouse' (the session conf 'spark.sleeper.wharehouse') "
                              "(did you mean 'warehouse'?). ")
    assert "docs/usage.md#options" in message


@pytest.mark.parametrize("parse", [spark_options.parse_read, spark_options.parse_write,
                                   spark_options.parse_stream_read, spark_options.parse_stream_write])
def test_an_unknown_data_source_option_is_refused_with_the_closest_one(
        parse: Callable[[Mapping[str, str]], object]) -> None:
    with pytest.raises(ss.ConfigError, match=r"unknown sleeper option 'partiton_by' \(did you mean 'partition_by'\?\)"):
        parse({"path": "events", "partiton_by": "day"})


@pytest.mark.parametrize(("options", "named"), [
    ({"retry.max_attempts": "many"}, "retry.max_attempts"),
    ({"conditional_writes": "sometimes"}, "conditional_writes"),
    ({"state_snapshot_interval": "0"}, "state_snapshot_interval"),
])
def test_a_catalog_option_of_the_wrong_type_is_refused_naming_it(options: dict[str, str], named: str) -> None:
    with pytest.raises(ss.ConfigError, match=rf"^invalid sleeper options: {named}: "):
        CatalogConfig.from_options({"warehouse": "/tmp/warehouse", **options})


@pytest.mark.parametrize(("options", "named"), [
    ({"versionAsOf": "three"}, "versionAsOf"),
    ({"parallelism": "0"}, "parallelism"),
    ({"scan_guard": "maybe"}, "scan_guard"),
])
def test_a_read_option_of_the_wrong_type_is_refused_naming_it(options: dict[str, str], named: str) -> None:
    with pytest.raises(ss.ConfigError, match=rf"^invalid sleeper options: {named}: "):
        spark_options.parse_read({"path": "events", **options})


def test_a_retry_knob_that_does_not_exist_is_an_unknown_option() -> None:
    with pytest.raises(ss.ConfigError, match=r"unknown sleeper option 'retry.max_attempt' "
                                             r"\(did you mean 'retry.max_attempts'\?\)"):
        CatalogConfig.from_options({"warehouse": "/tmp/warehouse", "retry.max_attempt": "3"})

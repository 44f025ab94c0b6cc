"""The public Catalog/Table API on the embedded local catalog, bad input included."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import sleeper_spark as ss
from tests.fixtures.catalogs import EVENTS_SCHEMA, events


def data_files(catalog: ss.Catalog) -> list[str]:
    return [info.key for info in catalog.backend.store.list("") if info.key.endswith(".parquet") and "/data/" in info.key]


def test_a_new_table_has_no_snapshots(catalog: ss.Catalog) -> None:
    table = catalog.create_table("events", EVENTS_SCHEMA)
    assert table.history() == []
    with pytest.raises(ss.NoSnapshotsError):
        table.latest()
    assert table.scan().num_rows == 0 and table.schema == EVENTS_SCHEMA


def test_writes_make_linear_versioned_snapshots_with_metadata(catalog: ss.Catalog) -> None:
    table = catalog.create_table("events", EVENTS_SCHEMA, partition_by=["day"])
    first = table.write(events(0, 0))
    second = table.write(events(0, 1), metadata={"job": "nightly"})
    assert (first.version, first.parent_id, first.metadata) == (2, None, {})
    assert (second.version, second.parent_id, second.metadata) == (3, first.snapshot_id, {"job": "nightly"})
    assert second.rows_added == 3 and second.files_added == 1 and second.bytes_added > 0
    assert table.snapshot(2) == first and table.latest() == second
    assert second.committed_at.tzinfo is not None


def test_overwrite_and_time_travel_by_version_and_timestamp(catalog: ss.Catalog) -> None:
    table = catalog.create_table("events", EVENTS_SCHEMA)
    first = table.write(events(0, 0))
    table.write(events(0, 1))
    third = table.write(events(1, 0, rows=2), mode="overwrite")
    assert third.operation == "overwrite" and third.rows_removed == 6 and third.files_removed == 2
    assert table.scan().num_rows == 2
    assert table.scan(version=3).num_rows == 6
    assert table.resolve_version(timestamp=first.committed_at) == 2
    with pytest.raises(ss.SnapshotNotFoundError):
        table.resolve_version(timestamp=first.committed_at - dt.timedelta(days=1))
    with pytest.raises(ss.SnapshotNotFoundError):
        table.snapshot(99)
    with pytest.raises(ss.SnapshotNotFoundError):
        table.scan(version=99)


def test_the_helper_write_creates_the_table_on_first_write(catalog: ss.Catalog) -> None:
    snapshot = catalog.write(events(0, 0), "events", partition_by=["day"])
    assert snapshot.version == 2
    assert catalog.tables() == ["events"]
    assert catalog.table("events").partition_by == ("day",)


def test_scan_prunes_by_partition_and_stats(catalog: ss.Catalog) -> None:
    table = catalog.create_table("events", EVENTS_SCHEMA, partition_by=["day"])
    for day in range(10):
        table.write(events(day, 0, rows=4, day=f"2024-01-{day + 1:02d}"))
    result = table.scan(columns=["writer"], filter=(pc.field("day") == "2024-01-03") & (pc.field("seq") == 0))
    assert result.column("writer").to_pylist() == [2] * 4
    assert result.schema.names == ["writer"]
    from sleeper_spark.datafiles.pruning import prune_files

    state = table.state()
    kept = prune_files(list(state.files.values()), state.schema, pc.field("writer") >= 8)
    assert len(kept) == 2


def test_files_table_lists_the_live_files_with_typed_statistics(catalog: ss.Catalog) -> None:
    # Given a partitioned table with an event-time column, two appends and an overwrite of one partition's data
    schema = pa.schema([("day", pa.string()), ("n", pa.int64()), ("at", pa.timestamp("us", "UTC"))])
    table = catalog.create_table("clicks", schema, partition_by=["day"], event_time_column="at")
    at = dt.datetime(2024, 5, 1, 12, tzinfo=dt.timezone.utc)
    first = table.write(pa.table({"day": ["a", "a"], "n": [1, None], "at": [at, at]}, schema=schema))
    second = table.write(pa.table({"day": [None], "n": [7], "at": [None]}, schema=schema))
    # When its files table is read
    files = table.files_table()
    # Then there is one row per live file, with documented columns and the version that added it
    assert files.column_names == ["path", "size_bytes", "row_count", "checksum", "added_version", "partition.day",
                                  "min.day", "min.n", "min.at", "max.day", "max.n", "max.at", "null_count.day",
                                  "null_count.n", "null_count.at", "min_event_time", "max_event_time"]
    rows = sorted(files.to_pylist(), key=lambda r: r["added_version"])
    assert [(r["added_version"], r["partition.day"], r["row_count"]) for r in rows] == [
        (first.version, "a", 2), (second.version, None, 1)]
    assert (rows[0]["min.n"], rows[0]["max.n"], rows[0]["null_count.n"]) == (1, 1, 1)
    assert rows[0]["min_event_time"] == rows[0]["max_event_time"] == at and rows[1]["min_event_time"] is None
    assert files.schema.field("min.at").type == pa.timestamp("us", "UTC")
    assert sorted(files.column("path").to_pylist()) == sorted(f.path for f in table.files())
    assert table.files_table(version=first.version).num_rows == 1


@pytest.mark.parametrize(
    "value", ["../escape", "a/b", "k=v", "100%", "..", ".", "", None, "日本語", "x" * 1000, "__HIVE_DEFAULT_PARTITION__"]
)
def test_hostile_partition_values_round_trip_and_stay_inside_the_table(catalog: ss.Catalog,
                                                                       value: str | None) -> None:
    table = catalog.create_table("events", EVENTS_SCHEMA, partition_by=["day"])
    table.write(pa.table({"day": [value], "writer": [1], "seq": [1], "value": [1.0]}, schema=EVENTS_SCHEMA))
    assert table.scan().column("day").to_pylist() == [value]
    (file,) = table.files()
    assert file.partition == {"day": value}
    segments = file.path.split("/")
    assert segments[0] == "data" and segments[1].startswith("day=") and ".." not in segments and len(segments) == 3


def test_nulls_and_the_null_marker_string_get_different_directories(catalog: ss.Catalog) -> None:
    table = catalog.create_table("events", EVENTS_SCHEMA, partition_by=["day"])
    table.write(pa.table({"day": [None, "__HIVE_DEFAULT_PARTITION__"], "writer": [1, 2], "seq": [1, 1],
                          "value": [1.0, 2.0]}, schema=EVENTS_SCHEMA))
    assert len({f.path.rsplit("/", 1)[0] for f in table.files()}) == 2


# "_catalog" is the folder of the catalog's records: a table there would hold them, and purging it delete them
@pytest.mark.parametrize("name", ["", "../x", "a/b", ".hidden", "-x", "x" * 129, "a b", "é", "_catalog"])
def test_invalid_table_names_are_refused(catalog: ss.Catalog, name: str) -> None:
    catalog.ensure_infrastructure()  # an empty warehouse, so that tables() below can list it
    with pytest.raises(ss.InvalidTableNameError):
        catalog.create_table(name, EVENTS_SCHEMA)
    with pytest.raises(ss.InvalidTableNameError):
        catalog.table(name)
    assert catalog.tables() == []


def test_a_schema_mismatch_is_refused_before_any_file_is_written(catalog: ss.Catalog) -> None:
    table = catalog.create_table("events", EVENTS_SCHEMA)
    table.write(events(0, 0))
    before = data_files(catalog)
    bad = [
        pa.table({"day": ["x"], "writer": ["not a number"], "seq": [1], "value": [1.0]}),
        pa.table({"day": ["x"], "writer": [1], "seq": [1]}),
        pa.table({"day": ["x"], "writer": [1], "seq": [1], "value": [1.0], "extra": [1]}),
    ]
    for data in bad:
        with pytest.raises(ss.SchemaMismatchError):
            table.write(data)
    assert data_files(catalog) == before and len(table.history()) == 1


def test_nulls_in_a_required_column_are_refused(catalog: ss.Catalog) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    table = catalog.create_table("ids", schema)
    with pytest.raises(ss.SchemaMismatchError, match="not nullable"):
        table.write(pa.table({"id": pa.array([1, None], pa.int64())}))
    assert table.history() == [] and data_files(catalog) == []


@pytest.mark.parametrize("metadata", [{"k": 1}, {1: "v"}, ["k", "v"], "k=v"])
def test_metadata_must_map_strings_to_strings(catalog: ss.Catalog, metadata: object) -> None:
    table = catalog.create_table("events", EVENTS_SCHEMA)
    with pytest.raises(ss.ConfigError):
        table.write(events(0, 0), metadata=metadata)  # type: ignore[arg-type]
    assert table.history() == [] and data_files(catalog) == []


def test_unknown_modes_and_half_idempotency_keys_are_refused(catalog: ss.Catalog) -> None:
    table = catalog.create_table("events", EVENTS_SCHEMA)
    with pytest.raises(ss.ConfigError):
        table.write(events(0, 0), mode="upsert")
    with pytest.raises(ss.ConfigError):
        table.write(events(0, 0), app_id="x")
    assert table.history() == []


def test_catalog_errors(catalog: ss.Catalog) -> None:
    with pytest.raises(ss.TableNotFoundError):
        catalog.table("missing")
    catalog.create_table("events", EVENTS_SCHEMA)
    with pytest.raises(ss.TableAlreadyExistsError):
        catalog.create_table("events", EVENTS_SCHEMA)
    with pytest.raises(ss.SchemaMismatchError):
        catalog.create_table("bad", EVENTS_SCHEMA, partition_by=["nope"])
    with pytest.raises(ss.SchemaMismatchError):
        catalog.create_table("bad", EVENTS_SCHEMA, partition_by=["value"])  # floats make poor partitions


def test_drop_and_recreate_gives_a_fresh_table(catalog: ss.Catalog) -> None:
    table = catalog.create_table("events", EVENTS_SCHEMA)
    table.write(events(0, 0))
    catalog.drop_table("events", purge=True)
    assert catalog.tables() == []
    again = catalog.create_table("events", EVENTS_SCHEMA)
    assert again.table_id != table.table_id and again.history() == []
    assert data_files(catalog) == []


def test_options_round_trip_the_catalog(catalog: ss.Catalog) -> None:
    options = catalog.options()
    assert all(isinstance(v, str) for v in options.values())
    assert ss.Catalog.from_options(options).config == catalog.config
    with pytest.raises(ss.ConfigError):
        ss.Catalog.from_options({"warehouse": "/tmp/x", "nonsense": "1"})
    with pytest.raises(ss.ConfigError):
        ss.Catalog.from_options({"catalog": "local"})


def test_verify_finds_missing_truncated_and_flipped_files(catalog: ss.Catalog) -> None:
    table = catalog.create_table("events", EVENTS_SCHEMA, partition_by=["day"])
    for day in range(3):
        table.write(events(day, 0, day=f"d{day}"))
    assert table.verify().ok
    store = catalog.backend.store
    missing, truncated, flipped = (f"events/{f.path}" for f in table.files())
    store.delete(missing)
    store.put(truncated, store.get(truncated)[:-10])
    data = bytearray(store.get(flipped))
    data[len(data) // 2] ^= 0xFF
    store.put(flipped, bytes(data))
    report = table.verify()
    assert sorted(p.problem for p in report.problems) == ["checksum", "missing", "size"]
    with pytest.raises(ss.SleeperSparkError, match="missing"):
        table.scan()


def test_state_snapshots_load_the_same_state(catalog: ss.Catalog) -> None:
    table = catalog.create_table("events", EVENTS_SCHEMA)
    for seq in range(5):
        table.write(events(0, seq))
    assert table.create_state_snapshot() == 6
    table.write(events(0, 9))
    fresh = ss.Catalog(catalog.config).table("events")
    assert fresh.state() == table.state()
    assert fresh.head.state_snapshots.pointer.get() == 6


def test_a_corrupt_state_snapshot_falls_back_to_the_log(catalog: ss.Catalog,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    table = catalog.create_table("events", EVENTS_SCHEMA)
    table.write(events(0, 0))
    number = table.create_state_snapshot()
    catalog.backend.store.put(table.head.state_snapshots.key(number), b"garbage")
    fresh = ss.Catalog(catalog.config).table("events")
    assert fresh.state() == table.state()
    assert "cannot be decoded" in caplog.text


def test_a_corrupt_log_entry_names_the_table_and_number(local_catalog: ss.Catalog) -> None:
    table = local_catalog.create_table("events", EVENTS_SCHEMA)
    table.write(events(0, 0))
    entry = Path(local_catalog.backend.store.root_uri) / "events" / "_log" / f"{2:020d}.json"
    entry.write_bytes(entry.read_bytes()[:20])
    with pytest.raises(ss.CorruptLogError, match=r"'events': transaction 2"):
        ss.Catalog.local(local_catalog.config.warehouse).table("events").history()

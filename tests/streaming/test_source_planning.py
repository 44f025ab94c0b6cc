"""How the streaming source plans micro-batches from the log, driven directly (no Spark job runs)."""

from __future__ import annotations

from datetime import timedelta

import pyarrow.compute as pc
import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxFiles

import sleeper_spark as ss
from sleeper_spark.commit import utc_now
from sleeper_spark.maintenance import truncate_log
from sleeper_spark.models import TableSchema
from sleeper_spark.spark.common.conversions import spark_schema
from sleeper_spark.spark.source.reader import FilesPartition
from sleeper_spark.spark.streaming import plan_stream_read
from sleeper_spark.spark.streaming.stream_reader import SleeperStreamReader, contiguous_groups
from tests.streaming.streams import INPUT_SCHEMA, rows

pytestmark = pytest.mark.spark


def table_with_appends(catalog: ss.Catalog, appends: int) -> ss.Table:
    """Versions 2 .. appends + 1, append ``k`` holding ids ``10k .. 10k + 9``."""
    table = catalog.create_table("events", INPUT_SCHEMA)
    for k in range(appends):
        table.write(rows(10 * k, 10))
    return table


def reader(catalog: ss.Catalog, **options: str) -> SleeperStreamReader:
    schema = spark_schema(TableSchema.from_arrow(INPUT_SCHEMA), guarded=False)
    return plan_stream_read({**catalog.options(), "path": "events", **options}, schema, default_parallelism=2)


def planned_ids(stream: SleeperStreamReader, start: dict[str, object], end: dict[str, object]) -> list[int]:
    ids: list[int] = []
    for partition in stream.partitions(start, end):
        assert isinstance(partition, FilesPartition)
        ids.extend(id_ for batch in stream.read(partition) for id_ in batch.column("id").to_pylist())
    return ids


def test_offsets_are_versions_and_partitions_keep_version_order(catalog: ss.Catalog) -> None:
    # Given versions 2..6
    table = table_with_appends(catalog, 5)
    stream = reader(catalog)
    # When the source is asked for its offsets, Then they name the table and a version
    start = stream.initialOffset()
    assert start == {"table_id": table.table_id, "version": 1}
    end = stream.latestOffset(start, ReadAllAvailable())
    assert end == {"table_id": table.table_id, "version": 6}
    # And the batch between them reads every appended row, in version order
    assert planned_ids(stream, start, end) == list(range(50))
    assert stream.partitions(end, end) == []
    assert stream.latestOffset(end, ReadAllAvailable()) == end


def test_max_files_per_trigger_caps_a_batch_at_whole_versions(catalog: ss.Catalog) -> None:
    # Given versions 2..6 of one file each, read at most two files per trigger
    table_with_appends(catalog, 5)
    stream = reader(catalog, maxFilesPerTrigger="2")
    assert stream.getDefaultReadLimit() == ReadMaxFiles(2)
    start = stream.initialOffset()
    # When offsets advance under that limit, Then each batch holds two versions, the last one the rest
    versions = []
    while (end := stream.latestOffset(start, ReadMaxFiles(2))) != start:
        versions.append(end["version"])
        start = end
    assert versions == [3, 5, 6]
    # And Trigger.AvailableNow stops at the version current when the run began
    stream = reader(catalog)
    stream.prepareForTriggerAvailableNow()
    catalog.table("events").write(rows(1000, 1))
    assert stream.latestOffset(stream.initialOffset(), ReadAllAvailable())["version"] == 6


def test_a_delete_fails_the_batch_unless_changes_are_ignored(catalog: ss.Catalog) -> None:
    # Given versions 2..4, then a delete that drops the rows of version 3 (version 5)
    table = table_with_appends(catalog, 3)
    table.delete_where(None, pc.field("id") >= 10)
    start, end = {"table_id": table.table_id, "version": 1}, {"table_id": table.table_id, "version": 5}
    # Then planning across it fails and names the way out
    with pytest.raises(ss.ConfigError, match=r"version 5 \(delete\) removed 2 file\(s\).*ignoreChanges=true"):
        reader(catalog).partitions(start, end)
    # And with ignoreChanges the delete's added files (none: whole files went) are delivered
    assert planned_ids(reader(catalog, ignoreChanges="true"), start, end) == list(range(30))


def test_a_truncated_log_fails_with_snapshot_not_found(catalog: ss.Catalog) -> None:
    # Given versions 2..13 whose log was truncated up to 11
    table = table_with_appends(catalog, 12)
    table.head.state_snapshots.write(table.state(11))
    truncate_log(table, keep_versions_after=timedelta(0), safety_margin=0, now=utc_now() + timedelta(hours=1))
    assert table.head.transaction_log.first_number() == 12
    stream = reader(catalog)
    # When a stream from the beginning plans its first batch, Then it says why it cannot
    with pytest.raises(ss.SnapshotNotFoundError, match=r"versions 2\.\.11 are no longer in the log"):
        stream.partitions(stream.initialOffset(), stream.latestOffset(stream.initialOffset(), ReadAllAvailable()))
    # And a stream from a version the log still holds works
    stream = reader(catalog, startingVersion="12")
    start = stream.initialOffset()
    assert planned_ids(stream, start, stream.latestOffset(start, ReadAllAvailable())) == list(range(100, 120))


def test_bad_options_and_a_recreated_table_are_refused(catalog: ss.Catalog) -> None:
    table = table_with_appends(catalog, 1)
    for options, message in [({"startingVersion": "first"}, "startingVersion must be"),
                             ({"startingVersion": "0"}, "startingVersion must be"),
                             ({"versionAsOf": "2"}, "not versionAsOf"),
                             ({"ignoreChanges": "yes"}, "true or false"),
                             ({"maxFilesPerTrigger": "0"}, "maxFilesPerTrigger")]:
        with pytest.raises(ss.ConfigError, match=message):
            reader(catalog, **options)
    # Given a checkpointed offset of a table that was dropped and created again
    offset = {"table_id": table.table_id, "version": 2}
    catalog.drop_table("events")
    table_with_appends(catalog, 1)
    # Then a stream on the new table refuses it
    with pytest.raises(ss.ConfigError, match="new checkpoint"):
        reader(catalog).latestOffset(offset, ReadAllAvailable())


def test_contiguous_groups_keep_the_order_of_the_files(catalog: ss.Catalog) -> None:
    table = table_with_appends(catalog, 7)
    files = [f for s in table.history() for f in table.files(s.version) if f not in table.files(s.version - 1)]
    groups = contiguous_groups(files, 3)
    assert len(groups) == 3 and [f for g in groups for f in g] == files
    assert contiguous_groups(files[:2], 8) == [[files[0]], [files[1]]]

"""Publishing a Delta log after commits (sleeper_spark/delta, table/publishing.py): when it runs,
what each version becomes, checkpoints, that it never fails a commit and catches up on what it
missed, that another process continues where one stopped, that a foreign ``_delta_log`` is never
overwritten, and expiry with vacuum and log truncation. delta-rs reads whole tables here; rows
through every version, filtered, are checked against the truth in test_engine_differential.py."""

from __future__ import annotations

import datetime as dt
import json
import logging
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import sleeper_spark as ss
from sleeper_spark.cli.main import main as cli_main
from sleeper_spark.commit import utc_now
from sleeper_spark.delta.checkpoint import CHECKPOINT_INTERVAL, checkpoint_bytes, checkpoint_of
from sleeper_spark.maintenance import truncate_log, vacuum

deltalake = pytest.importorskip("deltalake")

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string()), ("value", pa.float64())])
LATER = utc_now() + timedelta(hours=1)  # truncation never cuts young transactions: look from later on


def rows(*values: tuple[Any, ...]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, v, strict=True)) for v in values], SCHEMA)


def publishing_table(tmp_path: Path, **settings: Any) -> ss.Table:
    catalog = ss.Catalog.local(str(tmp_path / "wh"), **settings)
    table = catalog.create_table("db.t", SCHEMA, partition_by=["day"])
    if not settings.get("delta_publish"):
        table.set_properties({"delta.publish": "true"})  # version 2
    return table


def delta_log(table: ss.Table) -> Path:
    """The table's _delta_log, once what was committed has been published (that runs behind)."""
    assert table.publishing.flush(timeout=60)
    return Path(table.location) / "_delta_log"


def commit_file(table: ss.Table, version: int) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (delta_log(table) / f"{version:020d}.json").read_text().splitlines()]


def delta_rows(table: ss.Table, version: int | None = None) -> list[tuple[Any, ...]]:
    assert table.publishing.flush(timeout=60)
    read = deltalake.DeltaTable(table.location, version=version).to_pyarrow_table()
    return sorted(tuple(r.values()) for r in read.select(SCHEMA.names).to_pylist())


def sleeper_rows(table: ss.Table, version: int | None = None) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in table.scan(version=version).select(SCHEMA.names).to_pylist())


def test_publishing_is_off_until_a_table_or_its_catalog_turns_it_on(tmp_path: Path) -> None:
    catalog = ss.Catalog.local(str(tmp_path / "wh"))
    quiet = catalog.create_table("quiet", SCHEMA)
    quiet.write(rows((1, "a", 1.0)))
    assert quiet.publishing.flush(timeout=60) and not (Path(quiet.location) / "_delta_log").exists()
    quiet.set_properties({"delta.publish": "true"})
    quiet.write(rows((2, "a", 2.0)))
    assert delta_rows(quiet) == [(1, "a", 1.0), (2, "a", 2.0)]
    every = ss.Catalog.local(str(tmp_path / "wh"), delta_publish=True)
    loud = every.create_table("loud", SCHEMA)
    loud.write(rows((3, "b", 3.0)))
    assert delta_log(loud).is_dir()
    opted_out = every.create_table("out", SCHEMA, properties={"delta.publish": "false"})
    opted_out.write(rows((4, "c", 4.0)))
    assert opted_out.publishing.flush(timeout=60) and not (Path(opted_out.location) / "_delta_log").exists()


def test_each_version_is_the_sleeper_version_of_its_number(tmp_path: Path) -> None:
    table = publishing_table(tmp_path)
    table.write(rows((1, "a", 1.0), (2, "b", 2.0)))  # 3
    table.write(rows((3, "a", 3.0)))  # 4
    table.write(rows((4, "a", 4.0)))  # 5
    table.delete_where(None, pc.field("id") == 2)  # 6
    assert table.compact() is not None  # 7: the three files of day a in one
    table.add_columns([pa.field("note", pa.string())])  # 8
    first = commit_file(table, 0)
    assert first[0] == {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}
    assert first[1]["metaData"]["partitionColumns"] == ["day"]
    assert first[1]["metaData"]["configuration"]["sleeper.tableId"] == table.table_id
    assert commit_file(table, 1)[0]["commitInfo"]["sleeper.operation"] == "create"
    infos = {v: commit_file(table, v)[0]["commitInfo"] for v in range(2, 9)}
    assert {v: (i["sleeper.version"], i["sleeper.operation"]) for v, i in infos.items()} == {
        2: (2, "properties"), 3: (3, "append"), 4: (4, "append"), 5: (5, "append"), 6: (6, "delete"),
        7: (7, "compact"), 8: (8, "schema")}
    appended = [a["add"] for a in commit_file(table, 3) if "add" in a]
    assert sorted(a["partitionValues"]["day"] for a in appended) == ["a", "b"]
    assert [json.loads(a["stats"])["numRecords"] for a in appended] == [1, 1]
    # A compaction moves rows without changing them: Delta's streaming readers must not deliver them again.
    compacted = [a[kind] for a in commit_file(table, 7) for kind in ("add", "remove") if kind in a]
    assert len(compacted) == 4 and {a["dataChange"] for a in compacted} == {False}
    assert next(a["metaData"]["schemaString"] for a in commit_file(table, 8) if "metaData" in a).count('"name"') == 4
    for version in range(3, 9):
        assert delta_rows(table, version) == sleeper_rows(table, version)


def test_a_checkpoint_every_ten_versions_keeps_opening_the_newest_to_a_few_files(tmp_path: Path) -> None:
    table = publishing_table(tmp_path)
    for i in range(2 * CHECKPOINT_INTERVAL + 3):
        table.write(rows((i, "ab"[i % 2], float(i))))
    newest = table.state().version
    log = delta_log(table)
    assert sorted(p.name for p in log.glob("*.checkpoint.parquet")) == [
        f"{v:020d}.checkpoint.parquet" for v in (CHECKPOINT_INTERVAL, 2 * CHECKPOINT_INTERVAL)]
    assert json.loads((log / "_last_checkpoint").read_text())["version"] == 2 * CHECKPOINT_INTERVAL
    # Opening the newest reads the checkpoint and the commit files after it only: with the older
    # ones gone, delta-rs still reads it (and nothing older).
    for old in range(2 * CHECKPOINT_INTERVAL):
        (log / f"{old:020d}.json").rename(log / f"{old:020d}.json.away")
    assert delta_rows(table) == sleeper_rows(table) and newest == 2 * CHECKPOINT_INTERVAL + 5


def test_a_checkpoint_continued_from_the_one_before_is_the_file_built_from_the_whole_state(tmp_path: Path) -> None:
    # Given checkpoints continued from the previous one: in the process that wrote it, in another
    # process (from the stored file), and across a schema change (built afresh)
    table = publishing_table(tmp_path)
    for i in range(CHECKPOINT_INTERVAL + 1):  # versions 3 to 13
        table.write(rows((i, "abc"[i % 3], float(i))))
    table.delete_where(None, pc.field("day") == "b")  # 14: files removed
    table.write(rows((20, "c", 2.0)), mode="overwrite")  # 15
    for i in range(5):  # 16 to 20
        table.write(rows((30 + i, "ab"[i % 2], float(i))))
    again = ss.Catalog.local(str(tmp_path / "wh")).table("db.t")
    for i in range(4):  # 21 to 24
        again.write(rows((40 + i, "ab"[i % 2], float(i))))
    again.delete_where(None, pc.field("id") == 41)  # 25
    again.add_columns(pa.schema([("extra", pa.string())]))  # 26
    for i in range(4):  # 27 to 30
        again.write(rows((50 + i, "a", float(i))).append_column("extra", pa.array([f"x{i}"])))
    log = delta_log(again)
    # Then each is the file a checkpoint built from the whole state of its version is
    target = again.delta.publisher().target
    for version in (CHECKPOINT_INTERVAL, 2 * CHECKPOINT_INTERVAL, 3 * CHECKPOINT_INTERVAL):
        fresh = checkpoint_bytes(checkpoint_of(again.state(version=version), target.created_at))
        assert (log / f"{version:020d}.checkpoint.parquet").read_bytes() == fresh, version
    read = deltalake.DeltaTable(again.location).to_pyarrow_table()
    assert sorted(read.column("id").to_pylist()) == sorted(again.scan().column("id").to_pylist())


def test_a_failed_publish_never_fails_the_commit_and_the_next_one_catches_up(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    table = publishing_table(tmp_path)
    table.write(rows((1, "a", 1.0)))  # 3
    blocked = delta_log(table) / f"{4:020d}.json"
    blocked.mkdir()  # a folder where publishing version 4 must write its commit file
    with caplog.at_level(logging.WARNING, logger="sleeper_spark"):
        snapshot = table.write(rows((2, "b", 2.0)))
        assert table.publishing.flush(timeout=60)
    assert snapshot.version == 4 and sleeper_rows(table) == [(1, "a", 1.0), (2, "b", 2.0)]
    assert "version 4 was committed but not published as a Delta version" in caplog.text
    assert "sleeper-spark delta sync db.t" in caplog.text
    assert delta_rows(table) == [(1, "a", 1.0)]  # readers see version 3, whole
    blocked.rmdir()
    table.write(rows((3, "c", 3.0)))  # 5 publishes 4 and 5
    for version in (3, 4, 5):
        assert delta_rows(table, version) == sleeper_rows(table, version)


def test_a_checkpoint_that_failed_is_written_by_the_next_publish(tmp_path: Path) -> None:
    table = publishing_table(tmp_path)
    for i in range(CHECKPOINT_INTERVAL - 3):
        table.write(rows((i, "a", float(i))))  # 3..9
    checkpoint = delta_log(table) / f"{CHECKPOINT_INTERVAL:020d}.checkpoint.parquet"
    checkpoint.mkdir()  # where publishing version 10 must write its checkpoint
    table.write(rows((10, "b", 10.0)))  # 10: its commit file is written, its checkpoint fails
    assert (delta_log(table) / f"{CHECKPOINT_INTERVAL:020d}.json").is_file()
    checkpoint.rmdir()
    # Another process (nothing cached) publishes the next version, and the checkpoint on the way
    again = ss.Catalog.local(str(tmp_path / "wh")).table("db.t")
    again.write(rows((11, "b", 11.0)))  # 11
    assert again.publishing.flush(timeout=60) and checkpoint.is_file()
    assert json.loads((delta_log(again) / "_last_checkpoint").read_text())["version"] == CHECKPOINT_INTERVAL
    assert delta_rows(again) == sleeper_rows(again)


def test_another_process_continues_from_what_was_published_as_a_rebuild_would(tmp_path: Path) -> None:
    table = publishing_table(tmp_path)
    for i in range(4):
        table.write(rows((i, "abcd"[i % 2], float(i))))
    table.write(rows((7, "a", 7.0)), mode="overwrite")
    # A new catalog object is a new process as far as the table is concerned: nothing cached.
    again = ss.Catalog.local(str(tmp_path / "wh")).table("db.t")
    again.write(rows((8, "b", 8.0)))
    again.delete_where(None, pc.field("id") == 7)  # 9
    log = delta_log(again)
    continued = {p.name: p.read_bytes() for p in log.iterdir()}
    assert again.publish_delta(rebuild=True) == 9
    assert {p.name: p.read_bytes() for p in log.iterdir()} == continued  # the same bytes, file for file
    for version in range(3, 10):
        assert delta_rows(again, version) == sleeper_rows(again, version)


def test_a_caller_asking_for_the_location_while_the_commit_publishes_gets_it(tmp_path: Path) -> None:
    # The publishing thread and the caller's own publish start together, on a fresh log each time
    catalog = ss.Catalog.local(str(tmp_path / "wh"), delta_publish=True)
    for i in range(20):
        table = catalog.create_table(f"t{i}", SCHEMA)
        table.write(rows((i, "a", float(i))))
        assert deltalake.DeltaTable(table.delta_location()).to_pyarrow_table().num_rows == 1


def test_a_log_that_starts_with_a_checkpoint_not_yet_named_is_not_taken_for_a_foreign_one(tmp_path: Path) -> None:
    # Given a log another process is writing as a truncated log's is written: a checkpoint first,
    # then the commit files after it, _last_checkpoint not yet
    table = publishing_table(tmp_path)
    for i in range(CHECKPOINT_INTERVAL):
        table.write(rows((i, "a", float(i))))  # 3..12
    log = delta_log(table)
    for path in log.iterdir():
        if (path.name.endswith(".json") and int(path.name[:20]) <= CHECKPOINT_INTERVAL) or path.name == "_last_checkpoint":
            path.unlink()
    # Then a new process takes it for this table's and continues it
    again = ss.Catalog.local(str(tmp_path / "wh")).table("db.t")
    assert again.publish_delta() == CHECKPOINT_INTERVAL + 2
    assert delta_rows(again) == sleeper_rows(again)


def test_a_delta_log_another_writer_made_is_refused_and_left_as_it_was(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    catalog = ss.Catalog.local(str(tmp_path / "wh"))
    table = catalog.create_table("db.t", SCHEMA)
    table.write(rows((1, "a", 1.0)))
    deltalake.write_deltalake(table.location, pa.table({"other": [1, 2]}))
    foreign = {p.name: p.read_bytes() for p in (Path(table.location) / "_delta_log").iterdir()}
    with pytest.raises(ss.DeltaPublishError, match="was not written for this table"):
        table.publish_delta()
    table.set_properties({"delta.publish": "true"})
    with caplog.at_level(logging.WARNING, logger="sleeper_spark"):
        assert table.write(rows((2, "b", 2.0))).version == 4  # the commit stands
        assert table.publishing.flush(timeout=60)
    assert "was not written for this table" in caplog.text
    assert {p.name: p.read_bytes() for p in (Path(table.location) / "_delta_log").iterdir()} == foreign
    assert deltalake.DeltaTable(table.location).to_pyarrow_table().to_pylist() == [{"other": 1}, {"other": 2}]


def test_vacuum_drops_the_versions_whose_files_it_deleted(tmp_path: Path) -> None:
    table = publishing_table(tmp_path, delta_publish=True)
    table.write(rows((1, "a", 1.0)))  # 2
    table.write(rows((2, "b", 2.0)))  # 3
    table.write(rows((3, "a", 3.0)), mode="overwrite")  # 4: 2 and 3's files are garbage
    table.write(rows((4, "b", 4.0)))  # 5: the floor
    assert table.publishing.flush(timeout=60)
    report = vacuum(table, older_than=timedelta(0), now=LATER)
    gone = sorted(Path(key).name for key in report.deleted if key.startswith("_delta_log/"))
    assert gone == [f"{v:020d}.json" for v in range(5)]
    assert delta_rows(table) == sleeper_rows(table) == [(3, "a", 3.0), (4, "b", 4.0)]
    with pytest.raises(Exception, match=r"(?i)no files in log segment|version"):
        deltalake.DeltaTable(table.location, version=4)
    table.write(rows((5, "a", 5.0)))  # publishing goes on from the checkpoint
    assert delta_rows(table) == sleeper_rows(table)
    assert table.publish_delta(rebuild=True) == 6  # and a rebuild starts from the oldest version the log holds
    assert delta_rows(table) == sleeper_rows(table)


def test_log_truncation_drops_the_versions_it_cut(tmp_path: Path) -> None:
    table = publishing_table(tmp_path)
    for i in range(4):
        table.write(rows((i, "a", float(i))))  # 3..6
    table.create_state_snapshot()  # at 6
    table.write(rows((9, "b", 9.0)))  # 7
    assert table.publishing.flush(timeout=60)
    report = truncate_log(table, now=LATER, keep_versions_after=timedelta(0), safety_margin=0)
    assert report.first_transaction == 7
    log = delta_log(table)
    assert min(int(p.name[:20]) for p in log.iterdir() if p.name[:20].isdigit()) == 6
    assert delta_rows(table, 6) == sleeper_rows(table, 6) and delta_rows(table) == sleeper_rows(table)
    # A rebuild starts with a checkpoint of the oldest version the log still rebuilds.
    assert table.publish_delta(rebuild=True) == 7
    assert sorted(p.name for p in log.iterdir()) == [f"{6:020d}.checkpoint.parquet", f"{7:020d}.json",
                                                    "_last_checkpoint"]
    assert delta_rows(table, 6) == sleeper_rows(table, 6) and delta_rows(table) == sleeper_rows(table)


def test_the_command_line_syncs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    warehouse = str(tmp_path / "wh")
    table = ss.Catalog.local(warehouse).create_table("db.t", SCHEMA)
    table.write(rows((1, "a", 1.0)))
    assert cli_main(["--warehouse", warehouse, "delta", "sync", "db.t", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"table": "db.t", "version": 2, "location": table.location}
    assert cli_main(["--warehouse", warehouse, "delta", "sync", "db.t", "--rebuild"]) == 0
    assert capsys.readouterr().out.split() == ["db.t:", "published", "up", "to", "version", "2;", "Delta", "readers",
                                               "open", table.location]
    assert delta_rows(table) == [(1, "a", 1.0)]


def test_timestamps_date_partitions_and_a_widened_column_read_in_delta_rs(tmp_path: Path) -> None:
    schema = pa.schema([("at", pa.timestamp("us", tz="UTC")), ("local", pa.timestamp("us")), ("n", pa.int32()),
                        ("d", pa.date32())])
    table = ss.Catalog.local(str(tmp_path / "wh"), delta_publish=True).create_table("ts", schema,
                                                                                    partition_by=["d"])
    moments = [dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=dt.timezone.utc),
               dt.datetime(2024, 5, 1, 10, 0, 0, 123456, tzinfo=dt.timezone.utc), None]
    data = pa.table({"at": pa.array(moments, schema.field("at").type),
                     "local": pa.array([dt.datetime(1, 1, 1), None, dt.datetime(9999, 12, 31, 23, 59, 59)],
                                       pa.timestamp("us")),
                     "n": pa.array([1, 2, 3], pa.int32()),
                     "d": pa.array([dt.date(1582, 10, 4), None, dt.date(2024, 5, 1)])})
    table.write(data)
    table.widen_column("n", "int64")
    table.write(data.set_column(2, "n", pa.array([4, 5, 6], pa.int64())))
    assert table.publishing.flush(timeout=60)
    assert commit_file(table, 0)[0]["protocol"]["readerFeatures"] == ["timestampNtz"]
    read = deltalake.DeltaTable(table.location).to_pyarrow_table()
    want = table.scan()
    assert sorted(read.select(want.column_names).to_pylist(), key=lambda r: r["n"]) == \
        sorted(want.to_pylist(), key=lambda r: r["n"])
    assert deltalake.DeltaTable(table.location).to_pyarrow_table(filters=[("d", "=", dt.date(1582, 10, 4))]
                                                                 ).column("n").to_pylist() in ([1, 4], [4, 1])

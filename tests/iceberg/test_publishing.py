"""Publishing Iceberg metadata after commits (sleeper_spark/iceberg, table/publishing.py):
when it runs, what each version becomes, that it never fails a commit and catches up on what it
missed, that a new process continues where another stopped, pyiceberg's SQL catalog, and expiry
with vacuum and log truncation. Rows read through every version are checked against the truth in
test_iceberg_differential.py; here pyiceberg reads whole tables only."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyiceberg.catalog import load_catalog
from pyiceberg.table import StaticTable
from pyiceberg.table.snapshots import Operation

import sleeper_spark as ss
from sleeper_spark.cli.main import main as cli_main
from sleeper_spark.commit import utc_now
from sleeper_spark.maintenance import truncate_log, vacuum
from sleeper_spark.table.behind_commits import IDLE_EXIT_S

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string()), ("value", pa.float64())])
LATER = utc_now() + timedelta(hours=1)  # truncation never cuts young transactions: look from later on


def rows(*values: tuple[Any, ...]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, v, strict=True)) for v in values], SCHEMA)


def published_table(tmp_path: Path, **settings: Any) -> ss.Table:
    catalog = ss.Catalog.local(str(tmp_path / "wh"), **settings)
    table = catalog.create_table("db.t", SCHEMA, partition_by=["day"])
    if not settings.get("iceberg_publish"):
        table.set_properties({"iceberg.publish": "true"})  # version 2
    return table


def metadata_dir(table: ss.Table) -> Path:
    """The table's metadata folder, once what was committed has been published (that runs behind)."""
    assert table.publishing.flush(timeout=60)
    return Path(table.location) / "metadata"


def iceberg_rows(uri: str) -> list[tuple[Any, ...]]:
    read = StaticTable.from_metadata(uri).scan().to_arrow()
    return sorted(tuple(r.values()) for r in read.select(SCHEMA.names).to_pylist())


def sleeper_rows(table: ss.Table, version: int | None = None) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in table.scan(version=version).select(SCHEMA.names).to_pylist())


def test_publishing_is_off_until_a_table_or_its_catalog_turns_it_on(tmp_path: Path) -> None:
    table = ss.Catalog.local(str(tmp_path / "wh")).create_table("db.t", SCHEMA, partition_by=["day"])
    table.write(rows((1, "a", 1.0)))
    assert not metadata_dir(table).exists()
    table.set_properties({"iceberg.publish": "true"})
    table.write(rows((2, "b", 2.0)))
    # Turning it on publishes every version still in the log, not only those after it.
    assert sorted(p.name for p in metadata_dir(table).glob("v*.metadata.json")) == [
        "v2.metadata.json", "v3.metadata.json", "v4.metadata.json"]
    assert (metadata_dir(table) / "version-hint.text").read_text() == "4"

    on_for_all = ss.Catalog.local(str(tmp_path / "wh2"), iceberg_publish=True)
    opted_out = on_for_all.create_table("db.u", SCHEMA, properties={"iceberg.publish": "false"})
    opted_out.write(rows((1, "a", 1.0)))
    assert not metadata_dir(opted_out).exists()
    opted_in = on_for_all.create_table("db.v", SCHEMA)
    opted_in.write(rows((1, "a", 1.0)))
    assert (metadata_dir(opted_in) / "version-hint.text").read_text() == "2"


def test_each_version_is_the_snapshot_of_its_number_with_the_operation_it_was(tmp_path: Path) -> None:
    table = published_table(tmp_path)
    table.write(rows((1, "a", 1.0), (2, "b", 2.0)))  # 3: append
    table.write(rows((3, "a", 3.0)))  # 4: append
    table.delete_where(None, pc.field("day") == "b")  # 5: delete (a whole file goes)
    table.add_columns(pa.schema([("note", pa.string())]))  # 6: schema
    table.write(pa.table({"id": [9], "day": ["c"], "value": [9.0], "note": ["x"]}), mode="overwrite")  # 7
    table.compact()  # nothing to compact: no version
    metadata = StaticTable.from_metadata(table.iceberg_metadata()).metadata
    assert [s.snapshot_id for s in metadata.snapshots] == [2, 3, 4, 5, 6, 7]
    assert [s.sequence_number for s in metadata.snapshots] == [2, 3, 4, 5, 6, 7]
    assert [s.summary.operation for s in metadata.snapshots if s.summary] == [
        Operation.REPLACE, Operation.APPEND, Operation.APPEND, Operation.DELETE, Operation.REPLACE,
        Operation.OVERWRITE]
    assert all(s.summary and s.summary["sleeper.version"] == str(s.snapshot_id) for s in metadata.snapshots)
    assert [s.parent_snapshot_id for s in metadata.snapshots] == [None, 2, 3, 4, 5, 6]
    # The schema change is a new schema: the old columns keep their ids, the new one takes the next.
    assert [[f.field_id for f in s.fields] for s in metadata.schemas] == [[1, 2, 3], [1, 2, 3, 4]]
    assert [s.schema_id for s in metadata.snapshots] == [0, 0, 0, 0, 1, 1]
    for version in range(2, 8):
        assert iceberg_rows(table.iceberg_metadata(version)) == sleeper_rows(table, version)


def test_a_failed_publish_never_fails_the_commit_and_the_next_one_catches_up(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    table = published_table(tmp_path)
    table.write(rows((1, "a", 1.0)))  # 3
    blocked = metadata_dir(table) / "manifest-4-at-4.avro"
    blocked.mkdir()  # a folder where publishing version 4 must write a file
    with caplog.at_level(logging.WARNING, logger="sleeper_spark"):
        snapshot = table.write(rows((2, "b", 2.0)))
        assert table.publishing.flush(timeout=60)
    assert snapshot.version == 4 and sleeper_rows(table) == [(1, "a", 1.0), (2, "b", 2.0)]
    assert "version 4 was committed but not published as Iceberg metadata" in caplog.text
    assert "sleeper-spark iceberg sync db.t" in caplog.text
    assert (metadata_dir(table) / "version-hint.text").read_text() == "3"
    blocked.rmdir()
    table.write(rows((3, "c", 3.0)))  # 5 publishes 4 and 5
    assert (metadata_dir(table) / "version-hint.text").read_text() == "5"
    for version in (4, 5):
        assert iceberg_rows(table.iceberg_metadata(version)) == sleeper_rows(table, version)


def test_another_process_continues_from_what_was_published_as_a_rebuild_would(tmp_path: Path) -> None:
    table = published_table(tmp_path)
    for i in range(4):
        table.write(rows((i, "abcd"[i % 2], float(i))))
    table.write(rows((7, "a", 7.0)), mode="overwrite")
    # A new catalog object is a new process as far as the table is concerned: nothing cached.
    again = ss.Catalog.local(str(tmp_path / "wh")).table("db.t")
    again.write(rows((8, "b", 8.0)))
    again.delete_where(None, pc.field("id") == 7)
    assert again.publishing.flush(timeout=60)
    continued = json.loads((metadata_dir(table) / "v9.metadata.json").read_text())
    assert again.publish_iceberg(rebuild=True) == 9
    rebuilt = json.loads((metadata_dir(table) / "v9.metadata.json").read_text())
    assert continued["snapshots"] == rebuilt["snapshots"]
    assert continued["schemas"] == rebuilt["schemas"]
    for version in range(2, 10):
        assert iceberg_rows(again.iceberg_metadata(version)) == sleeper_rows(again, version)


def test_iceberg_metadata_publishes_on_request_when_publishing_is_off(tmp_path: Path) -> None:
    table = ss.Catalog.local(str(tmp_path / "wh")).create_table("db.t", SCHEMA)
    with pytest.raises(ss.NoSnapshotsError, match="write to it first"):
        table.iceberg_metadata()
    table.write(rows((1, "a", 1.0)))
    table.write(rows((2, "a", 2.0)))
    uri = table.iceberg_metadata(2)
    assert uri == f"file://{table.location}/metadata/v2.metadata.json"
    assert iceberg_rows(uri) == [(1, "a", 1.0)]
    assert iceberg_rows(table.iceberg_metadata()) == [(1, "a", 1.0), (2, "a", 2.0)]
    with pytest.raises(ss.SnapshotNotFoundError):
        table.iceberg_metadata(9)


def test_a_sql_catalog_gets_the_table_and_each_new_version(tmp_path: Path) -> None:
    properties = {"type": "sql", "uri": f"sqlite:///{tmp_path}/iceberg.db", "warehouse": f"file://{tmp_path}"}
    table = published_table(tmp_path, iceberg_publish=True, iceberg_catalog=properties)
    table.write(rows((1, "a", 1.0), (2, "b", 2.0)))
    assert table.publishing.flush(timeout=60)
    iceberg = load_catalog("sleeper", **properties)
    assert iceberg.load_table(("db", "t")).current_snapshot().snapshot_id == 2  # type: ignore[union-attr]
    table.add_columns(pa.schema([("note", pa.string())]))
    table.write(pa.table({"id": [3], "day": ["c"], "value": [3.0], "note": ["x"]}), mode="overwrite")
    assert table.publishing.flush(timeout=60)
    loaded = iceberg.load_table(("db", "t"))
    assert loaded.current_snapshot().snapshot_id == 4  # type: ignore[union-attr]
    assert loaded.scan().to_arrow().to_pylist() == [{"id": 3, "day": "c", "value": 3.0, "note": "x"}]
    assert loaded.scan(snapshot_id=2).to_arrow().num_rows == 2
    assert [f.name for f in loaded.schema().fields] == ["id", "day", "value", "note"]


def test_a_catalog_table_of_the_same_name_that_is_another_table_is_left_alone(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    properties = {"type": "sql", "uri": f"sqlite:///{tmp_path}/iceberg.db", "warehouse": f"file://{tmp_path}"}
    iceberg = load_catalog("sleeper", **properties)
    iceberg.create_namespace("db")
    iceberg.create_table(("db", "t"), schema=SCHEMA, location=f"file://{tmp_path}/other")
    table = published_table(tmp_path, iceberg_publish=True, iceberg_catalog=properties)
    with caplog.at_level(logging.WARNING, logger="sleeper_spark"):
        assert table.write(rows((1, "a", 1.0))).version == 2
        assert table.publishing.flush(timeout=60)
    assert "already has a table db.t that is not sleeper table 'db.t'" in caplog.text
    assert iceberg.load_table(("db", "t")).current_snapshot() is None
    assert iceberg_rows(table.iceberg_metadata()) == [(1, "a", 1.0)]  # beside the table it was published


def test_vacuum_expires_the_snapshots_whose_files_it_deleted(tmp_path: Path) -> None:
    properties = {"type": "sql", "uri": f"sqlite:///{tmp_path}/iceberg.db", "warehouse": f"file://{tmp_path}"}
    table = published_table(tmp_path, iceberg_publish=True, iceberg_catalog=properties)
    table.write(rows((1, "a", 1.0)))  # 2
    table.write(rows((2, "b", 2.0)))  # 3
    table.write(rows((3, "a", 3.0)), mode="overwrite")  # 4: 2 and 3's files are garbage
    table.write(rows((4, "b", 4.0)))  # 5: the floor, everything committed before "now" is older
    assert table.publishing.flush(timeout=60)
    before = {p.name for p in metadata_dir(table).iterdir()}
    report = vacuum(table, older_than=timedelta(0), now=LATER)
    metadata = StaticTable.from_metadata(table.iceberg_metadata()).metadata
    assert [s.snapshot_id for s in metadata.snapshots] == [5]
    gone = {Path(key).name for key in report.deleted if key.startswith("metadata/")}
    # Version 4's manifest of its own files is still listed by version 5; the rest only served 2..4.
    assert gone == {"v2.metadata.json", "v3.metadata.json", "v4.metadata.json", "snap-2.avro", "snap-3.avro",
                    "snap-4.avro", "manifest-2-at-2.avro", "manifest-3-at-3.avro", "manifest-2-at-4.avro",
                    "manifest-3-at-4.avro"} and gone <= before
    assert iceberg_rows(table.iceberg_metadata()) == [(3, "a", 3.0), (4, "b", 4.0)]
    with pytest.raises(ss.SnapshotNotFoundError, match="vacuum expired it"):
        table.iceberg_metadata(4)
    loaded = load_catalog("sleeper", **properties).load_table(("db", "t"))
    assert [s.snapshot_id for s in loaded.snapshots()] == [5]
    table.write(rows((5, "a", 5.0)))  # publishing goes on without the expired snapshots
    assert [s.snapshot_id for s in StaticTable.from_metadata(table.iceberg_metadata()).metadata.snapshots] == [5, 6]
    assert table.publish_iceberg(rebuild=True) == 6  # and a rebuild leaves them out too
    assert [s.snapshot_id for s in StaticTable.from_metadata(table.iceberg_metadata()).metadata.snapshots] == [5, 6]
    assert iceberg_rows(table.iceberg_metadata()) == sleeper_rows(table)


def test_log_truncation_expires_the_versions_it_cut(tmp_path: Path) -> None:
    table = published_table(tmp_path)
    for i in range(4):
        table.write(rows((i, "a", float(i))))  # 3..6
    table.create_state_snapshot()  # at 6
    table.write(rows((9, "b", 9.0)))  # 7
    report = truncate_log(table, now=LATER, keep_versions_after=timedelta(0), safety_margin=0)
    assert report.first_transaction == 7
    metadata = StaticTable.from_metadata(table.iceberg_metadata()).metadata
    assert [s.snapshot_id for s in metadata.snapshots] == [6, 7]
    # A rebuild starts from the oldest version the log still rebuilds.
    assert table.publish_iceberg(rebuild=True) == 7
    rebuilt = StaticTable.from_metadata(table.iceberg_metadata()).metadata
    assert [s.snapshot_id for s in rebuilt.snapshots] == [6, 7]
    assert iceberg_rows(table.iceberg_metadata()) == sleeper_rows(table)


def test_the_command_line_syncs_and_shows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    warehouse = str(tmp_path / "wh")
    table = ss.Catalog.local(warehouse).create_table("db.t", SCHEMA)
    table.write(rows((1, "a", 1.0)))
    assert cli_main(["--warehouse", warehouse, "iceberg", "sync", "db.t", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == {"table": "db.t", "version": 2, "metadata": f"file://{table.location}/metadata/v2.metadata.json"}
    assert cli_main(["--warehouse", warehouse, "iceberg", "show", "db.t", "--version", "2"]) == 0
    assert capsys.readouterr().out.strip() == out["metadata"]


def test_publishing_runs_behind_the_commit_and_a_process_exit_waits_for_it(tmp_path: Path) -> None:
    warehouse = tmp_path / "wh"
    script = f"""
import pyarrow as pa
import sleeper_spark as ss
table = ss.Catalog.local({str(warehouse)!r}, iceberg_publish=True).create_table("db.t", pa.schema([("id", pa.int64())]))
for i in range(3):
    table.write(pa.table({{"id": [i]}}))
# no flush: the interpreter's exit waits for the publishing thread
"""
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    table = ss.Catalog.local(str(warehouse)).table("db.t")
    hint = Path(table.location) / "metadata" / "version-hint.text"
    assert hint.read_text() == "4"
    assert len(StaticTable.from_metadata(table.iceberg_metadata()).scan().to_arrow()) == 3
    # And in a process that goes on, the thread ends once idle.
    table.set_properties({"iceberg.publish": "true"})
    assert table.publishing.flush(timeout=60)
    time.sleep(IDLE_EXIT_S)
    # It ends after IDLE_EXIT_S idle; how soon after is the scheduler's business, so wait for it.
    deadline = time.monotonic() + 60
    while [t for t in threading.enumerate() if t.name.startswith("sleeper-publish-")]:
        assert time.monotonic() < deadline, "the publishing thread did not end once idle"
        time.sleep(0.05)


def test_glue_gets_the_table_as_athena_would_find_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # moto's Glue, one client at a time (its conditional updates are not a race-safe stand-in)
    moto_server = pytest.importorskip("moto.server")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "test")
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        properties = {"type": "glue", "glue.endpoint": f"http://{host}:{port}", "glue.region": "us-east-1",
                      "glue.access-key-id": "test", "glue.secret-access-key": "test"}
        catalog = ss.Catalog.local(str(tmp_path / "wh"), iceberg_publish=True, iceberg_catalog=properties)
        table = catalog.create_table("lake.events", SCHEMA, partition_by=["day"])
        table.write(rows((1, "a", 1.0), (2, "b", 2.0)))
        table.add_columns(pa.schema([("note", pa.string())]))
        table.write(pa.table({"id": [3], "day": ["c"], "value": [3.0], "note": ["x"]}), mode="overwrite")
        assert table.publishing.flush(timeout=60)
        glue = load_catalog("glue", **properties)
        assert glue.list_namespaces() == [("lake",)]
        loaded = glue.load_table(("lake", "events"))
        assert [s.snapshot_id for s in loaded.snapshots()] == [2, 3, 4]
        assert loaded.scan().to_arrow().to_pylist() == [{"id": 3, "day": "c", "value": 3.0, "note": "x"}]
        assert loaded.scan(snapshot_id=2).to_arrow().num_rows == 2
    finally:
        server.stop()


def test_a_publisher_behind_a_log_truncation_publishes_afresh_from_what_the_log_holds(tmp_path: Path) -> None:
    # Given a publisher that published version 3, then versions it did not publish (publishing off)
    table = published_table(tmp_path)
    table.write(rows((1, "a", 1.0)))  # 3
    assert table.publishing.flush(timeout=60)
    table.set_properties({"iceberg.publish": "false"})  # 4
    table.write(rows((2, "b", 2.0)))  # 5
    table.write(rows((3, "a", 3.0)))  # 6
    table.create_state_snapshot()  # at 6
    table.write(rows((4, "b", 4.0)))  # 7
    # When the log is cut past the versions it had yet to publish, and it publishes again
    assert truncate_log(table, now=LATER, keep_versions_after=timedelta(0), safety_margin=0).first_transaction == 7
    assert table.publish_iceberg() == 7
    # Then it started afresh from the oldest version the log rebuilds, rather than failing for good
    metadata = StaticTable.from_metadata(table.iceberg_metadata()).metadata
    assert [s.snapshot_id for s in metadata.snapshots] == [6, 7]
    assert iceberg_rows(table.iceberg_metadata()) == sleeper_rows(table)
    assert iceberg_rows(table.iceberg_metadata(6)) == sleeper_rows(table, 6)

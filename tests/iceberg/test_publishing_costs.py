"""What keeps publishing cheap, and that it writes what pyiceberg's own writers would: manifests in
blocks of many entries (through a private part of pyiceberg's ManifestWriter, pinned here),
manifest lists that repeat the records already encoded, table metadata built without
revalidation, and a long catch-up that writes only its last metadata JSON and derives the others
when asked."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.manifest import (
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    write_manifest,
)
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table import StaticTable
from pyiceberg.table.metadata import TableMetadataV2
from pyiceberg.transforms import IdentityTransform
from pyiceberg.typedef import Record
from pyiceberg.types import LongType, NestedField, StringType

import sleeper_spark as ss
from sleeper_spark.iceberg.avro_files import (
    CODEC,
    ENTRIES_PER_BLOCK,
    FORMAT_VERSION,
    MemoryOutput,
    existing_manifest_bytes,
    manifest_bytes,
    manifest_list_bytes,
    read_data_files,
    read_manifests,
)
from sleeper_spark.iceberg.publisher import EVERY_JSON_UP_TO
from sleeper_spark.iceberg.versions import MAX_MANIFESTS, Files, next_version
from sleeper_spark.maintenance.replacement import commit_replacement
from sleeper_spark.models import ColumnStats, FileRef

SCHEMA = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "day", StringType(), required=False))
SPEC = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="day"), spec_id=0)
ROWS = pa.schema([("id", pa.int64()), ("day", pa.string())])


def entry(i: int) -> ManifestEntry:
    data_file = DataFile.from_args(content=DataFileContent.DATA, file_path=f"file:///t/part-{i}.parquet",
                                   file_format=FileFormat.PARQUET, partition=Record(f"day-{i % 3}"),
                                   record_count=10 + i, file_size_in_bytes=1000 + i,
                                   lower_bounds={1: i.to_bytes(8, "little")}, upper_bounds={1: (i + 9).to_bytes(8, "little")})
    status = [ManifestEntryStatus.EXISTING, ManifestEntryStatus.DELETED, ManifestEntryStatus.EXISTING][i % 3]
    return ManifestEntry.from_args(status=status, snapshot_id=i % 5 + 1, sequence_number=i % 5 + 1,
                                   file_sequence_number=i % 5 + 1, data_file=data_file)


def description(manifest: ManifestFile) -> tuple[Any, ...]:
    """What a manifest list says of a manifest, but its path and length."""
    return (manifest.partition_spec_id, manifest.content, manifest.sequence_number, manifest.min_sequence_number,
            manifest.added_snapshot_id, manifest.added_files_count, manifest.existing_files_count,
            manifest.deleted_files_count, manifest.added_rows_count, manifest.existing_rows_count,
            manifest.deleted_rows_count, manifest.partitions, manifest.key_metadata)


def test_manifests_are_written_in_blocks_and_described_as_pyiceberg_describes_them(tmp_path: Path) -> None:
    count = 2 * ENTRIES_PER_BLOCK + 5
    path = tmp_path / "ours.avro"
    ours, data, _ = manifest_bytes(f"file://{path}", SPEC, SCHEMA, 7, (entry(i) for i in range(count)))
    path.write_bytes(data)
    # An Avro file ends every block with the sync marker its header ends with.
    assert data.count(data[-16:]) - 1 == 3
    theirs_output = MemoryOutput(f"file://{path}")
    with write_manifest(FORMAT_VERSION, SPEC, SCHEMA, theirs_output, 7, CODEC) as writer:
        for i in range(count):
            writer.add_entry(entry(i))
    theirs = writer.to_manifest_file()
    assert theirs_output.data.count(theirs_output.data[-16:]) - 1 == count  # one block an entry
    assert ours.manifest_length < theirs.manifest_length
    assert description(ours) == description(theirs)
    read = ours.fetch_manifest_entry(PyArrowFileIO(), discard_deleted=False)
    assert [(e.status, e.snapshot_id, e.sequence_number, e.data_file.file_path, e.data_file.record_count,
             e.data_file.partition, e.data_file.lower_bounds) for e in read] == [
        (e.status, e.snapshot_id, e.sequence_number, e.data_file.file_path, e.data_file.record_count,
         e.data_file.partition, e.data_file.lower_bounds) for e in map(entry, range(count))]


def test_a_manifest_list_repeats_the_records_it_encoded_before(tmp_path: Path) -> None:
    first, _, _ = manifest_bytes(f"file://{tmp_path}/a.avro", SPEC, SCHEMA, 3, [entry(0), entry(2)])
    second, _, _ = manifest_bytes(f"file://{tmp_path}/b.avro", SPEC, SCHEMA, 4, [entry(3)])
    encoded: dict[str, bytes] = {}
    listed = read_manifests("list", manifest_list_bytes("list", 3, None, 3, [first], encoded))
    assert list(encoded) == [first.manifest_path] and listed[0].sequence_number == 3
    first.sequence_number = 3  # as publishing keeps it for the next list
    again = read_manifests("list", manifest_list_bytes("list", 4, 3, 4, [first, second], encoded))
    fresh = read_manifests("list", manifest_list_bytes("list", 4, 3, 4, [first, second], {}))
    assert again == fresh and [m.sequence_number for m in again] == [3, 4]
    assert [m.added_files_count + m.existing_files_count for m in again] == [2, 1]


def table_with_versions(tmp_path: Path, writes: int) -> ss.Table:
    table = ss.Catalog.local(str(tmp_path / "wh")).create_table("db.t", ROWS, partition_by=["day"])
    for i in range(writes):
        table.write(pa.table({"id": [i], "day": [f"d{i % 3}"]}, schema=ROWS))
    table.delete_where(None, pc.field("id") == 1)
    return table


def metadata(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text()))


def test_a_long_catch_up_writes_its_last_metadata_and_derives_the_others_when_asked(tmp_path: Path) -> None:
    table = table_with_versions(tmp_path, EVERY_JSON_UP_TO + 4)
    newest = table.latest().version
    assert table.publish_iceberg(rebuild=True) == newest
    folder = Path(table.location) / "metadata"
    # The first version's (it starts the rebuild) and the last one's.
    assert sorted(p.name for p in folder.glob("v*.metadata.json")) == ["v2.metadata.json", f"v{newest}.metadata.json"]
    assert (folder / "version-hint.text").read_text() == str(newest)
    for version in (2, 5, newest - 1):
        read = StaticTable.from_metadata(table.iceberg_metadata(version)).scan().to_arrow()
        assert sorted(read.column("id").to_pylist()) == sorted(table.scan(version=version).column("id").to_pylist())
    derived = metadata(folder / "v5.metadata.json")
    # Published one version at a time, each version's metadata JSON is written: the same but for the log.
    for path in folder.iterdir():
        path.unlink()
    publisher = ss.Catalog.local(str(tmp_path / "wh")).table("db.t").iceberg.publisher()  # nothing cached
    for version in range(2, 6):
        publisher.publish(table.head.state_at(version))
    written = metadata(folder / "v5.metadata.json")
    assert [e["metadata-file"].rsplit("/", 1)[1] for e in written.pop("metadata-log")] == [
        "v2.metadata.json", "v3.metadata.json", "v4.metadata.json"]
    assert [e["metadata-file"].rsplit("/", 1)[1] for e in derived.pop("metadata-log")] == ["v2.metadata.json"]
    assert derived == written


def test_table_metadata_built_without_validation_is_what_validation_makes(tmp_path: Path) -> None:
    table = table_with_versions(tmp_path, 3)
    table.add_columns(pa.schema([("note", pa.string())]))
    table.write(pa.table({"id": [9], "day": ["d1"], "note": ["x"]}))
    text = Path(table.iceberg_metadata().removeprefix("file://")).read_text()
    validated = TableMetadataV2.model_validate_json(text)
    assert json.loads(validated.model_dump_json(by_alias=True, exclude_none=True)) == json.loads(text)


def synthetic_files(table: ss.Table, first: int, count: int) -> list[FileRef]:
    """Files that are never read: publishing takes their facts from the log, and planning a scan
    reads only the manifests."""
    return [FileRef(path=f"data/day=d{n % 3}/part-{n}.parquet", partition={"day": f"d{n % 3}"}, size_bytes=100 + n,
                    row_count=10, checksum=f"sha256:{n:064x}",
                    column_stats={"id": ColumnStats(min=n * 10, max=n * 10 + 9)})
            for n in range(first, first + count)]


def planned(uri: str) -> list[str]:
    return sorted(task.file.file_path.rsplit("/", 1)[1] for task in StaticTable.from_metadata(uri).scan().plan_files())


def test_manifests_are_merged_beyond_the_limit_keeping_every_file_and_its_snapshot(tmp_path: Path) -> None:
    table = ss.Catalog.local(str(tmp_path / "wh")).create_table("db.t", ROWS, partition_by=["day"])
    for i in range(MAX_MANIFESTS + 30):
        table.commit_files(synthetic_files(table, 2 * i, 2), "append", {}, uuid.uuid4().hex)
    commit_replacement(table, "delete", ["data/day=d0/part-0.parquet", "data/day=d2/part-101.parquet"], [])
    newest = table.publish_iceberg(rebuild=True)
    current = StaticTable.from_metadata(table.iceberg_metadata()).current_snapshot()
    assert current is not None
    manifests = current.manifests(PyArrowFileIO())
    assert len(manifests) <= MAX_MANIFESTS
    assert any(m.existing_files_count for m in manifests)  # merged ones list their files as EXISTING
    for manifest in manifests:
        for entry in manifest.fetch_manifest_entry(PyArrowFileIO()):
            added = int(entry.data_file.file_path.rsplit("-", 1)[1].split(".")[0]) // 2 + 2  # commit i is version i + 2
            assert (entry.snapshot_id, entry.sequence_number) == (added, added)
    for version in (MAX_MANIFESTS, MAX_MANIFESTS + 10, newest - 1, newest):
        assert planned(table.iceberg_metadata(version)) == sorted(
            f.path.rsplit("/", 1)[1] for f in table.files(version=version))


def test_a_rewritten_manifest_takes_its_data_files_back_from_the_stored_one_as_building_them_would(
        tmp_path: Path) -> None:
    table = table_with_versions(tmp_path, 4)  # the last version deletes a file
    newest = table.latest().version
    publisher = table.iceberg.publisher()
    publisher.publish(table.head.state_at(newest - 1))
    before = publisher.last
    assert before is not None

    def stored(manifest: ManifestFile) -> dict[str, DataFile]:
        return read_data_files(manifest.manifest_path, Path(manifest.manifest_path.removeprefix("file://")).read_bytes())

    built, reread = Files(), Files()
    fresh = next_version(before, table.head.state_at(newest), table.table_id, built)
    again = next_version(before, table.head.state_at(newest), table.table_id, reread, stored)
    rewritten = [k for k, m in fresh.manifests.items() if m.deleted_files_count]
    assert rewritten and built.objects.keys() == reread.objects.keys()
    for group in rewritten:
        ours, theirs = fresh.manifests[group], again.manifests[group]
        assert description(ours) == description(theirs)
        key = ours.manifest_path.rsplit("/", 1)[1]
        assert read_data_files("m", built.objects[f"metadata/{key}"]) == read_data_files(
            "m", reread.objects[f"metadata/{key}"])


def test_a_merge_from_stored_records_writes_what_encoding_the_entries_again_writes(tmp_path: Path) -> None:
    def added(i: int) -> ManifestEntry:
        return ManifestEntry.from_args(status=ManifestEntryStatus.ADDED, snapshot_id=5, sequence_number=None,
                                       file_sequence_number=None, data_file=entry(i).data_file)

    _, _, stored = manifest_bytes(f"file://{tmp_path}/a.avro", SPEC, SCHEMA, 5, [added(i) for i in range(7)])
    assert stored is not None and [s.origin for s in stored] == [5] * 7
    ours, data = existing_manifest_bytes(f"file://{tmp_path}/ours.avro", SPEC, SCHEMA, 9, stored)
    theirs, their_data, _ = manifest_bytes(f"file://{tmp_path}/theirs.avro", SPEC, SCHEMA, 9, [
        ManifestEntry.from_args(status=ManifestEntryStatus.EXISTING, snapshot_id=5, sequence_number=5,
                                file_sequence_number=5, data_file=entry(i).data_file) for i in range(7)])
    assert description(ours) == description(theirs)
    (tmp_path / "ours.avro").write_bytes(data)
    (tmp_path / "theirs.avro").write_bytes(their_data)

    def read(manifest: ManifestFile) -> list[tuple[Any, ...]]:
        return [(e.status, e.snapshot_id, e.sequence_number, e.file_sequence_number, e.data_file)
                for e in manifest.fetch_manifest_entry(PyArrowFileIO(), discard_deleted=False)]

    assert read(ours) == read(theirs) and read(ours)[0][:4] == (ManifestEntryStatus.EXISTING, 5, 5, 5)

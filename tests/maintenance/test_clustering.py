"""Clustered tables on the local catalog: the columns, the compaction that clusters, and its increments."""

from __future__ import annotations

import json
import random

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import sleeper_spark as ss
from sleeper_spark.datafiles.pruning import prune_table
from sleeper_spark.maintenance.clustering import merged_run
from sleeper_spark.models import FileRef

SCHEMA = pa.schema([("id", pa.int64()), ("a", pa.int64()), ("b", pa.string()), ("day", pa.string()),
                    ("tags", pa.list_(pa.string())), ("point", pa.struct([("x", pa.int64())])),
                    ("raw", pa.binary())])


def random_rows(rng: random.Random, start: int, count: int, days: tuple[str, ...] = ("d1",)) -> pa.Table:
    ids = list(range(start, start + count))
    return pa.table({
        "id": ids, "a": [rng.randrange(10_000) for _ in ids], "b": [f"k{rng.randrange(10_000):05d}" for _ in ids],
        "day": [rng.choice(days) for _ in ids], "tags": [[str(i % 3)] for i in ids],
        "point": [{"x": i} for i in ids], "raw": [str(i).encode() for i in ids],
    }, schema=SCHEMA)


def clustered_table(catalog: ss.Catalog, rng: random.Random, appends: int = 12, rows: int = 500,
                    days: tuple[str, ...] = ("d1",)) -> ss.Table:
    table = catalog.create_table("events", SCHEMA, partition_by=["day"], cluster_by=["a", "b"])
    for k in range(appends):
        table.write(random_rows(rng, k * rows, rows, days))
    return table


def files_read(table: ss.Table, where: pc.Expression) -> int:
    state = table.state()
    return prune_table(state.files.table(), state.schema, state.partition_by, where).num_rows


def ids(data: pa.Table) -> list[int]:
    return sorted(data.column("id").to_pylist())


def target_for(table: ss.Table, files: int) -> int:
    """A target size that cuts the table's rows into about ``files`` files."""
    return max(1, sum(f.size_bytes for f in table.files()) // files)


def test_the_clustering_columns_are_a_property_set_at_creation_and_changed_without_rewriting(
        local_catalog: ss.Catalog) -> None:
    table = local_catalog.create_table("events", SCHEMA, partition_by=["day"], cluster_by=["a", "b"])
    assert json.loads(table.state().properties["clustering.columns"]) == ["a", "b"]
    table.write(random_rows(random.Random(1), 0, 10))
    files = {f.path for f in table.files()}
    snapshot = table.set_clustering(["b"])
    assert snapshot.operation == "properties" and snapshot.files_added == snapshot.files_removed == 0
    assert json.loads(table.state().properties["clustering.columns"]) == ["b"]
    table.set_clustering([])
    assert "clustering.columns" not in table.state().properties
    assert {f.path for f in table.files()} == files


@pytest.mark.parametrize(("columns", "message"), [
    (["nope"], "clustering column 'nope' is not in the schema"),
    (["day"], "'day' is a partition column"),
    (["point"], "cannot cluster by 'point' of type struct"),
    (["tags"], "cannot cluster by 'tags' of type list"),
    (["a", "a"], "clustering columns repeat"),
    (["a", "b", "id", "raw", "day"], "'day' is a partition column"),
    (["a", "b", "id", "raw", "a"], "at most 4 clustering columns"),
    ("a", "clustering columns are a list of names"),
])
def test_columns_that_cannot_cluster_are_refused_before_anything_commits(
        local_catalog: ss.Catalog, columns: list[str], message: str) -> None:
    table = local_catalog.create_table("events", SCHEMA, partition_by=["day"])
    with pytest.raises(ss.SchemaMismatchError, match=message):
        local_catalog.create_table("refused", SCHEMA, partition_by=["day"], cluster_by=columns)
    assert local_catalog.tables() == ["events"]
    version = table.state().version
    with pytest.raises(ss.SchemaMismatchError, match=message):
        table.set_clustering(columns)
    assert table.state().version == version


def test_the_property_set_directly_is_checked_the_same_way(local_catalog: ss.Catalog) -> None:
    table = local_catalog.create_table("events", SCHEMA, partition_by=["day"])
    with pytest.raises(ss.SchemaMismatchError, match="holds a JSON list of column names"):
        table.set_properties({"clustering.columns": "a,b"})
    with pytest.raises(ss.SchemaMismatchError, match="'day' is a partition column"):
        table.set_properties({"clustering.columns": '["day"]'})
    table.set_properties({"clustering.columns": '["a"]'})
    assert json.loads(table.state().properties["clustering.columns"]) == ["a"]


def test_a_clustering_column_cannot_be_dropped_until_the_clustering_changes(local_catalog: ss.Catalog) -> None:
    table = local_catalog.create_table("events", SCHEMA, partition_by=["day"], cluster_by=["a", "b"])
    with pytest.raises(ss.SchemaMismatchError, match="'a' is a clustering column"):
        table.drop_column("a")
    table.set_clustering(["b"])
    table.drop_column("a")
    assert "a" not in table.schema.names


def test_a_compaction_clusters_so_that_narrow_ranges_read_few_files(local_catalog: ss.Catalog) -> None:
    # Given a clustered table written in random order, two partitions of 3,000 rows each
    rng = random.Random(3)
    table = clustered_table(local_catalog, rng, days=("d1", "d2"))
    before_rows = table.scan()
    everything = len(table.files())
    slabs = [(start, start + 100) for start in (rng.randrange(9900) for _ in range(20))]  # 1 % ranges of a
    assert all(files_read(table, (pc.field("a") >= lo) & (pc.field("a") < hi)) == everything for lo, hi in slabs)

    # When it is compacted into about 16 files a partition (sorted rows compress better than these)
    snapshot = table.compact(None, target_file_bytes=target_for(table, 64))

    # Then every file was rewritten in one "compact" snapshot that records the clustering
    assert snapshot is not None and snapshot.operation == "compact" and snapshot.files_removed == everything
    assert json.loads(snapshot.metadata["clustering.columns"]) == ["a", "b"]
    assert snapshot.metadata["clustering.curve"] == "hilbert"
    # And the rows are the same, and every filter reads what the raw rows give
    assert ids(table.scan()) == ids(before_rows)
    for where in ((pc.field("a") >= 5000) & (pc.field("a") < 5100), pc.field("b") < "k00500",
                  (pc.field("a") < 2500) & (pc.field("b") >= "k07500"), pc.field("a").is_null(), pc.field("id") == 17):
        assert ids(table.scan(filter=where)) == ids(before_rows.filter(where)), where
    # And a 1 % range of one of the two columns opens on average well under half of the files
    # (cells of a 4 x 4 grid: a range inside one column of cells opens 4 of 16)
    clustered_files = len(table.files())
    assert 20 <= clustered_files <= 80, clustered_files
    opened = [files_read(table, (pc.field("a") >= lo) & (pc.field("a") < hi)) / clustered_files for lo, hi in slabs]
    assert sum(opened) / len(opened) <= 0.4, opened
    assert table.verify().ok


def test_a_compaction_after_an_append_clusters_about_the_append(local_catalog: ss.Catalog) -> None:
    # Given a clustered, compacted table of 6,000 rows
    rng = random.Random(5)
    table = clustered_table(local_catalog, rng)
    target = target_for(table, 16)
    table.compact(None, target_file_bytes=target)
    clustered = {f.path for f in table.files()}
    table_bytes = sum(f.size_bytes for f in table.files())

    # When 10 % more rows are appended and it is compacted again
    table.write(random_rows(rng, 100_000, 600))
    appended = {f.path for f in table.files()} - clustered
    snapshot = table.compact(None, target_file_bytes=target)

    # Then only the appended file was rewritten: the clustered run stays
    assert snapshot is not None and set(snapshot_removed(table, snapshot)) == appended
    assert clustered <= {f.path for f in table.files()}
    assert sum(f.size_bytes for f in table.files() if f.path not in clustered) < 0.25 * table_bytes
    # And a compaction with nothing new to cluster commits nothing
    assert table.compact(None, target_file_bytes=target) is None
    assert table.scan().num_rows == 6600


def test_small_runs_merge_as_appends_repeat(local_catalog: ss.Catalog) -> None:
    # Given a clustered table compacted after each of six appends of equal size
    rng = random.Random(9)
    table = clustered_table(local_catalog, rng, appends=1, rows=300)
    target = 4 * sum(f.size_bytes for f in table.files())
    runs = []
    for k in range(6):
        table.write(random_rows(rng, 1000 * (k + 1), 300))
        table.compact(None, target_file_bytes=target)
        runs.append(len({v for v in table.files_table().column("added_version").to_pylist()}))
    # Then runs of equal size merged (one, two files' worth, ...): the partition keeps few runs
    assert max(runs) <= 3, runs
    assert table.scan().num_rows == 7 * 300


def test_new_clustering_columns_recluster_every_file_on_the_next_compaction(local_catalog: ss.Catalog) -> None:
    rng = random.Random(11)
    table = clustered_table(local_catalog, rng, appends=4)
    target = target_for(table, 4)
    table.compact(None, target_file_bytes=target)
    files = {f.path for f in table.files()}
    table.set_clustering(["b"])
    snapshot = table.compact(None, target_file_bytes=target)
    assert snapshot is not None and set(snapshot_removed(table, snapshot)) == files
    assert json.loads(snapshot.metadata["clustering.columns"]) == ["b"]


def test_an_unclustered_table_compacts_small_files_as_before(local_catalog: ss.Catalog) -> None:
    table = local_catalog.create_table("plain", SCHEMA, partition_by=["day"])
    rng = random.Random(2)
    for k in range(4):
        table.write(random_rows(rng, 100 * k, 100))
    snapshot = table.compact(None)
    assert snapshot is not None and "clustering.columns" not in snapshot.metadata
    assert (snapshot.files_removed, snapshot.files_added) == (4, 1)


def file(path: str, size: int) -> FileRef:
    return FileRef(path=path, size_bytes=size, row_count=1, checksum="md5:0")


def test_the_new_run_takes_in_runs_up_to_twice_its_size_smallest_first() -> None:
    new = [file("n", 10)]
    small, equal, big = [file("s", 15)], [file("e1", 20), file("e2", 30)], [file("b", 500)]
    # 10 takes 15 (<= 20), then 25 holds 50 (<= 50), then 75 stops at 500
    assert [f.path for f in merged_run(new, [big, equal, small])] == ["n", "s", "e1", "e2"]
    assert [f.path for f in merged_run(new, [big])] == ["n"]


def snapshot_removed(table: ss.Table, snapshot: ss.Snapshot) -> list[str]:
    before = {f.path for f in table.files(version=snapshot.version - 1)}
    after = {f.path for f in table.files(version=snapshot.version)}
    return sorted(before - after)

"""The Parquet writer: rows land in files of the table's schema, one folder per partition value,
split at the target size into row groups of the asked size, each described (size, checksum, rows,
stats) by the bytes it really wrote; a failure leaves nothing behind."""

from __future__ import annotations

import datetime as dt
import decimal
import hashlib
import random
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from sleeper_spark.datafiles import partition_rows
from sleeper_spark.datafiles.paths import NULL_SEGMENT
from sleeper_spark.datafiles.writer import DataFileWriter
from sleeper_spark.errors import SchemaMismatchError
from sleeper_spark.models import FileRef, TableSchema
from sleeper_spark.storage import LocalObjectStore, NewObject

ROOT = "events"
UTC = dt.timezone.utc
ARROW = pa.schema([
    pa.field("id", pa.int64(), nullable=False), ("country", pa.string()), ("day", pa.date32()),
    ("score", pa.float64()), ("at", pa.timestamp("us", "UTC")), ("price", pa.decimal128(9, 2)),
    ("tags", pa.list_(pa.string())), ("point", pa.struct([("x", pa.int32()), ("y", pa.int32())])),
])
SCHEMA = TableSchema.from_arrow(ARROW)


@pytest.fixture
def store(tmp_path: Path) -> LocalObjectStore:
    return LocalObjectStore(tmp_path)


def writer(store: LocalObjectStore, partition_by: tuple[str, ...] = (), schema: TableSchema = SCHEMA,
           **sizes: int) -> DataFileWriter:
    return DataFileWriter(store, ROOT, schema, partition_by, "events", **sizes)


def rows(count: int, seed: int = 0, countries: tuple[str | None, ...] = ("uk", "fr")) -> pa.Table:
    """Rows of every column type, random enough that Parquet cannot compress them away."""
    rng = random.Random(seed)
    return pa.Table.from_pylist([{
        "id": rng.getrandbits(62), "country": countries[i % len(countries)],
        "day": dt.date(2024, 1, 1) + dt.timedelta(days=i % 3), "score": rng.random() if i % 7 else None,
        "at": dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(microseconds=rng.getrandbits(40)),
        "price": decimal.Decimal(rng.randrange(-10**8, 10**8)) / 100, "tags": [str(rng.random())] * (i % 3),
        "point": None if i % 5 == 0 else {"x": i, "y": -i},
    } for i in range(count)], schema=ARROW)


def read(store: LocalObjectStore, ref: FileRef) -> pa.Table:
    return pq.read_table(pa.BufferReader(store.get(f"{ROOT}/{ref.path}")))


def sort(table: pa.Table) -> pa.Table:
    return table.sort_by("id")


def test_every_row_lands_once_in_the_tables_schema(store: LocalObjectStore) -> None:
    # Given rows of every type, their columns in another order and one column as large_string
    data = rows(500)
    shuffled = data.select(list(reversed(data.column_names)))
    shuffled = shuffled.set_column(shuffled.schema.get_field_index("country"), "country",
                                   shuffled.column("country").cast(pa.large_string()))

    # When they are written in two batches
    refs = writer(store).write_all([shuffled.slice(0, 200), shuffled.slice(200).to_batches()[0]])

    # Then the files hold exactly the rows, in the table's column order and types
    written = pa.concat_tables([read(store, ref) for ref in refs])
    assert written.schema.remove_metadata() == ARROW
    assert sort(written).equals(sort(data))


def test_each_file_is_described_by_its_bytes(store: LocalObjectStore, tmp_path: Path) -> None:
    refs = writer(store, ("country",), target_file_bytes=8_000, row_group_rows=100).write_all([rows(2_000)])

    assert len(refs) > 2
    for ref in refs:
        data = (tmp_path / ROOT / ref.path).read_bytes()
        assert ref.checksum == f"sha256:{hashlib.sha256(data).hexdigest()}"
        assert ref.size_bytes == len(data)
        assert ref.row_count == pq.ParquetFile(pa.BufferReader(data)).metadata.num_rows
        assert ref.path.startswith("data/") and ref.path.endswith(".parquet")
    assert len({ref.path for ref in refs}) == len(refs)


def test_column_stats_are_those_of_each_files_rows(store: LocalObjectStore) -> None:
    refs = writer(store, ("country",), target_file_bytes=8_000, row_group_rows=100).write_all([rows(1_000)])

    for ref in refs:
        table = read(store, ref)
        for name in ("id", "score", "day", "price"):
            stats, column = ref.column_stats[name], table.column(name)
            bounds = pc.min_max(column)
            expected = [bounds["min"].as_py(), bounds["max"].as_py()]
            assert [stats.min, stats.max] == [v.isoformat() if isinstance(v, dt.date) else
                                              str(v) if isinstance(v, decimal.Decimal) else v for v in expected]
            assert stats.null_count == column.null_count
        assert ref.column_stats["point"].null_count == table.column("point").null_count
        assert (ref.column_stats["tags"].min, ref.column_stats["tags"].max) == (None, None)


def last_group_offset(metadata: pq.FileMetaData) -> int:
    """Where the file's last row group starts: how big the file was before it was written."""
    group = metadata.row_group(metadata.num_row_groups - 1)
    chunks = [group.column(i) for i in range(group.num_columns)]
    return min(c.dictionary_page_offset if c.has_dictionary_page else c.data_page_offset for c in chunks)


@pytest.mark.parametrize("batch_rows", [50, 3_000], ids=["small batches", "one big batch"])
def test_a_file_is_closed_once_it_reaches_the_target_size(store: LocalObjectStore, batch_rows: int) -> None:
    # Given a small target and row groups of 100 rows
    target = 20_000

    # When 3,000 rows of one partition are written
    data = rows(3_000, countries=("uk",))
    refs = writer(store, ("country",), target_file_bytes=target, row_group_rows=100).write_all(
        data.to_batches(batch_rows))

    # Then several files hold the rows; each but the last reached the target, and none went on
    # writing row groups once it had
    assert len(refs) > 2
    assert sum(ref.row_count for ref in refs) == 3_000
    assert all(ref.size_bytes >= target for ref in refs[:-1])
    for ref in refs:
        metadata = pq.ParquetFile(pa.BufferReader(store.get(f"{ROOT}/{ref.path}"))).metadata
        assert last_group_offset(metadata) < target


def test_row_groups_hold_the_asked_rows(store: LocalObjectStore) -> None:
    # Given batches of 40 rows and row groups of 100
    data = rows(1_000, countries=("uk",))

    # When they are written under a target no file reaches
    (ref,) = writer(store, row_group_rows=100).write_all(data.to_batches(40))

    # Then every row group holds 100 rows
    metadata = pq.ParquetFile(pa.BufferReader(store.get(f"{ROOT}/{ref.path}"))).metadata
    assert [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)] == [100] * 10


def test_a_big_batch_is_cut_into_row_groups_and_the_rest_is_one_last_group(store: LocalObjectStore) -> None:
    (ref,) = writer(store, row_group_rows=300).write_all([rows(1_000, countries=("uk",))])

    metadata = pq.ParquetFile(pa.BufferReader(store.get(f"{ROOT}/{ref.path}"))).metadata
    assert [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)] == [300, 300, 300, 100]


def test_interleaved_partitions_each_get_one_file_under_the_target(store: LocalObjectStore) -> None:
    data = rows(600, countries=("uk", "fr", "de"))

    refs = writer(store, ("country",), row_group_rows=64).write_all(data.to_batches(25))

    assert sorted(ref.partition["country"] for ref in refs) == ["de", "fr", "uk"]
    for ref in refs:
        table = read(store, ref)
        assert table.num_rows == 200 and table.column("country").unique().to_pylist() == [ref.partition["country"]]
        assert pq.ParquetFile(pa.BufferReader(store.get(f"{ROOT}/{ref.path}"))).metadata.num_row_groups > 1


@pytest.mark.parametrize(("value", "segment"), [
    ("uk", "uk"), (None, NULL_SEGMENT), (NULL_SEGMENT, "%5F_HIVE_DEFAULT_PARTITION__"), ("a/b", "a%2Fb"),
    ("..", "%2E%2E"), (".hidden", "%2Ehidden"), ("x y%=", "x%20y%25%3D"), ("日本", "%E6%97%A5%E6%9C%AC"),
    ("back\\slash", "back%5Cslash"), ("", ""),
])
def test_a_partition_value_gets_a_folder_of_its_own_inside_the_table(store: LocalObjectStore, tmp_path: Path,
                                                                     value: str | None, segment: str) -> None:
    # Given rows of one partition value, beside rows of another
    data = rows(20, countries=(value, "other"))

    # When they are written
    refs = writer(store, ("country",)).write_all([data])

    # Then the value's file sits in its escaped folder inside the table, holding only its rows
    (ref,) = [ref for ref in refs if ref.partition == {"country": value}]
    assert ref.path.rsplit("/", 1)[0] == f"data/country={segment}"
    assert (tmp_path / ROOT / ref.path).resolve().is_relative_to(tmp_path / ROOT / "data")
    assert read(store, ref).column("country").to_pylist() == [value] * 10


def test_a_long_partition_value_is_hashed_into_a_short_folder(store: LocalObjectStore) -> None:
    value = "é" * 500

    (ref,) = writer(store, ("country",)).write_all([rows(3, countries=(value,))])

    assert ref.partition == {"country": value}
    assert len(ref.path.split("/")[1].encode()) < 200
    assert read(store, ref).column("country").to_pylist() == [value] * 3


def test_partition_values_of_several_typed_columns(store: LocalObjectStore) -> None:
    schema = pa.schema([("flag", pa.bool_()), ("n", pa.int16()), ("day", pa.date32()), ("v", pa.int64())])
    data = pa.table({"flag": [True, False, None, True], "n": [-1, 7, 7, -1],
                     "day": [dt.date(2024, 2, 29)] * 4, "v": [1, 2, 3, 4]}, schema=schema)

    refs = writer(store, ("flag", "n", "day"), TableSchema.from_arrow(schema)).write_all([data])

    by_partition = {tuple(ref.partition.values()): ref for ref in refs}
    assert sorted(by_partition, key=str) == sorted([("true", "-1", "2024-02-29"), ("false", "7", "2024-02-29"),
                                                    (None, "7", "2024-02-29")], key=str)
    assert by_partition[("true", "-1", "2024-02-29")].path.startswith("data/flag=true/n=-1/day=2024-02-29/")
    assert by_partition[(None, "7", "2024-02-29")].path.startswith(f"data/flag={NULL_SEGMENT}/n=7/")
    assert read(store, by_partition[("true", "-1", "2024-02-29")]).column("v").to_pylist() == [1, 4]


def test_nanosecond_timestamps_are_written_with_bounds_around_them(store: LocalObjectStore) -> None:
    schema = pa.schema([("at", pa.timestamp("ns", "UTC"))])
    data = pa.table({"at": pa.array([1_700_000_000_000_000_001, 1_700_000_000_000_000_999], schema.field("at").type)})

    (ref,) = writer(store, schema=TableSchema.from_arrow(schema)).write_all([data])

    assert read(store, ref).equals(data)
    assert (ref.column_stats["at"].min, ref.column_stats["at"].max) == ("2023-11-14T22:13:20+00:00",
                                                                         "2023-11-14T22:13:20.000001+00:00")


@pytest.mark.parametrize("batches", [[], [rows(0)], [rows(0).to_batches()]], ids=["none", "empty table", "no batch"])
def test_no_rows_write_no_file(store: LocalObjectStore, batches: list[pa.Table]) -> None:
    flat = [b for batch in batches for b in (batch if isinstance(batch, list) else [batch])]

    assert writer(store, ("country",)).write_all(flat) == []
    assert list(store.list("")) == []


def test_nulls_in_a_column_that_is_not_nullable_write_nothing(store: LocalObjectStore) -> None:
    good = rows(10)
    bad = good.set_column(0, ARROW.field("id"), pa.array([None] + [1] * 9, pa.int64()))

    with pytest.raises(SchemaMismatchError, match=r"'id'.*not nullable"):
        writer(store, target_file_bytes=1).write_all([good, bad])

    assert list(store.list("")) == []


def test_data_of_another_type_is_refused(store: LocalObjectStore) -> None:
    data = rows(5)
    data = data.set_column(0, "id", pa.array(range(5), pa.int32()))

    with pytest.raises(SchemaMismatchError, match="column 'id' is int32, the table has int64"):
        writer(store).write_all([data])
    assert list(store.list("")) == []


def test_a_failing_source_removes_every_file_already_published(store: LocalObjectStore, tmp_path: Path) -> None:
    # Given batches that fail after enough rows to publish some files
    def batches() -> Iterator[pa.Table]:
        yield rows(1_000, seed=1)
        yield rows(1_000, seed=2)
        raise RuntimeError("the source broke")

    # When they are written with a tiny target, Then the error surfaces and no file remains
    with pytest.raises(RuntimeError, match="the source broke"):
        writer(store, ("country",), target_file_bytes=1, row_group_rows=100).write_all(batches())
    assert list(store.list("")) == []
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_partitions_written_side_by_side_hold_what_one_thread_writes(store: LocalObjectStore,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # Given batches big enough to be grouped in pieces on several threads (pieces made small here)
    monkeypatch.setattr(partition_rows, "MIN_PIECE_ROWS", 50)
    data = rows(1_200, countries=("uk", "fr", None, "de"))
    batches = [data.slice(0, 700), data.slice(700)]

    # When they are written on one thread and on four
    one = writer(store, ("country",), row_group_rows=128).write_all(batches)
    four = writer(store, ("country",), row_group_rows=128, threads=4).write_all(batches)

    # Then both give the same files, in the same order: each partition's rows in the order they came
    assert [ref.partition for ref in four] == [ref.partition for ref in one]
    for ref_one, ref_four in zip(one, four, strict=True):
        assert (ref_four.row_count, ref_four.column_stats) == (ref_one.row_count, ref_one.column_stats)
        expected = data.filter(pc.is_null(data.column("country")) if ref_one.partition["country"] is None
                               else pc.equal(data.column("country"), ref_one.partition["country"]))
        assert read(store, ref_four).equals(expected) and read(store, ref_one).equals(expected)


class _FailingStore(LocalObjectStore):
    """Fails to start any file of one partition."""

    def new_object(self, key: str) -> NewObject:
        if "/country=fr/" in key:
            raise OSError("disk full")
        return super().new_object(key)


def test_a_partition_failing_beside_others_leaves_no_file_behind(tmp_path: Path) -> None:
    # Given a store that fails the files of one partition, and files of others already published
    store = _FailingStore(tmp_path)
    data = rows(2_000, countries=("uk", "fr", "de", "es"))

    # When the partitions are written side by side, Then the error surfaces and no file remains
    with pytest.raises(OSError, match="disk full"):
        writer(store, ("country",), target_file_bytes=1, row_group_rows=100, threads=3).write_all([data])
    assert list(store.list("")) == []
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


class _FailingPublish(NewObject):
    def __init__(self, inner: NewObject) -> None:
        self._inner = inner

    def file(self) -> BinaryIO:
        return self._inner.file()

    def publish(self) -> None:
        self._inner.discard()
        raise OSError("sync failed")

    def discard(self) -> None:
        self._inner.discard()


class _FailingPublishStore(LocalObjectStore):
    """Fails to publish any file of one partition, once it is written."""

    def new_object(self, key: str) -> NewObject:
        inner = super().new_object(key)
        return _FailingPublish(inner) if "/country=fr/" in key else inner


@pytest.mark.parametrize("threads", [1, 3])
def test_a_file_failing_to_publish_beside_others_leaves_no_file_behind(tmp_path: Path, threads: int) -> None:
    # Given a store that fails to publish the files of one partition
    store = _FailingPublishStore(tmp_path)

    # When partitions are written, some of their files published before and after the failure
    with pytest.raises(OSError, match="sync failed"):
        writer(store, ("country",), target_file_bytes=1, row_group_rows=100, threads=threads).write_all(
            [rows(2_000, countries=("uk", "fr", "de", "es"))])

    # Then the error surfaces and no file remains
    assert list(store.list("")) == []
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []

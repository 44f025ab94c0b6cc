"""How a compaction reads its small files: many at once (``read_files``), with every check a
single read makes (size, checksum, decoding), the same rows in the same order, and exactly as
many rows as the log records, or nothing is rewritten."""

from __future__ import annotations

import hashlib
import logging

import pyarrow as pa
import pytest

import sleeper_spark as ss
from sleeper_spark.maintenance import rewrite
from sleeper_spark.table.reading import read_file, read_files
from tests.maintenance.tables import SCHEMA, data_files_on_disk, rows, table_of_appends

AUTO = {"compaction.auto": "true", "compaction.auto.min_files": "8"}


def flip_a_byte(table: ss.Table, file: ss.FileRef) -> None:
    """The file's bytes with one bit flipped in the middle: the same size, another checksum."""
    key = f"{table.root}/{file.path}"
    data = bytearray(table.store.get(key))
    data[len(data) // 2] ^= 0x10
    table.store.put(key, bytes(data))


def test_many_small_files_read_together_are_the_rows_of_each_file_in_order(local_catalog: ss.Catalog) -> None:
    # Given 30 one-row files, ten of them written before a column was added and the number widened
    schema = pa.schema([("day", pa.string()), ("n", pa.int32()), ("label", pa.string())])
    table = local_catalog.create_table("events", schema, partition_by=["day"])
    for seq in range(10):
        table.write(pa.table({"day": ["d1"], "n": [seq], "label": [f"row {seq}"]}, schema=schema))
    table.widen_column("n", pa.int64())
    table.add_columns([pa.field("note", pa.string())])
    wider = table.schema
    for seq in range(10, 30):
        table.write(pa.table({"day": ["d1"], "n": [seq], "label": [f"row {seq}"], "note": [f"n{seq}"]}, schema=wider))
    files = table.files()  # in commit order
    # When they are read together
    together = read_files(table.store, table.root, files, wider)
    # Then they are the rows each file reads as on its own, file after file, in the table's schema
    one_by_one = pa.concat_tables([read_file(table.store, table.root, f, wider, None, None) for f in files])
    assert together.schema == wider
    assert together.equals(one_by_one)
    assert together.column("n").to_pylist() == list(range(30))
    assert together.column("note").to_pylist() == [None] * 10 + [f"n{seq}" for seq in range(10, 30)]


def test_a_flipped_bit_in_one_of_many_small_files_fails_the_read_naming_it(local_catalog: ss.Catalog) -> None:
    # Given 20 small files, one of which has a flipped bit
    table = table_of_appends(local_catalog, 20, days=("d1",))
    files = table.files()
    victim = files[7]
    flip_a_byte(table, victim)
    # When they are read together, Then the read fails on the checksum, naming that file
    with pytest.raises(ss.CorruptDataFileError, match=rf"{victim.path.rsplit('/', 1)[1]}.*checksum"):
        read_files(table.store, table.root, files, table.schema)


def test_bytes_that_match_their_checksum_but_do_not_decode_fail_the_read_naming_the_file(
        local_catalog: ss.Catalog) -> None:
    # Given small files among which one's recorded size and checksum are those of bytes that are not Parquet
    table = table_of_appends(local_catalog, 5, days=("d1",))
    files = table.files()
    garbage = b"PAR1" + bytes(range(256)) * 3 + b"PAR1"
    table.store.put(f"{table.root}/data/day=d1/not-parquet.parquet", garbage)
    impostor = files[2].model_copy(update={"path": "data/day=d1/not-parquet.parquet", "size_bytes": len(garbage),
                                           "checksum": f"sha256:{hashlib.sha256(garbage).hexdigest()}"})
    # When they are read together, Then the read fails naming the file that cannot be decoded
    with pytest.raises(ss.CorruptDataFileError, match=r"not-parquet\.parquet cannot be read"):
        read_files(table.store, table.root, [*files[:2], impostor, *files[2:]], table.schema)


def test_a_missing_small_file_fails_the_read_naming_it(local_catalog: ss.Catalog) -> None:
    table = table_of_appends(local_catalog, 5, days=("d1",))
    files = table.files()
    table.store.delete(f"{table.root}/{files[3].path}")
    with pytest.raises(ss.StorageError, match=rf"{files[3].path.rsplit('/', 1)[1]} is missing"):
        read_files(table.store, table.root, files, table.schema)


def test_an_automatic_compaction_never_rewrites_a_damaged_small_file(local_catalog: ss.Catalog,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    # Given a table that compacts itself past 8 small files, whose fourth file was damaged
    table = local_catalog.create_table("events", SCHEMA, partition_by=["day"], properties=AUTO)
    for seq in range(8):
        table.write(rows(seq, 1, "d1"))
    victim = table.files()[3]
    flip_a_byte(table, victim)
    on_disk = data_files_on_disk(table)
    # When the append that makes the partition due lands
    with caplog.at_level(logging.WARNING, logger="sleeper_spark.maintenance.auto_compaction"):
        appended = table.write(rows(8, 1, "d1"))
        assert table.auto_compaction.flush(60)
    # Then the append stands, no compaction landed, the damaged file is still the one in the table,
    # no compacted file was left behind, and the warning names the file
    assert table.history()[-1].version == appended.version
    assert victim.path in {f.path for f in table.files()}
    assert data_files_on_disk(table) == on_disk | {f.path for f in table.files(appended.version)}
    assert "CorruptDataFileError" in caplog.text and victim.path.rsplit("/", 1)[1] in caplog.text


def test_a_compaction_whose_files_hold_other_row_counts_than_the_log_records_writes_nothing(
        local_catalog: ss.Catalog) -> None:
    # Given small files, one of which the log records with a row too many
    table = table_of_appends(local_catalog, 6, days=("d1",))
    files = table.files()
    files[4] = files[4].model_copy(update={"row_count": 2})
    state = table.state()
    job = rewrite.RewriteJob(catalog_options=local_catalog.options(), table_name=table.name, table_root=table.root,
                             schema=state.schema, partition_by=state.partition_by, target_file_bytes=2**27)
    on_disk = data_files_on_disk(table)
    # When they are compacted, Then the rewrite fails saying so, and no new file is left behind
    with pytest.raises(ss.CorruptDataFileError, match=r"hold 6 row.*the log records 7"):
        rewrite.rewrite_group(table.store, job, files)
    assert data_files_on_disk(table) == on_disk


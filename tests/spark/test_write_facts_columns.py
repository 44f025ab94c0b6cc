"""The driver turns executors' facts into the files table's columns and FileRef JSON without a
FileRef per file; what it makes must be what FileRefs built file by file (the reference below,
the driver's former path) give: the same state columns, and the same FileRefs out of the log."""

from __future__ import annotations

import json
import random
import string
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pydantic import TypeAdapter

import sleeper_spark as ss
from sleeper_spark.datafiles.stats import partition_value_to_string
from sleeper_spark.errors import SchemaMismatchError
from sleeper_spark.models import ColumnStats, DataType, Field, FileRef, TableSchema
from sleeper_spark.models.columnar import NewFiles
from sleeper_spark.models.stat_values import to_stat
from sleeper_spark.spark.native.native_write import commit_append, described_files
from sleeper_spark.spark.native.write_facts import described_rows, facts_table
from sleeper_spark.state.file_columns import FileLayout
from sleeper_spark.state.file_json import files_json

WRITE_DIR = "data/spark-w"
FILE_REFS = TypeAdapter(list[FileRef])
SCHEMA = TableSchema(fields=(
    Field(name="flag", type=DataType(name="bool")),
    Field(name="tiny", type=DataType(name="int8")),
    Field(name="i32", type=DataType(name="int32"), nullable=False),
    Field(name="i64", type=DataType(name="int64")),
    Field(name="f32", type=DataType(name="float32")),
    Field(name="f64", type=DataType(name="float64")),
    Field(name="s", type=DataType(name="string")),
    Field(name="day", type=DataType(name="date")),
    Field(name="local", type=DataType(name="timestamp", unit="us")),
    Field(name="utc", type=DataType(name="timestamp", unit="us", tz="UTC")),
    Field(name="paris", type=DataType(name="timestamp", unit="ns", tz="Europe/Paris")),
    Field(name="coarse", type=DataType(name="timestamp", unit="ms")),
    Field(name="money", type=DataType(name="decimal", precision=10, scale=2)),
    Field(name="wide", type=DataType(name="decimal", precision=38, scale=10)),
    Field(name="raw", type=DataType(name="binary")),
    Field(name="a.b c\"d", type=DataType(name="string")),
    Field(name="part", type=DataType(name="string")),
    Field(name="pday", type=DataType(name="date")),
))
PARTITION_BY = ("part", "pday")
FLOATS = ["Infinity", "-Infinity", "-0.0", "0.0", "1.0E-5", "4.9E-324", "1.7976931348623157E308", "1.0E10", "2.0",
          "123456.789", "0.1"]
STRINGS = ["", "a", 'quote"d', "back\\slash", "tab\there", "nul\x00", "ünï", "😀", "\u2028", "\x7f", "/"]


# -- the reference: a FileRef per file, as the driver made them before ---------------------


def reference_stored(type_: DataType, text: str) -> Any:
    name = type_.name
    if name == "bool":
        return text == "true"
    if name in ("int8", "int16", "int32", "int64"):
        return int(text)
    if name in ("float32", "float64"):
        return float(text)
    if name == "string":
        return text
    if name == "date":
        return to_stat(pa.scalar(int(text), pa.date32()).as_py())
    if name == "timestamp":
        return to_stat(pa.scalar(int(text), pa.timestamp("us", tz=type_.tz)).as_py())
    if name == "decimal":
        return to_stat(Decimal(text))
    return None


def reference_file_ref(record: dict[str, Any]) -> FileRef:
    stats = {}
    for field in SCHEMA.fields:
        reported = record["columns"][field.name]
        low, high = reported["min"], reported["max"]
        stats[field.name] = ColumnStats(min=None if low is None else reference_stored(field.type, low),
                                        max=None if high is None else reference_stored(field.type, high),
                                        null_count=reported["nulls"])
    partition = {name: None if stats[name].null_count == record["rows"] else partition_value_to_string(stats[name].min)
                 for name in PARTITION_BY}
    folder = f"{WRITE_DIR}/{record['dir']}" if record["dir"] else WRITE_DIR
    return FileRef(path=f"{folder}/{record['name']}", partition=partition, size_bytes=record["size"],
                   row_count=record["rows"], checksum=f"sha256:{record['sha256']}", column_stats=stats)


# -- random facts, as FactsOutputWriter reports them ---------------------------------------


def bound_text(rng: random.Random, type_: DataType) -> str | None:
    name = type_.name
    if name == "bool":
        return rng.choice(["true", "false"])
    if name in ("int8", "int32", "int64"):
        bits = {"int8": 8, "int32": 32, "int64": 64}[name]
        return str(rng.choice([-(2 ** (bits - 1)), 2 ** (bits - 1) - 1, 0, rng.randint(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)]))
    if name == "float64":
        return rng.choice([*FLOATS, repr(rng.uniform(-1e6, 1e6)), repr(rng.random() * 10.0 ** rng.randint(-300, 300))])
    if name == "float32":
        value = float(pa.array([rng.uniform(-1e6, 1e6)], pa.float32())[0].as_py())
        return rng.choice(["0.10000000149011612", "-0.0", "Infinity", "3.4028234663852886E38", repr(value)])
    if name == "string":
        return rng.choice([*STRINGS, "".join(rng.choice(string.printable) for _ in range(rng.randint(0, 12)))])
    if name == "date":
        return str(rng.choice([-719162, 2932896, 0, rng.randint(-719162, 2932896)]))
    if name == "timestamp":
        if type_.unit == "ns":  # what nanoseconds can hold
            return str(rng.randint(-9_000_000_000_000_000, 9_000_000_000_000_000))
        if type_.unit == "ms" and rng.random() < 0.5:
            return str(rng.randint(-62135596800000, 253402300799999) * 1000)
        return str(rng.choice([-62135596800000000, 253402300799999999, 0, rng.randint(-62135596800000000, 253402300799999999)]))
    if name == "decimal":
        assert type_.precision is not None and type_.scale is not None
        # Plain notation at the scale, as BigDecimal.toPlainString spells it (zero too: "0.00")
        digits = str(rng.randint(0, 10 ** rng.randint(0, type_.precision) - 1)).rjust(type_.scale + 1, "0")
        sign = rng.choice(["", "-"]) if digits.strip("0") else ""
        return f"{sign}{digits[:-type_.scale]}.{digits[-type_.scale:]}" if type_.scale else f"{sign}{digits}"
    return None


def random_record(rng: random.Random, index: int) -> dict[str, Any]:
    rows = rng.choice([1, 5, 1000])
    columns = {}
    for field in SCHEMA.fields:
        nulls = 0 if not field.nullable else rng.choice([0, 0, 1, rows])
        if field.name in PARTITION_BY:
            value = None if nulls == rows else bound_text(rng, field.type)
            nulls = rows if value is None else 0
            columns[field.name] = {"nulls": nulls, "min": value, "max": value}
            continue
        low = None if nulls == rows else bound_text(rng, field.type)
        high = None if low is None else bound_text(rng, field.type)
        columns[field.name] = {"nulls": nulls, "min": low, "max": high}
    return {"name": f"part-{index:05d}-{rng.randrange(10 ** 6)}.parquet", "dir": rng.choice(["", "__p=1", "__p=ü"]),
            "rows": rows, "size": rng.randint(0, 2 ** 40), "sha256": f"{rng.getrandbits(256):064x}", "columns": columns}


def lines_of(records: list[dict[str, Any]]) -> str:
    return "\n".join(json.dumps(r) for r in records)


def through_the_log(file: FileRef) -> FileRef:
    """What a reader of the log gets of a FileRef an AddFiles carried."""
    return FileRef.model_validate_json(file.model_dump_json(exclude_none=True))


@pytest.mark.parametrize("seed", range(6))
def test_columns_and_json_from_facts_match_the_file_by_file_fileRefs(seed: int) -> None:
    # Given random facts of many files, edge values and nulls included
    rng = random.Random(seed)
    records = [random_record(rng, i) for i in range(200)]
    layout = FileLayout(SCHEMA, PARTITION_BY)

    # When the driver turns them into the files table's rows and their JSON
    rows, finer = described_rows(facts_table(lines_of(records), WRITE_DIR, SCHEMA), layout, "t")
    text = files_json(layout, rows, finer)

    # Then the rows are those the file-by-file FileRefs make, and the JSON reads back as they do
    expected = [reference_file_ref(r) for r in records]
    assert rows.equals(layout.batch(expected, [None] * len(expected)))
    assert FILE_REFS.validate_json(f"[{text}]") == [through_the_log(f) for f in expected]


def test_a_file_with_several_values_of_a_partition_column_or_nulls_in_a_required_column_is_refused() -> None:
    layout = FileLayout(SCHEMA, PARTITION_BY)
    rng = random.Random(1)
    mixed = random_record(rng, 0)
    mixed["columns"]["part"] = {"nulls": 0, "min": "a", "max": "b"}
    with pytest.raises(SchemaMismatchError, match="several values of 'part'"):
        described_rows(facts_table(lines_of([mixed]), WRITE_DIR, SCHEMA), layout, "t")
    holed = random_record(rng, 1)
    holed["columns"]["i32"]["nulls"] = 1
    with pytest.raises(SchemaMismatchError, match="'i32' of table 't' is not nullable"):
        described_rows(facts_table(lines_of([holed]), WRITE_DIR, SCHEMA), layout, "t")


def test_a_columnar_append_commits_the_same_state_and_log_as_file_refs(tmp_path: Path) -> None:
    # Given the same files as columns and as file-by-file FileRefs, and a table for each
    rng = random.Random(7)
    records = [random_record(rng, i) for i in range(300)]
    for record in records[:5]:
        record["size"] = record["sha256"] = None  # read back by the driver: not in the columns
    catalog = ss.Catalog.local(str(tmp_path))
    ours = catalog.create_table("ours", SCHEMA.to_arrow(), partition_by=list(PARTITION_BY))
    theirs = catalog.create_table("theirs", SCHEMA.to_arrow(), partition_by=list(PARTITION_BY))
    layout = FileLayout(ours.state().schema, PARTITION_BY)
    described = [r for r in records if r["size"] is not None]
    files, cleanup = described_files(ours, lines_of(described), WRITE_DIR, layout, local=False)
    cleanup.result()
    assert isinstance(files, NewFiles) and len(files) == len(described)

    # When one commits the columns and the other the FileRefs
    commit_append(ours, files, {"k": "v"}, "w1", "app", 1)
    theirs.commit_files(sorted((reference_file_ref(r) for r in described), key=lambda f: f.path), "append",
                        {"k": "v"}, "w2", "app", 1)

    # Then both states hold the same files, and so does the log read afresh
    assert ours.state().files.table().drop_columns(["added_version"]).equals(
        theirs.state().files.table().drop_columns(["added_version"]))
    fresh = ss.Catalog.local(str(tmp_path))
    assert fresh.table("ours").files() == fresh.table("theirs").files()
    assert fresh.table("ours").history()[-1].files_added == len(described)
    # And a repeat of the same app version commits nothing
    assert commit_append(ours, files, {}, "w3", "app", 1).committed is False

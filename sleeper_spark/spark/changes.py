"""A table's changes as a Spark DataFrame, read with Spark's own Parquet reader.

Runs the plan of :mod:`sleeper_spark.table.changes`. Each file goes to the reader with its
version's facts as constant columns (the hand-over's partition values, see
:mod:`sleeper_spark.spark.native.native_read`), so they cost nothing per row:

* files whose rows are all inserts (appends) are one scan, read like the table itself;
* the removed and added files of the versions that removed files are one scan with a sign per
  file (-1 removed, +1 added), grouped by every column and the version: a group whose signs do
  not cancel is that many deletes or inserts, and rows a rewrite only copied cancel out. Up to
  256 MiB of such files are grouped in one task, with no shuffle; up to 32 MiB (a MERGE that
  rewrote a few files) are compared on the driver with pyarrow instead, as ``Table.changes`` does,
  and handed to Spark as rows: that takes milliseconds, where a Spark aggregate costs more than
  reading the files.

A file appears in a scan once; a path that two versions in the range name (a restore adds back a
file an earlier version removed) goes to a second scan. Where Spark's reader cannot read the table
(no jar, nanosecond timestamps), the rows are read with pyarrow on the driver instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from sleeper_spark.errors import ConfigError
from sleeper_spark.models import FileRef
from sleeper_spark.spark.common.conversions import spark_schema, with_change_columns
from sleeper_spark.spark.common.jvm import native_entry
from sleeper_spark.spark.native.native_read import HandOver, native_root, open_data_frame, write_manifest
from sleeper_spark.table.changes import (
    CHANGE_TYPE,
    COMMIT_TIMESTAMP,
    COMMIT_VERSION,
    DELETE,
    INSERT,
    ROW_ID_PROPERTY,
    ChangePlan,
    empty_plan,
    plan_between,
    plan_changes,
    read_changes,
)

if TYPE_CHECKING:
    from sleeper_spark.table import Table

_SIGN = "_sleeper_sign"  # +1 for a row of an added file, -1 for one of a removed file
_NET = "_sleeper_net"
# Compared files up to this size are compared on the driver with pyarrow, and up to the next in
# one task of Spark's: a shuffle (or a Spark job) would cost more than it saves.
_DRIVER_BYTES = 32 * 2**20
DRIVER_BYTES_CONF = "spark.sleeper_spark.changes.driverBytes"
_ONE_TASK_BYTES = 256 * 2**20


@dataclass(frozen=True)
class _Read:
    """One file of a scan and its constant columns (as text, as the hand-over takes them)."""

    file: FileRef
    constants: tuple[str, ...]


def changes_schema(plan: ChangePlan) -> Any:
    """The Spark schema of a changes read: the table's columns, then the change columns."""
    return with_change_columns(spark_schema(plan.schema, guarded=False))


def row_id(table: Table) -> list[str]:
    """The columns the table property ``changes.row_id`` names (none when it is not set), checked to exist."""
    state = table.state()
    text = state.properties.get(ROW_ID_PROPERTY, "")
    columns = [c.strip() for c in text.split(",") if c.strip()]
    unknown = [c for c in columns if c not in state.schema.names]
    if unknown:
        raise ConfigError(f"table {table.name!r}: its property {ROW_ID_PROPERTY}={text!r} names column(s) {unknown} "
                          f"it does not have; set it to the columns that identify a row, e.g. 'id'")
    return columns


def plan_of_range(table: Table, range_: Mapping[str, Any]) -> ChangePlan:
    """The plan of a range as the catalog sends it (see ``ChangeRanges.java``)."""
    kind = range_.get("kind")
    if kind == "timestamp":
        start = _moment(range_["start"])
        end = None if range_.get("end") is None else _moment(range_["end"])
        return plan_between(table, start, end, bool(range_.get("startInclusive", True)),
                            bool(range_.get("endInclusive", True)))
    if kind == "version":
        first = _version_number(table, range_["start"]) + (0 if range_.get("startInclusive", True) else 1)
        end = range_.get("end")
        last = None if end is None else _version_number(table, end) - (0 if range_.get("endInclusive", True) else 1)
        if last is not None and last < first:
            return empty_plan(table)  # e.g. (3, 4) exclusive: no version
        return plan_changes(table, first, last)
    return plan_changes(table, table.head.first_number() or 1)


def _moment(micros: Any) -> datetime:
    return datetime.fromtimestamp(int(micros) / 1_000_000, tz=timezone.utc)


def _version_number(table: Table, text: Any) -> int:
    if not str(text).isdigit():
        raise ConfigError(f"table {table.name!r} has versions numbered 1, 2, ...; {text!r} is not one")
    return int(text)


def changes_frame(table: Table, spark: Any, plan: ChangePlan) -> Any:
    """The rows of ``plan`` as a DataFrame (columns: :func:`changes_schema`)."""
    schema = changes_schema(plan)
    entry = native_entry(spark)
    root = native_root(table, spark, entry, plan.schema) if entry is not None else None
    if entry is None or root is None:
        return spark.createDataFrame(read_changes(table, plan), schema)
    if plan.empty:
        return spark.createDataFrame([], schema)
    frames = []
    inserted = [_Read(f, (INSERT, str(c.version), _timestamp(c.committed_at)))
                for c in plan.versions if not c.compared for f in c.inserted]
    for group in _without_repeats(inserted):
        frames.append(_scan(spark, entry, table, root, plan, group, (CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIMESTAMP)))
    compared = [_Read(f, (str(c.version), _timestamp(c.committed_at), sign))
                for c in plan.versions if c.compared
                for files, sign in ((c.removed, "-1"), (c.added, "1")) for f in files]
    if compared and sum(r.file.size_bytes for r in compared) <= _driver_bytes(spark):
        # A few small files (a MERGE that rewrote one): compared on the driver in milliseconds,
        # where a Spark aggregate would cost more than reading them.
        on_driver = replace(plan, versions=tuple(c for c in plan.versions if c.compared))
        frames.append(spark.createDataFrame(read_changes(table, on_driver), schema))
    elif compared:
        frames.append(_net_changes(spark, entry, table, root, plan, compared))
    names = schema.fieldNames()
    result = frames[0].select(*names)
    for frame in frames[1:]:
        result = result.unionByName(frame.select(*names))
    return result


def _driver_bytes(spark: Any) -> int:
    """How many bytes of compared files the driver compares itself (session setting :data:`DRIVER_BYTES_CONF`)."""
    text = str(spark.conf.get(DRIVER_BYTES_CONF, str(_DRIVER_BYTES))).strip()
    if not text.isdigit():
        raise ConfigError(f"the session setting {DRIVER_BYTES_CONF} is a number of bytes, not {text!r}")
    return int(text)


def _timestamp(moment: datetime) -> str:
    # ISO 8601 with its offset: Spark's cast reads it the same in any session time zone.
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _without_repeats(reads: Sequence[_Read]) -> list[list[_Read]]:
    """``reads`` in order, split where a path comes again: a file is in a scan once."""
    groups: list[list[_Read]] = [[]]
    seen: set[str] = set()
    for read in reads:
        if read.file.path in seen:
            groups.append([])
            seen = set()
        groups[-1].append(read)
        seen.add(read.file.path)
    return [group for group in groups if group]


def _scan(spark: Any, entry: Any, table: Table, root: str, plan: ChangePlan, reads: Sequence[_Read],
          constants: tuple[str, ...]) -> Any:
    """One Spark Parquet scan of ``reads``, each file's constants as columns named ``constants``."""
    from pyspark.sql import DataFrame
    from pyspark.sql.types import IntegerType, LongType, StringType, StructField, TimestampType

    types = {CHANGE_TYPE: StringType(), COMMIT_VERSION: LongType(), COMMIT_TIMESTAMP: TimestampType(),
             _SIGN: IntegerType()}
    schema = spark_schema(plan.schema, guarded=False)
    for name in constants:
        schema = schema.add(StructField(name, types[name], True))
    columns: dict[str, Any] = {
        "path": pa.array([r.file.path for r in reads], pa.string()),
        "size": pa.array([r.file.size_bytes for r in reads], pa.int64()),
        "mtime": pa.repeat(pa.scalar(0, pa.int64()), len(reads)),
        "rows": pa.array([r.file.row_count for r in reads], pa.int64()),
    }
    for name in plan.partition_by:
        columns[f"part:{name}"] = pa.array([r.file.partition.get(name) for r in reads], pa.string())
    for index, name in enumerate(constants):
        columns[f"part:{name}"] = pa.array([r.constants[index] for r in reads], pa.string())
    hand_over = HandOver(description=f"sleeper:{table.name} changes {plan.first}..{plan.last}", root=root.rstrip("/"),
                         manifest=write_manifest(pa.table(columns)), schema_json=schema.json(),
                         partition_by=plan.partition_by + constants)
    return DataFrame(open_data_frame(spark, entry, hand_over), spark)


def _net_changes(spark: Any, entry: Any, table: Table, root: str, plan: ChangePlan, reads: Sequence[_Read]) -> Any:
    """The deletes and inserts of the versions that removed files: their rows' multiset difference."""
    from pyspark.sql import functions as F

    scans = [_scan(spark, entry, table, root, plan, group, (COMMIT_VERSION, COMMIT_TIMESTAMP, _SIGN))
             for group in _without_repeats(reads)]
    rows = scans[0]
    for scan in scans[1:]:
        rows = rows.unionByName(scan)
    if sum(r.file.size_bytes for r in reads) <= _ONE_TASK_BYTES:
        rows = rows.coalesce(1)  # one task groups them: no shuffle
    columns = spark_schema(plan.schema, guarded=False).fields
    # Spark cannot group by a map, and its grouping takes -0.0 for 0.0 (a change, as the pyarrow
    # read finds): group those columns by their text, which tells them apart, and keep one of the
    # (equal) values.
    by_text = {f.name for f in columns if _grouped_by_text(f.dataType)}
    keys = [_text(f).alias(f"_key_{i}") if f.name in by_text else F.col(f.name) for i, f in enumerate(columns)]
    kept = [F.first(F.col(f.name)).alias(f.name) for f in columns if f.name in by_text]
    grouped = rows.groupBy(*keys, COMMIT_VERSION, COMMIT_TIMESTAMP).agg(F.sum(_SIGN).alias(_NET), *kept)
    changed = grouped.where(F.col(_NET) != 0)
    return changed.select(
        *[F.col(f.name) for f in columns],
        F.when(F.col(_NET) < 0, F.lit(DELETE)).otherwise(F.lit(INSERT)).alias(CHANGE_TYPE),
        COMMIT_VERSION, COMMIT_TIMESTAMP,
        F.explode(F.sequence(F.lit(1), F.abs(F.col(_NET)).cast("int"))).alias("_sleeper_copy"),
    ).drop("_sleeper_copy")


def _grouped_by_text(data_type: Any) -> bool:
    """Whether a column is grouped by its text: a map, a float or a type that holds one."""
    from pyspark.sql.types import ArrayType, DoubleType, FloatType, MapType, StructType

    if isinstance(data_type, (MapType, DoubleType, FloatType)):
        return True
    if isinstance(data_type, ArrayType):
        return _grouped_by_text(data_type.elementType)
    if isinstance(data_type, StructType):
        return any(_grouped_by_text(f.dataType) for f in data_type.fields)
    return False


def _text(field: Any) -> Any:
    """A column's value as text that differs exactly when the values do (-0.0 is '-0.0')."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DoubleType, FloatType

    if isinstance(field.dataType, (DoubleType, FloatType)):
        return F.col(field.name).cast("string")
    return F.to_json(F.col(field.name))


def describe_changelog(table: Table, request: Mapping[str, Any]) -> dict[str, Any]:
    """What the catalog's ``loadChangelog`` answers: ``{"schema", "rowId"}``; the range is checked
    here, so a bad one fails when the query is analysed."""
    columns = row_id(table)
    if not columns and (request.get("computeUpdates") or request.get("deduplicationMode") == "netChanges"):
        wanted = "computeUpdates" if request.get("computeUpdates") else "deduplicationMode=netChanges"
        raise ConfigError(
            f"table {table.name!r}: {wanted} pairs the changes of each row, and the table does not say what "
            f"identifies a row; set the property: ALTER TABLE ... SET TBLPROPERTIES ('{ROW_ID_PROPERTY}' = 'id') "
            "with the column(s) that identify a row")
    plan = plan_of_range(table, request["range"])
    return {"schema": changes_schema(plan).json(), "rowId": columns}


def changes_of_request(spark: Any, table: Table, request: Mapping[str, Any]) -> Any:
    """The DataFrame of a ``changelog`` request, as ``describe_changelog`` described it."""
    return changes_frame(table, spark, plan_of_range(table, request["range"]))

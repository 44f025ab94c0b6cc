"""Small tables for the maintenance tests: one-row appends make many small files."""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa

import sleeper_spark as ss
from tests.invariants import WriteOutcome

SCHEMA = pa.schema([("day", pa.string()), ("n", pa.int64()), ("label", pa.string())])


def rows(start: int, count: int, day: str) -> pa.Table:
    return pa.table({"day": [day] * count, "n": list(range(start, start + count)),
                     "label": [f"row {i}" for i in range(start, start + count)]}, schema=SCHEMA)


def append_tagged_rows(warehouse: str, writer: int, ready: Any, appends: int, days: tuple[str, ...]
                       ) -> list[WriteOutcome]:
    """In a racing process: ``appends`` one-row appends to ``events``, tagged with the writer and
    sequence number, spread over ``days``; then waits for the table's automatic compaction, if any."""
    table = ss.Catalog.local(warehouse).table("events")
    ready.wait()
    outcomes = []
    for seq in range(appends):
        try:
            table.write(rows(1000 * (writer + 1) + seq, 1, days[seq % len(days)]),
                        metadata={"writer": str(writer), "seq": str(seq)})
            outcomes.append(WriteOutcome(writer, seq, 1, committed=True))
        except ss.SleeperSparkError:
            outcomes.append(WriteOutcome(writer, seq, 1, committed=False))
    table.auto_compaction.flush(120)
    return outcomes


def table_of_appends(catalog: ss.Catalog, appends: int, days: tuple[str, ...] = ("d1", "d2"),
                     name: str = "events") -> ss.Table:
    """``appends`` one-row appends spread over ``days`` (one partition each): one file per append."""
    table = catalog.create_table(name, SCHEMA, partition_by=["day"])
    for i in range(appends):
        table.write(rows(i, 1, days[i % len(days)]))
    return table


def row_set(table: ss.Table) -> list[tuple[str, int, str]]:
    data = table.scan()
    return sorted(zip(data.column("day").to_pylist(), data.column("n").to_pylist(),
                      data.column("label").to_pylist(), strict=True))


def data_files_on_disk(table: ss.Table) -> set[str]:
    prefix = table.root + "/"
    return {info.key[len(prefix):] for info in table.store.list(prefix + "data/") if info.key.endswith(".parquet")}


def disk_path(table: ss.Table, relative: str) -> Path:
    return Path(table.store.root_uri) / table.root / relative


def age(path: Path, by: timedelta) -> None:
    """Makes a file look ``by`` older than now (vacuum only removes old objects)."""
    then = (datetime.now(timezone.utc) - by).timestamp()
    os.utime(path, (then, then))

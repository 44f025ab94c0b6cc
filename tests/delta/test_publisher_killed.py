"""A writer process killed (SIGKILL) at a random moment while it commits and publishes both
formats: what it left is whole versions only, which delta-rs and pyiceberg read as the table
reads them, and the next publisher (another process) publishes every version it missed."""

from __future__ import annotations

import json
import os
import random
import signal
import time
from pathlib import Path
from typing import Any

import pytest

import sleeper_spark as ss
from sleeper_spark.layout import ICEBERG_HINT
from tests.fixtures.catalogs import EVENTS_SCHEMA, events
from tests.fixtures.processes import racing_context

deltalake = pytest.importorskip("deltalake")
pyiceberg_table = pytest.importorskip("pyiceberg.table")

ROUNDS = 3
# Appends before the kill can come: enough for the Delta log to pass a checkpoint.
WARM_UP = 12


def keep_appending(options: dict[str, str], warmed_up: Any) -> None:
    """Appends until killed; every commit publishes both formats behind it, on the table's thread."""
    table = ss.Catalog.from_options(options).table("events")
    seq = 0
    while True:
        table.write(events(0, seq))
        seq += 1
        if seq == WARM_UP:
            warmed_up.set()


def rows(read: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(row[name] for name in EVENTS_SCHEMA.names) for row in read.to_pylist())


def newest_delta_version(table: ss.Table) -> int:
    """The newest version whose commit file is in _delta_log, each of which must parse whole."""
    newest = -1
    for path in (Path(table.location) / "_delta_log").glob("*.json"):
        for line in path.read_text().splitlines():
            json.loads(line)  # a version cut short would not parse
        newest = max(newest, int(path.name.split(".")[0]))
    return newest


def check_published(table: ss.Table) -> tuple[int, int]:
    """Checks what is published reads as the table's versions; returns the newest Delta and Iceberg versions."""
    delta_version = newest_delta_version(table)
    assert delta_version >= 0
    read = deltalake.DeltaTable(table.location)
    assert read.version() == delta_version
    assert rows(read.to_pyarrow_table()) == rows(table.scan(version=delta_version))
    hint = int((Path(table.location) / ICEBERG_HINT).read_text())
    metadata = Path(table.location) / "metadata" / f"v{hint}.metadata.json"
    iceberg = pyiceberg_table.StaticTable.from_metadata(str(metadata)).scan().to_arrow()
    assert rows(iceberg) == rows(table.scan(version=hint))
    return delta_version, hint


def test_a_writer_killed_while_publishing_leaves_whole_versions_and_the_next_publisher_catches_up(
        tmp_path: Path) -> None:
    catalog = ss.Catalog.local(str(tmp_path / "warehouse"))
    catalog.create_table("events", EVENTS_SCHEMA, partition_by=["day"],
                         properties={"delta.publish": "true", "iceberg.publish": "true"})
    rng = random.Random(7)
    context = racing_context()
    for _ in range(ROUNDS):
        # Given a writer killed at a random moment after its first appends
        warmed_up = context.Event()
        writer = context.Process(target=keep_appending, args=(catalog.options(), warmed_up))
        writer.start()
        assert warmed_up.wait(timeout=120), "the writer did not start appending"
        time.sleep(rng.uniform(0, 0.2))
        assert writer.pid is not None
        os.kill(writer.pid, signal.SIGKILL)
        writer.join(timeout=30)
        # Then the published logs hold whole versions that read as the table's own
        newest = ss.Catalog.local(str(tmp_path / "warehouse")).table("events")
        check_published(newest)
    # And the next publisher, in another process, publishes every version the killed ones missed
    again = ss.Catalog.local(str(tmp_path / "warehouse")).table("events")
    newest_version = again.state().version
    assert again.publish_delta() == newest_version
    assert again.publish_iceberg() == newest_version
    assert check_published(again) == (newest_version, newest_version)
    for version in range(3, newest_version + 1, 7):
        assert rows(deltalake.DeltaTable(again.location, version=version).to_pyarrow_table()) == \
            rows(again.scan(version=version))

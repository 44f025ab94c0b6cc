"""Spark applications sharing one standalone Hive metastore and one sleeper warehouse, each with the
sleeper session catalog: two drivers racing appends through ``saveAsTable`` (the second then reads
what the metastore lists), and Spark's Thrift server with pyspark's ``beeline`` as its JDBC client.
The table's log is checked by the invariant checker and its rows by the Python API."""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import sleeper_spark as ss
from tests.fixtures.hive_servers import beeline, start_thrift_server
from tests.fixtures.servers import RunningServer
from tests.fixtures.summary import SUMMARY_KEY
from tests.invariants import WriteOutcome, check_log_invariants, check_table_invariants
from tests.session_catalog.drivers import Driver
from tests.session_catalog.metastore_driver import ROWS_PER_APPEND, append_rows

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]

WRITERS = 2
APPENDS = 4  # each writer's


@dataclass(frozen=True)
class Race:
    """What the two racing drivers reported, the table they wrote, and what the second read after."""

    catalog: ss.Catalog
    outcomes: list[WriteOutcome]
    periods: list[tuple[float, float]]  # when each writer's appends began and ended
    read: dict[str, Any]
    seconds: float


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sleeper-warehouse")


@pytest.fixture(scope="module")
def race(hive_metastore: str, warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Race:
    """Two drivers that append to ``db.events`` at once (the first creates it beforehand); the second
    then reads the table as the metastore lists it, once both have finished."""
    folder = tmp_path_factory.mktemp("drivers")
    common = {"warehouse": str(warehouse), "metastore_uri": hive_metastore,
              "spark_warehouse": str(folder / "spark-warehouse"), "start": str(folder / "start"),
              "appends": APPENDS}
    done = [str(folder / f"done-{w}") for w in range(WRITERS)]
    # The first creates the table, the others wait until it has; the last reads once every writer is done
    drivers = [Driver(f"writer-{writer}", "append", {**common, "writer": writer, "create": writer == 0,
                                                     "after": str(folder / "ready-0"),
                                                     "ready": str(folder / f"ready-{writer}"),
                                                     "first": str(folder / f"first-{writer}"),
                                                     "firsts": [str(folder / f"first-{w}") for w in range(WRITERS)],
                                                     "done": done[writer],
                                                     "read_after": done if writer == WRITERS - 1 else []},
                      folder)
               for writer in range(WRITERS)]
    try:
        for writer, driver in enumerate(drivers):
            driver.wait_for(folder / f"ready-{writer}")  # the table made, every driver's session and Python side up
        started = time.monotonic()
        (folder / "start").touch()
        results = [driver.result() for driver in drivers]
        seconds = time.monotonic() - started
    finally:
        for driver in drivers:
            driver.stop()
    outcomes = [WriteOutcome(result["writer"], o["seq"], o["rows"], o["committed"])
                for result in results for o in result["outcomes"]]
    periods = [(result["began"], result["ended"]) for result in results]
    return Race(ss.Catalog.local(str(warehouse)), outcomes, periods, results[-1]["read"], seconds)


def test_two_drivers_appending_through_the_metastore_commit_every_append_once_in_order(
        race: Race, request: pytest.FixtureRequest) -> None:
    # Given two Spark drivers that each appended 4 times to db.events through saveAsTable, at once
    table = race.catalog.table("db.events")
    assert max(began for began, _ in race.periods) < min(ended for _, ended in race.periods), (
        f"the drivers' appends did not overlap: {race.periods}")

    # Then every append committed, exactly once: no version lost, doubled or out of its writer's order,
    # every referenced file there with its checksum, the log replaying to the loaded state
    assert all(outcome.committed for outcome in race.outcomes), race.outcomes
    check_table_invariants(table, race.outcomes)
    appends = [s for s in table.history() if s.operation == "append"]
    assert len(appends) == WRITERS * APPENDS
    for writer in range(WRITERS):
        mine = [s for s in appends if s.app_id == f"metastore-driver-{writer}"]
        assert [(s.app_version, s.metadata["seq"]) for s in mine] == [(seq + 1, str(seq)) for seq in range(APPENDS)]
    # And the rows are exactly those appended
    expected = sorted(row for writer in range(WRITERS) for seq in range(APPENDS) for row in append_rows(writer, seq))
    scanned = table.scan()
    rows = sorted(zip(*(scanned.column(name).to_pylist() for name in ("id", "writer", "seq")), strict=True))
    assert rows == expected and len(rows) == WRITERS * APPENDS * ROWS_PER_APPEND
    switches = sum(1 for a, b in itertools.pairwise(appends) if a.app_id != b.app_id)
    request.node.user_properties.append((SUMMARY_KEY, (
        f"two drivers over one Hive metastore: {len(appends)} appends through saveAsTable in {race.seconds:.1f} s, "
        f"the writer changing {switches} times along the log")))


def test_a_driver_finds_the_table_in_the_metastore_as_a_sleeper_table(race: Race, warehouse: Path) -> None:
    # Given the table the two drivers made, read through the metastore once both are done
    read = race.read
    table = race.catalog.table("db.events")

    # Then SHOW TABLES lists it, the metastore keeps it as an external table of provider sleeper at the table's root
    assert read["tables"] == [["db", "events"]]
    assert read["entry"]["type"] == "EXTERNAL" and read["entry"]["provider"] == "sleeper"
    assert Path(read["entry"]["location"].removeprefix("file:")) == Path(table.location)
    # And DESCRIBE TABLE EXTENDED shows the provider and the location too, and the columns
    described = read["described"]
    assert described["Provider"] == "sleeper" and Path(described["Location"]) == Path(table.location)
    assert (described["id"], described["writer"], described["seq"]) == ("bigint", "int", "int")
    # And its SQL read gives the rows the Python API reads
    assert sorted(read["ids"]) == sorted(table.scan().column("id").to_pylist())


@pytest.fixture(scope="module")
def thrift_server(hive_metastore: str, warehouse: Path,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    server = start_thrift_server(tmp_path_factory.mktemp("thrift-server"), hive_metastore,
                                 ss.Catalog.local(str(warehouse)))
    try:
        yield server
    finally:
        server.stop()


NUMBERS = r"-?\d+(,-?\d+)*"


def _result(output: str, header: str, row: str = NUMBERS) -> list[tuple[str, ...]]:
    """The rows of the result whose CSV header is ``header``: the lines after it that match ``row``."""
    # beeline puts its prompt (``0: jdbc:hive2://...> ``) before the first line it prints.
    lines = [re.sub(r"^\d+: jdbc:\S+> ", "", line) for line in output.splitlines()]
    assert header in lines, f"no result headed {header!r} in beeline's output:\n{output}"
    rows = []
    for line in lines[lines.index(header) + 1:]:
        if not re.fullmatch(row, line):  # the next result's header, or the end
            break
        rows.append(tuple(line.split(",")))
    return rows


def test_a_jdbc_client_of_the_thrift_server_reads_the_drivers_table_and_makes_and_fills_another(
        race: Race, thrift_server: RunningServer, tmp_path: Path) -> None:
    # Given the table the drivers made, and Spark's Thrift server over the same metastore and warehouse
    events = race.catalog.table("db.events")

    # When a JDBC client reads it, copies one writer's rows with CREATE TABLE ... AS SELECT, inserts a row
    # into the copy, and reads the copy
    output = beeline(thrift_server.endpoint_url, [
        "SELECT id AS events_id, writer, seq FROM db.events ORDER BY id",
        "CREATE TABLE db.copied USING sleeper AS SELECT * FROM db.events WHERE writer = 1",
        "INSERT INTO db.copied VALUES (7, 7, 7)",
        "SELECT id AS copied_id, writer, seq FROM db.copied ORDER BY id",
        "SHOW TABLES IN db",
    ], tmp_path)

    # Then it read the rows the Python API reads
    scanned = events.scan()
    expected = sorted(zip(*(scanned.column(name).to_pylist() for name in ("id", "writer", "seq")), strict=True))
    assert [tuple(map(int, row)) for row in _result(output, "events_id,writer,seq")] == expected
    # And the copy is a sleeper table holding writer 1's rows and the inserted one, made by two commits
    copied = race.catalog.table("db.copied")
    copied_rows = copied.scan()
    in_copy = sorted(zip(*(copied_rows.column(name).to_pylist() for name in ("id", "writer", "seq")), strict=True))
    assert in_copy == sorted([row for row in expected if row[1] == 1] + [(7, 7, 7)])
    assert [tuple(map(int, row)) for row in _result(output, "copied_id,writer,seq")] == in_copy
    assert [s.rows_added for s in copied.history()] == [APPENDS * ROWS_PER_APPEND, 1]
    check_log_invariants(copied)
    # And the metastore lists both tables
    assert sorted(_result(output, "namespace,tableName,isTemporary", r"db,\w+,\w+")) == [("db", "copied", "false"),
                                                                          ("db", "events", "false")]

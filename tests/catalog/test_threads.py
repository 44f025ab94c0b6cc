"""Threads of one driver sharing one Catalog (and so one Table and one TableHead) commit safely."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import sleeper_spark as ss
from tests.fixtures.catalogs import EVENTS_SCHEMA, events, make_catalog
from tests.invariants import WriteOutcome, check_table_invariants

THREADS = 8
APPENDS = 50


def _race_threads(table_of: Callable[[], ss.Table], threads: int, appends: int,
                  writer_base: int = 0) -> tuple[list[WriteOutcome], list[int]]:
    """Each thread appends ``appends`` one-row writes tagged (writer, seq); returns outcomes and versions."""
    start = threading.Barrier(threads)

    def run(writer: int) -> list[tuple[WriteOutcome, int]]:
        table = table_of()
        start.wait()
        done = []
        for seq in range(appends):
            snapshot = table.write(events(writer, seq, rows=1), metadata={"writer": str(writer), "seq": str(seq)})
            done.append((WriteOutcome(writer, seq, rows=1, committed=True), snapshot.version))
        return done

    with ThreadPoolExecutor(max_workers=threads) as pool:
        results = [item for batch in pool.map(run, range(writer_base, writer_base + threads)) for item in batch]
    return [outcome for outcome, _ in results], [version for _, version in results]


def _cold_reader(catalog: ss.Catalog) -> ss.Table:
    return ss.Catalog.from_options(catalog.options()).table("events")


def _check_versions_each_once_in_order(table: ss.Table, versions: list[int]) -> None:
    history = table.history()
    assert sorted(versions) == [s.version for s in history], "every returned version is in history exactly once"
    for snapshot in history:
        assert snapshot.rows_added == 1
    scanned = table.scan(columns=["writer", "seq"]).sort_by([("writer", "ascending"), ("seq", "ascending")])
    by_writer: dict[int, list[int]] = {}
    for writer, seq in zip(scanned.column("writer").to_pylist(), scanned.column("seq").to_pylist(), strict=True):
        by_writer.setdefault(writer, []).append(seq)
    # Each thread's writes are in the log in the order it made them.
    order = {(int(s.metadata["writer"]), int(s.metadata["seq"])): s.version for s in history}
    for writer, seqs in by_writer.items():
        assert [order[(writer, seq)] for seq in seqs] == sorted(order[(writer, seq)] for seq in seqs)


@pytest.mark.parametrize("kind", ["local", pytest.param("aws", marks=pytest.mark.integration),
                                  pytest.param("object_store", marks=pytest.mark.integration)])
def test_threads_sharing_one_catalog_lose_no_commit(kind: str, request: pytest.FixtureRequest,
                                                    tmp_path: Path) -> None:
    # Given one catalog, shared by 8 threads of one process

    catalog = make_catalog(kind, request, tmp_path)
    catalog.create_table("events", EVENTS_SCHEMA)

    # When each thread appends 50 times through catalog.table("events")
    outcomes, versions = _race_threads(lambda: catalog.table("events"), THREADS, APPENDS)

    # Then a cold reader sees every returned version exactly once, every row, in each thread's order
    assert len(set(versions)) == THREADS * APPENDS
    cold = _cold_reader(catalog)
    _check_versions_each_once_in_order(cold, versions)
    check_table_invariants(cold, outcomes)
    assert cold.scan().num_rows == THREADS * APPENDS


def test_a_state_handed_out_is_not_changed_by_later_commits(local_catalog: ss.Catalog) -> None:
    # Given a state read before other threads commit
    table = local_catalog.create_table("events", EVENTS_SCHEMA)
    table.write(events(0, 0, rows=1))
    before = table.state()
    files_before, history_before, version_before = list(before.files), list(before.history), before.version

    # When several threads commit through the same table
    _race_threads(lambda: table, threads=4, appends=10, writer_base=1)

    # Then the state handed out still says what it said
    assert before.version == version_before
    assert list(before.files) == files_before and list(before.history) == history_before
    assert table.state().version == version_before + 40


_PROCESS_WRITER = """
import sys
import sleeper_spark as ss
from tests.fixtures.catalogs import events
catalog = ss.Catalog.local(sys.argv[1])
table = catalog.table("events")
writer = int(sys.argv[2])
for seq in range(int(sys.argv[3])):
    table.write(events(writer, seq, rows=1), metadata={"writer": str(writer), "seq": str(seq)})
"""


def test_threads_and_processes_racing_together_lose_no_commit(tmp_path: Path) -> None:
    # Given a local table written by 2 other processes and by 4 threads of this one
    warehouse = str(tmp_path / "warehouse")
    catalog = ss.Catalog.local(warehouse)
    catalog.create_table("events", EVENTS_SCHEMA)
    root = Path(__file__).resolve().parents[2]
    processes = [subprocess.Popen([sys.executable, "-c", _PROCESS_WRITER, warehouse, str(100 + n), "30"], cwd=root)
                 for n in range(2)]

    # When they all append at once
    try:
        outcomes, versions = _race_threads(lambda: catalog.table("events"), threads=4, appends=30)
    finally:
        codes = [p.wait(timeout=300) for p in processes]

    # Then every write of every process and thread is in the table exactly once
    assert codes == [0, 0]
    outcomes += [WriteOutcome(100 + n, seq, rows=1, committed=True) for n in range(2) for seq in range(30)]
    cold = _cold_reader(catalog)
    check_table_invariants(cold, outcomes)
    assert cold.scan().num_rows == 180 and len(set(versions)) == 120


def test_state_is_safe_to_read_while_threads_commit(local_catalog: ss.Catalog) -> None:
    # Given a table being appended to by 4 threads
    table = local_catalog.create_table("events", EVENTS_SCHEMA)
    stop = threading.Event()
    problems: list[BaseException] = []

    def read_loop() -> None:
        while not stop.is_set():
            try:
                state = table.state()
                assert len(state.files) == len(state.history)  # one file per append
                table.scan()
            except BaseException as error:  # collected for the assertion below
                problems.append(error)
                return

    # When a reader thread reads the state and scans throughout
    reader = threading.Thread(target=read_loop)
    reader.start()
    try:
        _race_threads(lambda: table, threads=4, appends=20)
    finally:
        stop.set()
        reader.join()

    # Then it never saw a half-applied state or a changing container
    assert problems == []
    assert table.scan().num_rows == 80


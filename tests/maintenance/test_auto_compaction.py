"""Automatic compaction (``compaction.auto``): small appends keep a bounded number of live files,
every row stays exactly once, and racing processes never compact the same files twice."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

import pytest

import sleeper_spark as ss
from sleeper_spark.maintenance.auto_compaction import compact_after_commits, due_groups
from sleeper_spark.models.clustering import AutoCompaction
from tests.fixtures.processes import racing_context
from tests.invariants import WriteOutcome, check_table_invariants
from tests.maintenance.tables import SCHEMA, append_tagged_rows, row_set, rows

AUTO = {"compaction.auto": "true", "compaction.auto.min_files": "8"}


def live_files_by_day(table: ss.Table) -> dict[str, int]:
    counts: dict[str, int] = {}
    for file in table.files():
        counts[file.partition["day"]] = counts.get(file.partition["day"], 0) + 1
    return counts


def test_one_row_appends_keep_at_most_min_files_plus_one_live_files_a_partition(local_catalog: ss.Catalog) -> None:
    # Given a table that compacts itself once a partition holds more than 8 small files
    table = local_catalog.create_table("events", SCHEMA, partition_by=["day"], properties=AUTO)
    # When 100 one-row appends land, 90 in one partition and 10 in another
    for seq in range(100):
        table.write(rows(seq, 1, "d2" if seq % 10 == 0 else "d1"))
    # Then, once the compactions behind them are done, no partition holds more than 9 live files,
    # and every row is there exactly once
    assert table.auto_compaction.flush(60)
    assert max(live_files_by_day(table).values()) <= 9
    assert row_set(table) == sorted(("d2" if n % 10 == 0 else "d1", n, f"row {n}") for n in range(100))
    # And the compactions are in the history, each writing a file a partition
    history = table.history()
    compactions = [s for s in history if s.operation == "compact"]
    assert len(compactions) >= 2 and all(s.files_added <= 2 for s in compactions)
    assert [s.operation for s in history].count("append") == 100


def test_a_table_without_the_property_keeps_every_small_file(local_catalog: ss.Catalog) -> None:
    table = local_catalog.create_table("events", SCHEMA, partition_by=["day"])
    for seq in range(20):
        table.write(rows(seq, 1, "d1"))
    assert table.auto_compaction.flush(60)
    assert live_files_by_day(table) == {"d1": 20}
    assert all(s.operation == "append" for s in table.history()[1:])


def test_a_backlog_is_compacted_one_target_s_worth_a_run(local_catalog: ss.Catalog) -> None:
    # Given 40 small files written before automatic compaction was turned on
    table = local_catalog.create_table("events", SCHEMA, partition_by=["day"])
    for seq in range(40):
        table.write(rows(seq, 1, "d1"))
    size = max(f.size_bytes for f in table.files())
    # When it is turned on with a target that holds ten of them, and one more append lands
    target = 10 * size + 1
    table.set_properties({**AUTO, "compaction.target_file_bytes": str(target)})
    appended = table.write(rows(40, 1, "d1"))
    assert table.auto_compaction.flush(60)
    # Then compactions followed it, each rewriting at most one target's worth of files, one after
    # another (each compaction's own commit hands the next run the partition) until it was no longer due
    compactions = [s for s in table.history() if s.version > appended.version]
    assert len(compactions) >= 3 and all(s.operation == "compact" for s in compactions)
    for snapshot in compactions:
        removed = {f.path: f.size_bytes for f in table.files(snapshot.version - 1)}
        for file in table.files(snapshot.version):
            removed.pop(file.path, None)
        assert len(removed) >= 2 and sum(removed.values()) <= target
    assert len(table.files()) <= 9
    assert sorted(table.scan().column("n").to_pylist()) == list(range(41))


def test_only_the_partitions_a_commit_wrote_are_compacted(local_catalog: ss.Catalog) -> None:
    table = local_catalog.create_table("events", SCHEMA, partition_by=["day"])
    for seq in range(20):
        table.write(rows(seq, 1, "d1"))
    table.set_properties(AUTO)
    table.write(rows(20, 1, "d2"))  # d1 is due, but this commit did not write it
    assert table.auto_compaction.flush(60)
    assert live_files_by_day(table) == {"d1": 20, "d2": 1}
    state = table.state()
    settings = AutoCompaction(min_files=8, target_file_bytes=128 * 2**20)
    assert due_groups(state, settings, state.version - 1) == []
    assert len(due_groups(state, settings, 0)) == 1  # counting every commit, d1 is due


def test_a_failed_compaction_leaves_the_commit_standing_and_says_so(local_catalog: ss.Catalog,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    # Given a due table whose store refuses the compaction's new file
    table = local_catalog.create_table("events", SCHEMA, partition_by=["day"], properties=AUTO)
    for seq in range(8):
        table.write(rows(seq, 1, "d1"))
    store = table.store
    refusing = RefusingCompactedFiles(store)
    table.store = refusing  # type: ignore[assignment]
    # When the append that makes it due lands
    with caplog.at_level(logging.WARNING, logger="sleeper_spark.maintenance.auto_compaction"):
        snapshot = table.write(rows(8, 1, "d1"))
        assert table.auto_compaction.flush(60)
    table.store = store
    # Then the append stands, the compaction is not in the log, and the warning says what happened
    assert refusing.refused, "the compaction never tried to write"
    assert snapshot.operation == "append" and table.history()[-1].version == snapshot.version
    assert sorted(table.scan().column("n").to_pylist()) == list(range(9))
    assert "automatic compaction after version" in caplog.text and "the commit stands" in caplog.text


class RefusingCompactedFiles:
    """The table's store, refusing new objects from any thread but the main one: compaction runs
    behind the commits on a thread of its own, an Arrow append in the caller's."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.refused = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def new_object(self, key: str) -> Any:
        if threading.current_thread() is not threading.main_thread():
            self.refused += 1
            raise ss.StorageError(f"refused {key}")
        return self.store.new_object(key)


def test_a_run_handed_a_state_from_before_the_last_compaction_plans_on_the_newest(
        local_catalog: ss.Catalog, caplog: pytest.LogCaptureFixture) -> None:
    # Regression: a compaction's own commit hands nothing once the partition is no longer due, so
    # the next run was handed the state of an append from before it, planned on files that
    # compaction had removed, rewrote them, and then conflicted: half of the runs were wasted.
    table = local_catalog.create_table("events", SCHEMA, partition_by=["day"], properties=AUTO)
    for seq in range(9):
        appended = table.write(rows(seq, 1, "d1"))
    assert table.auto_compaction.flush(60)
    compacted = table.latest()
    assert compacted.operation == "compact"
    before = table.state(appended.version)  # the state the append that made it due handed on
    # When a run is handed the state from before that compaction
    with caplog.at_level(logging.INFO, logger="sleeper_spark.maintenance.auto_compaction"):
        assert compact_after_commits(table, before, before.version - 1) is None
    # Then it found nothing due on the newest state: nothing was rewritten, nothing dropped
    assert table.latest().version == compacted.version
    assert "dropped" not in caplog.text
    assert row_set(table) == sorted(("d1", n, f"row {n}") for n in range(9))


@pytest.mark.parametrize("properties", [{"compaction.auto": "yes"}, {"compaction.auto.min_files": "0"},
                                        {"compaction.target_file_bytes": "128MB"}])
def test_a_property_it_cannot_take_is_refused_and_nothing_commits(local_catalog: ss.Catalog,
                                                                  properties: dict[str, str]) -> None:
    table = local_catalog.create_table("events", SCHEMA, partition_by=["day"])
    version = table.head.catch_up().version
    with pytest.raises(ss.ConfigError, match=next(iter(properties))):
        table.set_properties(properties)
    with pytest.raises(ss.ConfigError, match=next(iter(properties))):
        local_catalog.create_table("other", SCHEMA, properties=properties)
    assert table.head.catch_up().version == version and "other" not in local_catalog.tables()


WRITERS = 3
APPENDS = 30


def append_with_auto_compaction(warehouse: str, writer: int, ready: Any) -> list[WriteOutcome]:
    return append_tagged_rows(warehouse, writer, ready, APPENDS, ("d1",))


def test_racing_processes_compacting_behind_their_appends_lose_nothing_and_never_compact_a_file_twice(
        tmp_path: Path) -> None:
    # Given a table with automatic compaction, and three processes appending one row at a time to
    # one partition: each process compacts behind its own commits, on the same files
    warehouse = str(tmp_path / "warehouse")
    ss.Catalog.local(warehouse).create_table("events", SCHEMA, partition_by=["day"], properties=AUTO)
    context = racing_context()
    with context.Manager() as manager:
        ready = manager.Barrier(WRITERS)
        with context.Pool(WRITERS) as pool:
            pending = [pool.apply_async(append_with_auto_compaction, (warehouse, w, ready)) for w in range(WRITERS)]
            outcomes = [o for p in pending for o in p.get(timeout=300)]
    # Then every append landed once, in order, every file is intact, and the files stay few
    assert all(o.committed for o in outcomes), [o for o in outcomes if not o.committed]
    table = ss.Catalog.local(warehouse).table("events")
    check_table_invariants(table, outcomes)
    history = table.history()
    compactions = [s for s in history if s.operation == "compact"]
    assert compactions and len(table.files()) <= 9 + WRITERS
    # And no file was removed twice: each compaction removed files that were live just before it
    removed: list[str] = []
    for snapshot in compactions:
        before = {f.path for f in table.files(snapshot.version - 1)}
        now = {f.path for f in table.files(snapshot.version)}
        gone = before - now
        assert len(gone) == snapshot.files_removed
        removed.extend(gone)
    assert len(removed) == len(set(removed))

"""Multi-table transactions in one process: all or nothing, readers that wait for the decision,
rolled back leases, and bad input (ADR 0016).

The racing and killed processes on every backend are in test_transaction_races.py.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import sleeper_spark as ss
from sleeper_spark.config import CatalogConfig, RetryPolicy
from sleeper_spark.layout import DECISIONS_DIR
from sleeper_spark.log import InMemoryLogBackend, TableEntry
from sleeper_spark.models import TransactionDecision
from tests.fixtures.catalogs import EVENTS_SCHEMA, events
from tests.invariants import check_log_invariants
from tests.transactions.checks import check_transactions_whole


def data_files(catalog: ss.Catalog, name: str) -> set[str]:
    table = catalog.table(name)
    return {info.key for info in table.store.list(f"{table.root}/data/")}


def two_tables(catalog: ss.Catalog) -> tuple[ss.Table, ss.Table]:
    orders = catalog.create_table("orders", EVENTS_SCHEMA, partition_by=["day"])
    lines = catalog.create_table("lines", EVENTS_SCHEMA)
    orders.write(events(0, 0))
    return orders, lines


def config_of(backend: InMemoryLogBackend) -> CatalogConfig:
    return CatalogConfig(warehouse=backend.store.root_uri, retry=RetryPolicy(max_attempts=20, base_delay_s=0.001))


def test_a_transaction_commits_every_table_and_names_itself_in_each_history(local_catalog: ss.Catalog) -> None:
    orders, _lines = two_tables(local_catalog)
    with local_catalog.transaction() as tx:
        staged = tx.write("orders", events(1, 1, rows=2), metadata={"job": "nightly"})
        tx.write("lines", events(1, 2, rows=5))
        assert orders.scan().num_rows == 3, "nothing is visible before the block ends"
        assert staged.version == 3
    result = tx.result
    assert result is not None and result.version("orders") == 3 and result.version("lines") == 2
    cold = ss.Catalog(local_catalog.config)
    assert cold.table("orders").scan().num_rows == 5 and cold.table("lines").scan().num_rows == 5
    for name in ("orders", "lines"):
        latest = cold.table(name).latest()
        assert latest.metadata["transaction_id"] == tx.transaction_id
    assert cold.table("orders").latest().metadata["job"] == "nightly"
    listed = cold.transactions()
    assert [(t.transaction_id, t.versions) for t in listed] == [(tx.transaction_id, {"lines": (2,), "orders": (3,)})]
    assert cold.read_consistent(["orders", "lines"]) == {"orders": 3, "lines": 2}
    check_transactions_whole(cold, ["orders", "lines"])
    for name in ("orders", "lines"):
        check_log_invariants(cold.table(name))


def test_an_exception_in_the_block_commits_nothing_and_deletes_what_it_staged(local_catalog: ss.Catalog) -> None:
    orders, lines = two_tables(local_catalog)
    before = data_files(local_catalog, "orders") | data_files(local_catalog, "lines")
    with pytest.raises(RuntimeError, match="boom"), local_catalog.transaction() as tx:
        tx.write("orders", events(1, 1))
        tx.write("lines", events(1, 2))
        assert data_files(local_catalog, "lines"), "the files are written inside the block"
        raise RuntimeError("boom")
    assert data_files(local_catalog, "orders") | data_files(local_catalog, "lines") == before
    assert (orders.state().version, lines.state().version) == (2, 1), "nothing was appended"
    assert not local_catalog.transactions()


def test_a_conflict_on_one_table_rolls_back_the_tables_appended_before_it(memory_backend: InMemoryLogBackend) -> None:
    catalog = ss.Catalog(config_of(memory_backend), backend=memory_backend)
    first, second = sorted([catalog.create_table(n, EVENTS_SCHEMA) for n in ("x", "y")], key=lambda t: t.table_id)
    second.write(events(0, 0, rows=4))
    with pytest.raises(ss.CommitConflictError), catalog.transaction() as tx:
        tx.write(first.name, events(1, 1))
        tx.delete_where(second.name, pc.field("value") == 0.0)  # rewrites the one file of the second
        second_rival = ss.Catalog(catalog.config, backend=memory_backend).table(second.name)
        second_rival.write(events(2, 2), mode="overwrite")  # the file the delete rewrites is gone
    # The first table's entry landed and is void: its number is used, nothing changed.
    # (Two numbers, when the first attempt, appending to both tables at once, lost its race on the
    # second table and the transaction tried again one table at a time.)
    state = ss.Catalog(catalog.config, backend=memory_backend).table(first.name).state()
    assert state.version in (2, 3) and len(state.history) == 0 and len(state.files) == 0
    decision = catalog.decisions.read(tx.transaction_id)
    assert decision is not None and decision.outcome == "aborted" and decision.decided_by == "writer"
    assert not data_files(catalog, first.name), "the staged files of the aborted transaction are deleted"
    assert ss.Catalog(catalog.config, backend=memory_backend).table(second.name).scan().num_rows == 3
    check_transactions_whole(catalog, [first.name, second.name])
    check_log_invariants(catalog.table(first.name))
    first.write(events(3, 3))  # the next writer goes on at the next number
    assert first.state().version == state.version + 1 and first.scan().num_rows == 3


def test_a_reader_meeting_an_undecided_entry_waits_for_the_decision(memory_backend: InMemoryLogBackend) -> None:
    catalog = ss.Catalog(config_of(memory_backend), backend=memory_backend)
    two_tables(catalog)
    reader = ss.Catalog(catalog.config, backend=memory_backend).table("orders")
    reader.state()
    seen: dict[str, float] = {}

    def read_while_undecided() -> None:
        started = time.monotonic()
        seen["rows"] = reader.scan().num_rows
        seen["waited"] = time.monotonic() - started

    threads: list[threading.Thread] = []
    with catalog.transaction(lease_s=20) as tx:
        tx.write("orders", events(1, 1))
        tx.write("lines", events(1, 2))

        def before_decision() -> None:  # every entry is in, the decision not yet
            threads.append(threading.Thread(target=read_while_undecided))
            threads[0].start()
            time.sleep(0.3)

        memory_backend.transaction_log(_decision_entry(tx.transaction_id)).at_start_of_next_append(before_decision)
    threads[0].join(timeout=10)
    assert seen["rows"] == 6, "the reader folded the entry once committed"
    assert 0.25 <= seen["waited"] < 5, seen


def test_a_writer_that_outlives_its_lease_is_rolled_back_by_a_reader(memory_backend: InMemoryLogBackend) -> None:
    catalog = ss.Catalog(config_of(memory_backend), backend=memory_backend)
    orders, _ = two_tables(catalog)
    reader = ss.Catalog(catalog.config, backend=memory_backend).table("lines")
    with pytest.raises(ss.CommitFailedError, match="longer than its lease"), catalog.transaction(lease_s=0.2) as tx:
        tx.write("orders", events(1, 1))
        tx.write("lines", events(1, 2))

        def stall() -> None:  # the writer stalls past its lease; a reader comes by meanwhile
            time.sleep(0.25)
            assert reader.scan().num_rows == 0

        memory_backend.transaction_log(_decision_entry(tx.transaction_id)).at_start_of_next_append(stall)
    decision = catalog.decisions.read(tx.transaction_id)
    assert decision is not None and (decision.outcome, decision.decided_by) == ("aborted", "reader")
    assert orders.scan().num_rows == 3 and not data_files(catalog, "lines")
    check_transactions_whole(catalog, ["orders", "lines"])


def test_several_writes_to_one_table_commit_as_entries_of_one_transaction(local_catalog: ss.Catalog) -> None:
    orders, _lines = two_tables(local_catalog)
    with local_catalog.transaction() as tx:
        tx.write("orders", events(1, 1))
        tx.write("orders", events(1, 2))
        tx.delete_where("orders", pc.field("seq") == 0)
        tx.write("lines", events(1, 3))
    assert tx.result is not None
    assert [s.version for s in tx.result.snapshots["orders"]] == [3, 4, 5]
    assert sorted(set(orders.scan().column("seq").to_pylist())) == [1, 2]
    check_transactions_whole(local_catalog, ["orders", "lines"])


def test_a_consistent_read_brings_every_table_up_to_the_transactions_another_holds(local_catalog: ss.Catalog) -> None:
    _orders, _lines = two_tables(local_catalog)
    early = ss.Catalog(local_catalog.config)
    early.table("lines").state()  # this process has read lines before the transaction
    with local_catalog.transaction() as tx:
        tx.write("orders", events(1, 1))
        tx.write("lines", events(1, 2))
    lines_seen_early = early.table("lines").head.known_state().version
    assert lines_seen_early == 1
    assert early.read_consistent(["orders", "lines"]) == {"orders": 3, "lines": 2}


# -- bad input: typed errors, nothing committed -------------------------------------------------


def test_a_table_overwritten_and_written_again_in_one_transaction_is_refused(local_catalog: ss.Catalog) -> None:
    orders, _ = two_tables(local_catalog)
    with pytest.raises(ss.ConfigError, match="overwrite"), local_catalog.transaction() as tx:
        tx.write("orders", events(1, 1))
        tx.write("orders", events(1, 2), mode="overwrite")
    assert orders.state().version == 2 and not local_catalog.transactions()


def test_a_missing_table_fails_the_transaction_and_deletes_what_was_staged(local_catalog: ss.Catalog) -> None:
    orders, _ = two_tables(local_catalog)
    before = data_files(local_catalog, "orders")
    with pytest.raises(ss.TableNotFoundError), local_catalog.transaction() as tx:
        tx.write("orders", events(1, 1))
        tx.write("no_such_table", events(1, 2))
    assert data_files(local_catalog, "orders") == before and orders.state().version == 2


def test_a_transaction_is_used_once(local_catalog: ss.Catalog) -> None:
    two_tables(local_catalog)
    tx = local_catalog.transaction()
    with pytest.raises(ss.ConfigError, match="not open"):
        tx.write("orders", events(1, 1))
    with tx:
        tx.write("orders", events(1, 1))
    with pytest.raises(ss.ConfigError, match="committed"):
        tx.write("orders", events(1, 2))
    with pytest.raises(ss.ConfigError, match="committed already"), tx:
        pass
    assert local_catalog.table("orders").state().version == 3


def test_bad_data_fails_before_anything_is_appended(local_catalog: ss.Catalog) -> None:
    orders, lines = two_tables(local_catalog)
    with pytest.raises(ss.SchemaMismatchError), local_catalog.transaction() as tx:
        tx.write("orders", events(1, 1))
        tx.write("lines", pa.table({"other": [1]}))
    assert (orders.state().version, lines.state().version) == (2, 1)


def test_too_many_tables_or_a_bad_lease_are_refused(local_catalog: ss.Catalog) -> None:
    with pytest.raises(ss.ConfigError, match="lease"):
        local_catalog.transaction(lease_s=0)
    from sleeper_spark.table import transactions

    names = [f"t{i}" for i in range(3)]
    for name in names:
        local_catalog.create_table(name, EVENTS_SCHEMA)
    tx = transactions.CatalogTransaction(local_catalog, max_tables=2)
    with pytest.raises(ss.ConfigError, match="at most 2 tables"), tx:
        for name in names:
            tx.write(name, events(1, 1))
    assert all(local_catalog.table(n).state().version == 1 for n in names)


def _decision_entry(transaction_id: str) -> TableEntry:
    """The entry the backend opens the transaction's decision log by (CatalogBackend.decision_log)."""
    key = f"{DECISIONS_DIR}/{transaction_id}"
    return TableEntry(name=key, table_id=key, root=key, created_at=datetime(1970, 1, 1, tzinfo=timezone.utc))


def test_the_decision_record_shape_is_pinned() -> None:
    from tests.models.golden import check_golden

    decision = TransactionDecision(transaction_id="7f3a", outcome="committed", decided_at=datetime(
        2026, 12, 1, 12, 0, tzinfo=timezone.utc), decided_by="writer", versions={"t-1": (4,), "t-2": (9, 10)})
    check_golden("transaction_decision.json", decision.encode().decode())
    assert TransactionDecision.decode(decision.encode()) == decision


def test_a_member_entry_shape_is_pinned() -> None:
    from sleeper_spark.models import AddFiles, TransactionMember, encode_transaction
    from tests.models.golden import check_golden

    at = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
    txn = AddFiles(snapshot_id="s1", committed_at=at, operation="append", write_id="w1", files=(),
                   metadata={"transaction_id": "7f3a"},
                   member_of=TransactionMember(transaction_id="7f3a", tables=("t-1", "t-2"), decide_by=at))
    check_golden("add_files_transaction_member.json", encode_transaction(txn).decode())



def test_iceberg_and_delta_publish_a_committed_transaction_and_skip_an_aborted_entry(tmp_path: Path) -> None:
    deltalake = pytest.importorskip("deltalake")
    static_table = pytest.importorskip("pyiceberg.table").StaticTable
    catalog = ss.Catalog.local(str(tmp_path / "warehouse"), delta_publish=True, iceberg_publish=True)
    first, second = sorted([catalog.create_table(n, EVENTS_SCHEMA) for n in ("x", "y")], key=lambda t: t.table_id)
    second.write(events(0, 0, rows=4))
    with catalog.transaction() as tx:
        tx.write(first.name, events(1, 1))
        tx.write(second.name, events(1, 1))
    with pytest.raises(ss.CommitConflictError), catalog.transaction() as tx:
        tx.write(first.name, events(2, 2))  # appended, then voided by the abort
        tx.delete_where(second.name, pc.field("value") == 0.0)
        ss.Catalog(catalog.config).table(second.name).write(events(3, 3), mode="overwrite")
    first.write(events(4, 4))
    for table in (first, second):
        assert table.publishing.flush(timeout=30), "published behind the commits, as after any commit"
        assert table.delta.publisher().newest_published() == table.state().version
        expected = sorted(table.scan().column("seq").to_pylist())
        assert sorted(deltalake.DeltaTable(table.delta_location()).to_pyarrow_table().column("seq").to_pylist()) \
            == expected
        iceberg = static_table.from_metadata(table.iceberg_metadata()).scan().to_arrow()
        assert sorted(iceberg.column("seq").to_pylist()) == expected
    versions = [s.version for s in first.history()]  # the aborted transaction's one or two entries: no snapshot
    assert versions[0] == 2 and versions[1] in (4, 5) and first.state().version == versions[1]
    changes = first.changes(1)  # the change feed: the voided versions change nothing
    assert sorted(set(changes.column("_commit_version").to_pylist())) == versions
    assert sorted(changes.column("seq").to_pylist()) == [1, 1, 1, 4, 4, 4]


def test_a_block_may_commit_itself_and_what_it_committed_stays(local_catalog: ss.Catalog) -> None:
    orders, lines = two_tables(local_catalog)
    with pytest.raises(RuntimeError, match="after"), local_catalog.transaction() as tx:
        tx.write("orders", events(1, 1))
        tx.write("lines", events(1, 1))
        result = tx.commit()
        raise RuntimeError("after the commit")
    assert set(result.snapshots) == {"orders", "lines"}
    assert orders.scan().num_rows == 6 and lines.scan().num_rows == 3, "an exception after commit() keeps it"
    check_transactions_whole(local_catalog, ["orders", "lines"])

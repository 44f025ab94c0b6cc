"""The ``sleeper-spark`` command: output, JSON and exit codes.

The installed executable and ``python -m sleeper_spark`` start as a user starts them (the first
test, and the hints' tests of the environment); every other command runs through the same entry
point, ``sleeper_spark.cli.main.main``, in this process, with its output captured: a process start
costs a second of imports, and tells nothing more once the first test has shown the executable.
"""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from datetime import timedelta
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import sleeper_spark as ss
from sleeper_spark.cli.main import main
from sleeper_spark.maintenance.locking import maintenance_lock_path
from sleeper_spark.storage.locks import Mutex
from sleeper_spark.table.writes import new_write_id
from tests.maintenance.tables import SCHEMA, age, data_files_on_disk, disk_path, rows

EXECUTABLE = Path(sys.executable).parent / "sleeper-spark"


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``sleeper-spark ARGS``, by the executable's entry point, in a wide terminal with no warehouse set."""
    out, err = io.StringIO(), io.StringIO()
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level  # the command sets up logging as a process of its own
    # patch.dict puts back the whole environment afterwards, the removed warehouse variable too
    with patch.dict(os.environ, {"COLUMNS": "250"}), redirect_stdout(out), redirect_stderr(err):
        os.environ.pop("SLEEPER_SPARK_WAREHOUSE", None)
        try:
            code = main(list(args))
        finally:
            root.handlers[:] = handlers
            root.setLevel(level)
    done = subprocess.CompletedProcess([str(EXECUTABLE), *args], code, out.getvalue(), err.getvalue())
    if check:
        assert done.returncode == 0, f"exit {done.returncode}: {done.stderr}"
    return done


def run_json(*args: str) -> Any:
    return json.loads(run(*args, "--json").stdout)


def assert_user_error(done: subprocess.CompletedProcess[str], fragment: str) -> None:
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1 and fragment in done.stderr, done.stderr
    assert done.stderr.startswith("sleeper-spark: error: ")
    assert "Traceback" not in done.stderr + done.stdout


@pytest.fixture
def warehouse(tmp_path: Path) -> str:
    return str(tmp_path / "warehouse")


@pytest.fixture
def events(warehouse: str) -> ss.Table:
    """A table of six one-row appends over two partitions."""
    table = ss.Catalog.local(warehouse).create_table("events", SCHEMA, partition_by=["day"])
    for seq in range(6):
        table.write(rows(seq, 1, f"d{seq % 2}"), metadata={"seq": str(seq)})
    return table


def test_version_from_the_executable_and_python_m() -> None:
    for command in ([str(EXECUTABLE)], [sys.executable, "-m", "sleeper_spark"]):
        done = subprocess.run([*command, "--version"], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and done.stdout.strip() == f"sleeper-spark {ss.__version__}"


def test_init_create_and_list_tables(warehouse: str) -> None:
    assert run_json("--warehouse", warehouse, "init")["ready"] is True
    created = run_json("--warehouse", warehouse, "create", "events", "--schema",
                       "day:string,n:int64 not null,amount:decimal(10,2)", "--partition-by", "day",
                       "--property", "owner=ops")
    assert created["partition_by"] == ["day"] and created["version"] == 1 and created["properties"] == {"owner": "ops"}
    assert created["schema"][1] == {"name": "n", "type": "int64", "nullable": False}
    assert run_json("--warehouse", warehouse, "tables") == ["events"]
    assert "events" in run("--warehouse", warehouse, "tables").stdout
    table = ss.Catalog.local(warehouse).table("events")
    assert table.schema.field("amount").type == pa.decimal128(10, 2)


def test_describe_history_files_and_log_as_json_and_tables(warehouse: str, events: ss.Table) -> None:
    described = run_json("--warehouse", warehouse, "describe", "events")
    assert (described["version"], described["files"], described["rows"]) == (7, 6, 6)
    history = run_json("--warehouse", warehouse, "history", "events")
    assert [s["version"] for s in history] == list(range(2, 8)) and history[0]["metadata"] == {"seq": "0"}
    assert history[0]["operation_metrics"] == {}  # a merge's or update's counts (tests/changes)
    assert len(run_json("--warehouse", warehouse, "files", "events")) == 6
    assert len(run_json("--warehouse", warehouse, "files", "events", "--version", "3")) == 2
    log = run_json("--warehouse", warehouse, "log", "events", "--from", "2", "--limit", "2")
    assert [(e["number"], e["transaction"]["type"]) for e in log] == [(2, "add_files"), (3, "add_files")]
    assert run_json("--warehouse", warehouse, "log", "events")[0]["transaction"]["type"] == "create_table"
    for command in ("describe", "history", "files", "log"):
        assert "events" in run("--warehouse", warehouse, command, "events").stdout


def test_compact_snapshot_vacuum_and_verify(warehouse: str, events: ss.Table) -> None:
    compacted = run_json("--warehouse", warehouse, "compact", "events", "--partition", "day=d0")
    assert compacted["snapshot"]["operation"] == "compact" and compacted["snapshot"]["files_removed"] == 3
    assert "compacted 3 file(s) into 1" in run("--warehouse", warehouse, "compact", "events").stdout
    assert run_json("--warehouse", warehouse, "compact", "events")["snapshot"] is None
    assert run_json("--warehouse", warehouse, "snapshot", "events")["state_snapshot"] == 9
    dry = run_json("--warehouse", warehouse, "vacuum", "events", "--older-than", "0", "--dry-run")
    assert dry["dry_run"] and dry["data_files_deleted"] == 6
    assert len(data_files_on_disk(events)) == 8
    assert "would delete" in run("--warehouse", warehouse, "vacuum", "events", "--dry-run").stdout
    done = run_json("--warehouse", warehouse, "vacuum", "events", "--older-than", "0s")
    assert not done["dry_run"] and done["data_files_deleted"] == 6 and len(data_files_on_disk(events)) == 2
    verified = run_json("--warehouse", warehouse, "verify", "events")
    assert verified["ok"] and verified["files_checked"] == 2
    assert "all present and intact" in run("--warehouse", warehouse, "verify", "events").stdout


def test_vacuum_keeps_young_orphans_by_default(warehouse: str, events: ss.Table) -> None:
    orphan = disk_path(events, "data/day=d0/orphan.parquet")
    orphan.write_bytes(disk_path(events, events.files()[0].path).read_bytes())
    assert run_json("--warehouse", warehouse, "vacuum", "events")["data_files_deleted"] == 0
    age(orphan, timedelta(days=2))
    assert run_json("--warehouse", warehouse, "vacuum", "events")["deleted"] == ["data/day=d0/orphan.parquet"]


def test_verify_exits_1_when_a_file_is_damaged(warehouse: str, events: ss.Table) -> None:
    disk_path(events, events.files()[0].path).write_bytes(b"not parquet")
    done = run("--warehouse", warehouse, "verify", "events", "--json", check=False)
    assert done.returncode == 1 and json.loads(done.stdout)["ok"] is False
    assert "1 problem" in done.stderr and "Traceback" not in done.stderr


def test_lock_status_shows_a_held_maintenance_lock_and_break_clears_it(warehouse: str) -> None:
    # Given a table whose maintenance lock is held by a job that died
    table = ss.Catalog.local(warehouse).create_table("locked", pa.schema([("x", pa.int64())]))
    Mutex(table.store, maintenance_lock_path(table), label="vacuum of locked", lease_s=3600).acquire()
    # Then status names the holder, break removes it, and status is empty again
    assert "locked" in run("--warehouse", warehouse, "lock", "status").stdout
    (record,) = run_json("--warehouse", warehouse, "lock", "status")["locks"]
    assert record["table"] == "locked" and record["expired"] is False
    assert record["holder"].startswith("vacuum of locked (pid ")
    assert run("--warehouse", warehouse, "lock", "break", "locked").stdout.strip() == "maintenance lock of locked broken"
    assert run_json("--warehouse", warehouse, "lock", "status")["locks"] == []


def test_catalog_options_file(tmp_path: Path, warehouse: str, events: ss.Table) -> None:
    options = tmp_path / "catalog.json"
    options.write_text(json.dumps({**ss.Catalog.local(warehouse).options(), "state_snapshot_interval": 50}))
    assert run_json("--catalog-options", str(options), "tables") == ["events"]
    options.write_text("{not json")
    assert_user_error(run("--catalog-options", str(options), "tables", check=False), "not valid JSON")
    options.write_text(json.dumps({"warehouse": warehouse, "colour": "blue"}))
    assert_user_error(run("--catalog-options", str(options), "tables", check=False), "unknown sleeper option")
    options.write_text(json.dumps({"warehouse": warehouse, "versionAsOf": 2}))
    assert_user_error(run("--catalog-options", str(options), "tables", check=False),
                      "'versionAsOf' is a read option, not a catalog option")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("describe", "missing"), "no table 'missing'"),
        (("files", "events", "--version", "99"), "no snapshot with version 99"),
        (("history",), "Missing argument"),
        (("frobnicate",), "No such command"),
        (("vacuum", "events", "--older-than", "soon"), "cannot read the duration"),
        (("create", "bad name", "--schema", "a:int64"), "bad name"),
        (("create", "other", "--schema", "a:int128"), "unknown type 'int128'"),
        (("create", "events", "--schema", "a:int64"), "exists already"),
        (("compact", "events", "--partition", "n=1"), "--partition takes column=value"),
    ],
)
def test_user_errors_exit_1_with_one_line_and_no_traceback(
    warehouse: str, events: ss.Table, args: tuple[str, ...], fragment: str
) -> None:
    assert_user_error(run("--warehouse", warehouse, *args, check=False), fragment)


def test_a_missing_catalog_is_a_user_error() -> None:
    assert_user_error(run("tables", check=False), "no catalog given")


@pytest.mark.parametrize("command", [["tables"], ["describe", "events"], ["history", "events"], ["lock", "status"]])
def test_a_missing_warehouse_exits_2_and_creates_nothing(tmp_path: Path, command: list[str]) -> None:
    # Given a mistyped warehouse path
    missing = tmp_path / "no" / "such" / "dir"

    # When a read command runs against it
    done = run("--warehouse", str(missing), *command, check=False)

    # Then it fails with exit code 2 and one line naming the path, and creates no folder
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr == f"sleeper-spark: error: the warehouse {missing} does not exist: check the path " \
        "(create_table, catalog.write and `sleeper-spark init` create a warehouse; reads never do)\n"
    assert not (tmp_path / "no").exists()


def test_init_creates_a_missing_warehouse(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such" / "dir"

    run("--warehouse", str(missing), "init")

    assert missing.is_dir() and run_json("--warehouse", str(missing), "tables") == []


def test_debug_shows_the_traceback(warehouse: str) -> None:
    run("--warehouse", warehouse, "init")
    done = run("--warehouse", warehouse, "--debug", "describe", "missing", check=False)
    assert done.returncode == 1 and "Traceback" in done.stderr and "TableNotFoundError" in done.stderr


def test_truncate_reports_that_young_transactions_stay(warehouse: str) -> None:
    table = ss.Catalog.local(warehouse).create_table("young", pa.schema([("x", pa.int64())]))
    for x in range(12):
        table.write(pa.table({"x": [x]}))
    table.create_state_snapshot()
    result = run_json("--warehouse", warehouse, "truncate", "young", "--keep", "0s", "--margin", "0")
    assert result["up_to"] is None and result["first_transaction"] == 1
    assert "nothing to truncate in young" in run("--warehouse", warehouse, "truncate", "young").stdout


def test_verify_deep_finds_false_statistics_and_repair_rewrites_the_file(warehouse: str) -> None:
    # Given a file whose recorded bounds leave out a value it holds (as files of older builds could)
    table = ss.Catalog.local(warehouse).create_table("stats", pa.schema([("id", pa.int64()), ("x", pa.int64())]))
    (file,) = table.data_file_writer().write_all([pa.table({"id": [1, 2, 3], "x": [5, 50, 500]})])
    narrow = file.model_copy(update={"column_stats": {**file.column_stats,
                                                      "x": ss.ColumnStats(min=50, max=500, null_count=0)}})
    table.commit_files([narrow], "append", {}, new_write_id())

    # Then a plain verify passes, a deep one reports the file, and --repair rewrites it
    assert run_json("--warehouse", warehouse, "verify", "stats")["ok"] is True
    deep = run("--warehouse", warehouse, "verify", "stats", "--deep", "--json", check=False)
    assert deep.returncode == 1 and "--deep --repair" in " ".join(deep.stderr.split())  # as a terminal may wrap it
    (problem,) = json.loads(deep.stdout)["problems"]
    assert problem["problem"] == "stats" and "x: min 50 recorded, the data holds 5" in problem["detail"]
    repaired = run_json("--warehouse", warehouse, "verify", "stats", "--deep", "--repair")
    assert repaired["repaired_version"] == 3
    assert run_json("--warehouse", warehouse, "verify", "stats", "--deep")["ok"] is True
    assert ss.Catalog.local(warehouse).table("stats").scan(filter=pc.field("x") < 10).num_rows == 1
    assert_user_error(run("--warehouse", warehouse, "verify", "stats", "--repair", check=False), "--repair needs --deep")

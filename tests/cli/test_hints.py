"""The command's hints lead to the fix: a setup step by name, the reason nothing happened, a warning first."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

import sleeper_spark as ss
from tests.cli.test_cli import EXECUTABLE, run


@pytest.fixture
def warehouse(tmp_path: Path) -> str:
    return str(tmp_path / "warehouse")


@pytest.fixture
def snapshotted(warehouse: str) -> ss.Table:
    """A young table with a state snapshot: truncation could cut, but for the 10-minute minimum."""
    table = ss.Catalog.local(warehouse).create_table("young", pa.schema([("x", pa.int64())]))
    for x in range(3):
        table.write(pa.table({"x": [x]}), metadata={"batch": str(x)})
    table.create_state_snapshot()
    return table


def test_truncate_says_why_nothing_was_truncated(warehouse: str, snapshotted: ss.Table) -> None:
    # When the window is shorter than the minimum age of a truncated transaction
    done = run("--warehouse", warehouse, "truncate", "young", "--keep", "0s", "--margin", "0")

    # Then the output gives the reason and the minimum
    assert "nothing to truncate in young (log starts at 1): transactions younger than 10 minutes are never " \
        "truncated, whatever --keep says" in " ".join(done.stdout.split())


def test_truncate_without_a_state_snapshot_names_the_command_that_writes_one(warehouse: str) -> None:
    table = ss.Catalog.local(warehouse).create_table("bare", pa.schema([("x", pa.int64())]))
    table.write(pa.table({"x": [1]}))

    done = run("--warehouse", warehouse, "truncate", "bare")

    assert "write one with `sleeper-spark snapshot bare`" in " ".join(done.stdout.split())


@pytest.mark.parametrize(("older_than", "warned"), [("0s", True), ("30m", True), ("1h", False), ("24h", False)])
def test_vacuum_with_a_short_window_warns_about_running_writers(
    warehouse: str, snapshotted: ss.Table, older_than: str, warned: bool
) -> None:
    done = run("--warehouse", warehouse, "vacuum", "young", "--older-than", older_than, "--dry-run")

    warning = (f"sleeper-spark: warning: --older-than {older_than} also deletes the files of writes still running "
               "(they are not part of the table until they commit): use a window longer than the longest write job\n")
    assert (done.stderr == warning) is warned and (done.stderr == "") is not warned


@pytest.mark.parametrize("command", ["history", "log"])
def test_timestamps_stay_on_one_line_at_80_columns(warehouse: str, snapshotted: ss.Table, command: str) -> None:
    # Given a terminal 80 columns wide
    env = {**os.environ, "COLUMNS": "80"}
    env.pop("SLEEPER_SPARK_WAREHOUSE", None)

    # When the history or the log is printed
    done = subprocess.run([str(EXECUTABLE), "--warehouse", warehouse, command, "young"], capture_output=True,
                          text=True, env=env, timeout=120, check=True)

    # Then every commit time reads whole on its own line, in UTC
    times = [s.committed_at for s in snapshotted.history()]
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    for committed_at in times:
        assert any(f"{committed_at:%Y-%m-%d %H:%M:%S}Z" in line for line in lines), done.stdout


@pytest.fixture
def moto_endpoint() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def test_an_aws_catalog_before_init_names_the_init_command(tmp_path: Path, moto_endpoint: str) -> None:
    # Given an AWS catalog whose DynamoDB tables were never created (moto on loopback)
    options = tmp_path / "catalog.json"
    options.write_text(json.dumps(ss.Catalog.aws("s3://bucket/warehouse", region="us-east-1",
                                                 endpoint_url=moto_endpoint).options()))
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "COLUMNS": "250"}
    for variable in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "SLEEPER_SPARK_WAREHOUSE"):
        env.pop(variable, None)

    # When a command reads it
    done = subprocess.run([str(EXECUTABLE), "--catalog-options", str(options), "tables"], capture_output=True,
                          text=True, env=env, timeout=120)

    # Then the one line on stderr names the command that sets it up
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert "the DynamoDB table does not exist; create it with `sleeper-spark init`" in done.stderr

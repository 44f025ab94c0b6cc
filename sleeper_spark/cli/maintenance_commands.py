"""Commands that maintain a table: snapshot, compact, vacuum, truncate, repair, verify."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

import pyarrow as pa
import pyarrow.compute as pc
import typer

from sleeper_spark import maintenance
from sleeper_spark.cli.context import JsonFlag, TableName, open_catalog, parse_duration, parse_size
from sleeper_spark.cli.output import ProgressBars, emit_json, human_bytes, print_fields, print_table, say, stderr, warn
from sleeper_spark.commit import TRUNCATION_MIN_AGE_S
from sleeper_spark.errors import ConfigError
from sleeper_spark.table import Table, reading


def snapshot(name: TableName, json_: JsonFlag = False) -> None:
    """Write a state snapshot of the table's current version (faster cold opens)."""
    number = open_catalog().table(name).create_state_snapshot()
    if json_:
        emit_json({"table": name, "state_snapshot": number})
    else:
        say(f"state snapshot of {name} at transaction {number}")


def compact(
    name: TableName,
    target_size: Annotated[str, typer.Option("--target-size", help="Target file size, e.g. 128MiB.")] = "128MiB",
    partitions: Annotated[list[str] | None, typer.Option(
        "--partition", help="Only this partition, as column=value; repeat for more columns.")] = None,
    json_: JsonFlag = False,
) -> None:
    """Rewrite small files into files near the target size (in this process)."""
    table = open_catalog().table(name)
    where = _partition_filter(table, partitions or [])
    with ProgressBars(enabled=not json_) as bars:
        result = maintenance.compact(table, None, parse_size(target_size), where, executor="local", progress=bars)
    if json_:
        emit_json({"table": name, "snapshot": result})
    elif result is None:
        say(f"nothing to compact in {name}")
    else:
        say(f"compacted {result.files_removed} file(s) into {result.files_added} "
            f"({human_bytes(result.bytes_added)}): version {result.version}")


def vacuum(
    name: TableName,
    older_than: Annotated[str, typer.Option("--older-than", help="Keep versions and files younger than this.")] = "24h",
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only report what would be deleted.")] = False,
    json_: JsonFlag = False,
) -> None:
    """Delete data files, spilled bodies and state snapshots that no retained version needs."""
    table = open_catalog().table(name)
    window = parse_duration(older_than)
    if window < SHORT_VACUUM_WINDOW:
        warn(f"--older-than {older_than} also deletes the files of writes still running (they are not part of "
             "the table until they commit): use a window longer than the longest write job")
    with ProgressBars(enabled=not json_) as bars:
        report = maintenance.vacuum(table, window, dry_run, progress=bars)
    if json_:
        emit_json(report)
        return
    verb = "would delete" if dry_run else "deleted"
    print_fields(f"vacuum of {name}" + (" (dry run)" if dry_run else ""), [
        (f"data files {verb}", report.data_files_deleted), (f"spilled bodies {verb}", report.bodies_deleted),
        (f"state snapshots {verb}", report.state_snapshots_deleted), ("bytes", human_bytes(report.bytes_deleted)),
    ])


def truncate(
    name: TableName,
    keep: Annotated[str, typer.Option("--keep", help="Time-travel window to keep reachable, e.g. 24h.")] = "24h",
    margin: Annotated[int, typer.Option("--margin", help="Transactions kept below the newest state snapshot.")] = 10,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only report what would be deleted.")] = False,
    json_: JsonFlag = False,
) -> None:
    """Delete log transactions (and their spilled bodies) that a state snapshot already covers."""
    table = open_catalog().table(name)
    window = parse_duration(keep)
    report = maintenance.truncate_log(table, window, margin, dry_run=dry_run)
    if json_:
        emit_json(report)
    elif report.up_to is None:
        say(f"nothing to truncate in {name} (log starts at {report.first_transaction}): "
            f"{_why_nothing_to_truncate(table, window)}")
    else:
        verb = "would delete" if dry_run else "deleted"
        say(f"{verb} transactions up to {report.up_to} ({report.transactions_deleted} entries, "
            f"{report.bodies_deleted} spilled bodies) of {name}")


def repair(
    name: TableName,
    transaction: Annotated[int, typer.Argument(help="The number of the damaged log entry.")],
    reason: Annotated[str, typer.Option("--reason", help="Recorded in the log with the loss.")] = "damaged log entry",
    json_: JsonFlag = False,
) -> None:
    """Record a damaged log entry as lost, so the versions after it read and writes go on."""
    snapshot = open_catalog().table(name).record_lost_transaction(transaction, reason)
    if json_:
        emit_json({"table": name, "snapshot": snapshot})
    else:
        say(f"transaction {transaction} of {name} is recorded as lost (version {snapshot.version}); what it did "
            "is gone from the table, and files it added stay on the store until vacuum")


# Below this, vacuum is likely to catch a running job's files (its docs ask for the longest job).
SHORT_VACUUM_WINDOW = timedelta(hours=1)


def _why_nothing_to_truncate(table: Table, keep: timedelta) -> str:
    """The likeliest reason a truncation cut nothing, for a reader who expected it to."""
    minimum = timedelta(seconds=TRUNCATION_MIN_AGE_S)
    if table.head.newest_state_snapshot() is None:
        return f"only transactions a state snapshot covers can go; write one with `sleeper-spark snapshot {table.name}`"
    if keep < minimum:
        return (f"transactions younger than {minimum.seconds // 60} minutes are never truncated, "
                "whatever --keep says, so that a reader or writer still using them finds them")
    return ("every transaction is still needed: inside the --keep window, within --margin of the newest state "
            f"snapshot, or younger than {minimum.seconds // 60} minutes")


def verify(name: TableName, version: Annotated[int | None, typer.Option(
        "--version", help="A past version; default: the latest.")] = None,
        deep: Annotated[bool, typer.Option(
            "--deep", help="Also read every file and check its recorded row count, partition values and "
                           "statistics against its rows.")] = False,
        repair: Annotated[bool, typer.Option(
            "--repair", help="With --deep, on the latest version: rewrite the files whose statistics are "
                             "false (one compact snapshot).")] = False,
        json_: JsonFlag = False) -> None:
    """Check that every file of a version exists with its size and checksum; exit 1 if not."""
    if repair and (not deep or version is not None):
        raise ConfigError("--repair needs --deep and works on the latest version only (no --version)")
    table = open_catalog().table(name)
    state = table.state(version)
    files = list(state.files.values())
    with ProgressBars(enabled=not json_) as bars:
        report = reading.verify_files(table.store, table.root, files, state.version,
                                      progress=bars.advance("verifying", len(files)),
                                      deep_schema=state.schema if deep else None)
    repaired = None
    if repair and any(p.problem == "stats" for p in report.problems):
        repaired = maintenance.repair_statistics(table, found=report)  # the deep verify just made, not another
    if json_:
        emit_json({**report.model_dump(mode="json"), "ok": report.ok,
                   "repaired_version": None if repaired is None else repaired.version})
    elif report.ok:
        checked = "present, intact, statistics true" if deep else "present and intact"
        say(f"{name} version {report.version}: {report.files_checked} file(s), "
            f"{human_bytes(report.bytes_checked)}, all {checked}")
    else:
        print_table(f"problems in {name} version {report.version}", ("path", "problem", "detail"),
                    [(p.path, p.problem, p.detail) for p in report.problems])
    if repaired is not None and not json_:
        say(f"rewrote the files with false statistics: version {repaired.version}")
    remaining = [p for p in report.problems if repaired is None or p.problem != "stats"]
    if remaining:
        stderr.print(f"verify found {len(remaining)} problem(s) in {report.files_checked} file(s)", markup=False)
        if any(p.problem == "stats" for p in remaining):
            stderr.print(f"rewrite the files with false statistics: sleeper-spark verify {name} --deep --repair",
                         markup=False)
        raise typer.Exit(1)


def _partition_filter(table: Table, assignments: list[str]) -> pc.Expression | None:
    """``--partition day=2024-01-01`` as an expression on the partition column's type."""
    where: pc.Expression | None = None
    schema = table.schema
    for assignment in assignments:
        column, sep, value = assignment.partition("=")
        if not sep or column not in table.partition_by:
            raise ConfigError(f"--partition takes column=value with a partition column of "
                              f"{table.name!r} ({', '.join(table.partition_by) or 'none'}), not {assignment!r}")
        try:
            typed = pa.scalar(value).cast(schema.field(column).type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            type_ = schema.field(column).type
            raise ConfigError(f"{value!r} is not a value of the {type_} column {column!r}") from None
        term = pc.field(column) == typed
        where = term if where is None else where & term
    return where

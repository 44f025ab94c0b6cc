"""Runs every benchmark and prints ratio tables; writes them to docs/benchmarks.md.

    python -m bench            # full sizes (under 20 minutes on 2 cores)
    python -m bench --only X   # the benchmarks whose module name contains X: only their sections change
    python -m bench --quick    # tiny sizes: a smoke run, numbers mean nothing

Each benchmark's section of the file is updated in place: its table is replaced and its date line
set, while the notes written under the table and every other section stay as they are.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import platform
import sys
import traceback
from pathlib import Path

import pyarrow

from bench.common import Report, machine_summary, warn_if_busy

# (module, title): each module has run(report, quick).
BENCHMARKS = [
    ("bench.arrow_io", "pyarrow write and scan"),
    ("bench.commits", "Commit latency"),
    ("bench.open_table", "Opening tables and state memory"),
    ("bench.spark_io", "Spark write and scan"),
    ("bench.sql_catalog", "SQL catalog: named tables against the helper API"),
    ("bench.session_catalog", "Spark's session catalog: sleeper tables beside every format"),
    ("bench.merge", "Tables that change: MERGE"),
    ("bench.changes", "Change data capture: reading a table's changes"),
    ("bench.iceberg", "Iceberg metadata: publishing after each commit, and from scratch"),
    ("bench.delta", "Delta log: publishing after each commit, and opening it in delta-rs"),
    ("bench.streaming", "Structured Streaming: sink batch rate, source latency"),
    ("bench.aws", "AWS test servers: commits, requests, contention"),
    ("bench.group_commit", "Group commit: many writers, one table"),
    ("bench.group_commit_sim", "Group commit: contention simulation"),
    ("bench.connect", "Spark Connect: reads and writes against plain Parquet on the same server"),
    ("bench.curves", "Clustering curves: the files a range opens, Hilbert against Z-order"),
    ("bench.clustering", "Clustering: selective queries on a clustered table"),
    ("bench.layout_writes", "Optimized writes and automatic compaction"),
    ("bench.transactions", "Multi-table transactions"),
]


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for a smoke run")
    parser.add_argument("--only", action="append", help="run only benchmarks whose module name contains this")
    parser.add_argument("--output", default=None, help="where to write the Markdown tables "
                        "(default: docs/benchmarks.md for a full run, nowhere for --quick)")
    args = parser.parse_args()

    reports: list[Report] = []
    failed = []
    print(machine_summary())
    for module_name, title in BENCHMARKS:
        if args.only and not any(part in module_name for part in args.only):
            continue
        if warning := warn_if_busy():
            print(warning)
        print(f"\n== {title}", flush=True)
        report = Report(title)
        try:
            importlib.import_module(module_name).run(report, args.quick)  # type: ignore[attr-defined]
        except ModuleNotFoundError as error:
            print(f"  skipped: {error}")
            continue
        except Exception:
            traceback.print_exc()
            failed.append(module_name)
        reports.append(report)

    output = args.output or (None if args.quick else "docs/benchmarks.md")
    if output:
        write_markdown(Path(output), reports, full=not args.only)
        print(f"\nwrote {output}" + (f" (the sections of {', '.join(r.title for r in reports)})" if args.only else ""))
    return 1 if failed else 0


def write_markdown(path: Path, reports: list[Report], full: bool = True) -> None:
    """Puts each report's table into its section of ``path`` (a section is added where missing);
    ``full``: every benchmark ran, so the file's header line names this run too."""
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    machine = f"machine: {machine_summary()}; pyarrow {pyarrow.__version__}; {platform.system()} {platform.release()}"
    lines = path.read_text().split("\n") if path.exists() else []
    if not lines or lines == [""]:
        lines = ["# Benchmarks", "", f"{_FULL_RUN}{now}; {machine}.", "",
                 "Produced by `python -m bench` (see README). Each ratio compares ours with its baseline, measured "
                 "side by side in the same run; times are the best of the runs with the median in brackets.", ""]
    elif full:
        lines = [f"{_FULL_RUN}{now}; {machine}." if line.startswith(_FULL_RUN) else line for line in lines]
    for report in reports:
        lines = _with_section(lines, report, f"{_SECTION_RUN}{now}; {machine}.")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines))


def _row_name(line: str) -> str:
    return line.strip().strip("|").split("|")[0].strip()


_FULL_RUN = "Latest full run: "
_SECTION_RUN = "Latest run of this section: "


def _with_section(lines: list[str], report: Report, stamp: str) -> list[str]:
    """``lines`` with ``report``'s section: its date line and table replaced, its notes kept."""
    heading = f"### {report.title}"
    if heading not in lines:
        while lines and lines[-1] == "":
            lines = lines[:-1]
        return [*lines, "", heading, "", stamp, "", *report.table(), ""]
    start = lines.index(heading) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith(("### ", "## "))), len(lines))
    body = [line for line in lines[start:end] if not line.startswith(_SECTION_RUN)]
    while body and body[0] == "":
        body = body[1:]
    tables = []  # (first line, end) of each table in the section
    for i, line in enumerate(body):
        if line.startswith("| benchmark |"):
            stop = i
            while stop < len(body) and body[stop].startswith("|"):
                stop += 1
            tables.append((i, stop))
    if not tables:
        body = [*report.table(), "", *body]
    else:
        # A section may hold several tables (a run by hand beside the benchmark's own): the one
        # sharing the most row names with the report is the one it replaces.
        names = {row.benchmark for row in report.rows}
        first, last = max(tables, key=lambda span: len(names & {_row_name(line) for line in body[span[0]:span[1]]}))
        body = [*body[:first], *report.table(), *body[last:]]
    return [*lines[:start], "", stamp, "", *body, *([""] if end < len(lines) and body[-1:] != [""] else []),
            *lines[end:]]


if __name__ == "__main__":
    sys.exit(main())

"""What publishing Iceberg metadata after each commit costs, and publishing a table from scratch.

Publishing never reads a data file (it takes paths, sizes, partitions and statistics from the
log), so every table here is built from synthetic files committed with ``t.commit_files``; the
files do not exist. Each file has 5 columns of statistics: ``id`` (long), ``name`` (string),
``amount`` (double), ``ts`` (timestamp, UTC) and ``day`` (string, the partition column, 30 days).

Publishing runs behind the commit, on the table's own thread: each commit here is timed until it
returns, and then its lag until it is published (``t.publishing.flush()``) before the next commit
starts, so the two never overlap.

Commit latency: two tables built identically (the same commits, in the same order), then one
turned on with the ``iceberg.publish`` property and the other set to ``false`` in the same kind
of commit. Then small commits alternate between the two, the order swapped every round: an
append of 3 files, and at the larger size a delete of 3 files (one from each of 3 of the build's
commits, through ``commit_replacement``, the end of ``delete_where`` and of compaction). The
ratio is the median commit with publishing over the median without. Sizes: 1,000 files (10
commits of 100) and 100,000 files (100 commits of 1,000); ``--quick``: 40 and 400.

From scratch: ``t.publish_iceberg(rebuild=True)`` of 100,000 files built in 100 commits of 1,000
and in 1,000 commits of 100 (``--quick``: 400 files in 4 and in 40 commits); it publishes every
version in the log, so the second shape writes 10 times as many versions.
"""

from __future__ import annotations

import datetime as dt
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

import sleeper_spark as ss
from bench.common import Report, Row
from sleeper_spark.maintenance.replacement import commit_replacement
from sleeper_spark.models import ColumnStats, FileRef

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.float64()),
                    ("ts", pa.timestamp("us", tz="UTC")), ("day", pa.string())])
DAYS = 30
ROWS_PER_FILE = 50_000
APPENDED_FILES = 3
REMOVED_FILES = 3
_START = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)


def synthetic_file(number: int) -> FileRef:
    """File ``number`` of a table: its rows' ids are a range, its names a range of customer names,
    its timestamps one day of the file's partition."""
    day = _START + dt.timedelta(days=number % DAYS)
    first_id = number * ROWS_PER_FILE
    ts_low = day + dt.timedelta(seconds=number % 3600)
    stats = {
        "id": ColumnStats(min=first_id, max=first_id + ROWS_PER_FILE - 1),
        "name": ColumnStats(min=f"customer-{number:09d}-a", max=f"customer-{number:09d}-z", null_count=number % 7),
        "amount": ColumnStats(min=-float(number % 1000), max=1000.5 + number % 97),
        "ts": ColumnStats(min=ts_low.isoformat(), max=(ts_low + dt.timedelta(hours=20)).isoformat()),
    }
    day_text = day.date().isoformat()
    return FileRef(path=f"data/day={day_text}/part-{number:09d}-{uuid.uuid4().hex[:8]}.parquet",
                   partition={"day": day_text}, size_bytes=64 * 2**20 + number % 4096, row_count=ROWS_PER_FILE,
                   checksum=f"sha256:{uuid.uuid4().hex}", column_stats=stats)


class Twins:
    """Tables built with the same commits; ``files[c]`` are the files of build commit ``c`` (the
    same numbers in every table, the paths each table's own)."""

    def __init__(self, catalog: ss.Catalog, names: list[str], commits: int, per_commit: int) -> None:
        self.tables = [catalog.create_table(name, SCHEMA, partition_by=["day"]) for name in names]
        self.files: list[list[list[FileRef]]] = [[] for _ in names]
        self.lags: list[float] = []  # seconds from a commit's return until it was published (measured rounds)
        self.next_number = 0
        for _ in range(commits):
            self.append(per_commit)

    def append(self, count: int, flip: bool = False) -> list[float]:
        """Appends ``count`` new files to each table (``flip``: the last table first); the seconds
        each table's commit took, in table order."""
        numbers = range(self.next_number, self.next_number + count)
        self.next_number += count
        took = [0.0] * len(self.tables)
        for i in _order(len(self.tables), flip):
            files = [synthetic_file(n) for n in numbers]
            started = time.perf_counter()
            self.tables[i].commit_files(files, "append", {}, uuid.uuid4().hex)
            took[i] = time.perf_counter() - started
            self.settle(i)
            self.files[i].append(files)
        return took

    def settle(self, table: int) -> None:
        """Waits until the table's last commit is published; records the lag if it publishes."""
        started = time.perf_counter()
        assert self.tables[table].publishing.flush(timeout=600)
        if self.tables[table].state().properties.get("iceberg.publish") == "true":
            self.lags.append(time.perf_counter() - started)


def _order(count: int, flip: bool) -> list[int]:
    return list(range(count))[::-1] if flip else list(range(count))


def run(report: Report, quick: bool) -> None:
    small, large = ((4, 10), (4, 100)) if quick else ((10, 100), (100, 1_000))
    rounds = 5 if quick else 30
    work = Path(tempfile.mkdtemp(prefix="bench-iceberg-"))
    try:
        catalog = ss.Catalog.local(str(work))
        for commits, per_commit in (small, large):
            _commit_latency(report, catalog, commits, per_commit, rounds, deletes=(commits, per_commit) == large)
        _from_scratch(report, catalog, *large)
        _from_scratch(report, catalog, large[0] * 10, large[1] // 10)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _commit_latency(report: Report, catalog: ss.Catalog, commits: int, per_commit: int, rounds: int,
                    deletes: bool) -> None:
    size = commits * per_commit
    twins = Twins(catalog, [f"on_{size}", f"off_{size}"], commits, per_commit)
    on, off = twins.tables
    started = time.perf_counter()
    on.set_properties({"iceberg.publish": "true"})  # publishes every version so far, behind the commit
    assert on.publishing.flush(timeout=600)
    catch_up, caught_up = time.perf_counter() - started, on.latest().version
    off.set_properties({"iceberg.publish": "false"})
    twins.append(APPENDED_FILES)  # one unmeasured round: the publisher's state is now warm
    shape = f"{size:,} files ({commits} commits of {per_commit:,}), 5 columns of stats, partitioned by day"
    twins.lags.clear()
    appends = _alternate(lambda flip: twins.append(APPENDED_FILES, flip), rounds)
    _add_ratio(report, f"{shape}: commit of an append of {APPENDED_FILES} files, publishing on vs off, "
               f"median of {rounds}", appends, f"turning publishing on published {caught_up} versions "
               f"in {catch_up:.2f} s")
    _add_lag(report, f"{shape}: lag from an append's commit until it is published", twins.lags)
    if deletes:
        doomed = _spread(twins, REMOVED_FILES * (rounds + 1))

        def delete(flip: bool) -> list[float]:
            return _delete_in_each(twins, [doomed[i].pop() for i in range(len(twins.tables))], flip)

        delete(False)
        twins.lags.clear()
        _add_ratio(report, f"{shape}: commit of a delete of {REMOVED_FILES} files from {REMOVED_FILES} "
                   f"earlier commits, publishing on vs off, median of {rounds}", _alternate(delete, rounds),
                   f"each rewrites the manifests of {REMOVED_FILES} build commits ({per_commit:,} files each)")
        _add_lag(report, f"{shape}: lag from a delete's commit until it is published", twins.lags)
    assert len(on.files()) == len(off.files())
    # Publishing logs its failures and lets the commit stand: check that every commit published.
    assert on.iceberg.publisher().newest_published() == on.latest().version, "a commit was not published"


def _alternate(commit: Callable[[bool], list[float]], rounds: int) -> tuple[list[float], list[float]]:
    """Runs ``commit`` (which commits to the on and the off table in turn, the off one first when
    given True) ``rounds`` times; each table's latencies."""
    ons, offs = [], []
    for round_ in range(rounds):
        took_on, took_off = commit(round_ % 2 == 1)
        ons.append(took_on)
        offs.append(took_off)
    return ons, offs


def _add_ratio(report: Report, benchmark: str, latencies: tuple[list[float], list[float]], note: str) -> None:
    ons, offs = latencies
    on, off = statistics.median(ons), statistics.median(offs)
    ratio = on / off
    report.add(Row(benchmark, _ms(on, ons), _ms(off, offs), ratio, "<= 1.2x", ratio <= 1.2, note))


def _add_lag(report: Report, benchmark: str, lags: list[float]) -> None:
    report.add(Row(benchmark, _ms(statistics.median(lags), lags), "-", None, "measured", None,
                   f"p90 {sorted(lags)[int(len(lags) * 0.9)] * 1000:.1f} ms; the commit itself returned before"))


def _ms(median: float, values: list[float]) -> str:
    return f"median {median * 1000:.1f} ms (best {min(values) * 1000:.1f})"


def _spread(twins: Twins, count: int) -> list[list[list[str]]]:
    """Per table, ``count // REMOVED_FILES`` deletes of ``REMOVED_FILES`` paths, each from as many
    different build commits (the oldest first), the same file numbers in every table."""
    per_table: list[list[list[str]]] = []
    for commits in twins.files:
        build = [files for files in commits if len(files) > APPENDED_FILES]
        picks = [build[(i * 7) % len(build)][i // len(build)].path for i in range(count)]
        per_table.append([picks[i:i + REMOVED_FILES] for i in range(0, count, REMOVED_FILES)][::-1])
    return per_table


def _delete_in_each(twins: Twins, paths: list[list[str]], flip: bool) -> list[float]:
    took = [0.0] * len(twins.tables)
    for i in _order(len(twins.tables), flip):
        started = time.perf_counter()
        commit_replacement(twins.tables[i], "delete", paths[i], [])
        took[i] = time.perf_counter() - started
        twins.settle(i)
    return took


def _from_scratch(report: Report, catalog: ss.Catalog, commits: int, per_commit: int) -> None:
    size = commits * per_commit
    table = Twins(catalog, [f"scratch_{commits}x{per_commit}"], commits, per_commit).tables[0]
    started = time.perf_counter()
    version = table.publish_iceberg(rebuild=True)
    took = time.perf_counter() - started
    assert version == table.latest().version
    report.add(Row(f"{size:,} files built in {commits:,} commits of {per_commit:,}: t.publish_iceberg(rebuild=True)",
                   f"{took:.2f} s", "-", None, "<= 30 s", took <= 30,
                   f"{version} versions published, {took / version * 1000:.1f} ms each"))

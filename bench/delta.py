"""What publishing a Delta log after each commit costs, and what opening it costs delta-rs.

Tables are built as the Iceberg benchmark builds them (``bench.iceberg``): synthetic files
committed with ``t.commit_files`` (publishing never reads a data file, so they do not exist),
5 columns of statistics, partitioned by day.

Commit latency: two tables built identically, one then publishing both formats (the
``iceberg.publish`` and ``delta.publish`` properties), the other neither; small appends alternate
between them, the order swapped every round, each commit timed until it returns and then waited
on until it is published, so that the two never overlap. The ratio is the median commit with
publishing over the median without. Lag: a third twin publishing Delta only, from an append's
commit until it is in ``_delta_log`` (a checkpoint every 10 versions among them: the p90 shows it).
Sizes: 100,000 files (100 commits of 1,000); ``--quick``: 400 (4 of 100).

Opening: ``deltalake.DeltaTable(path)`` and its ``file_uris()`` on a table of
100,000 files in 1,000 versions that sleeper_spark published, against one of the same size that
delta-rs wrote itself with ``write_deltalake`` (1,000 appends of 100 files), alternating, the
best of 5 each (``--quick``: 400 files in 40 versions).
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from pathlib import Path

import pyarrow as pa

import sleeper_spark as ss
from bench.common import Report, Row, measure_pair, seconds
from bench.iceberg import APPENDED_FILES, Twins

ROUNDS = 30


class _Triplets(Twins):
    """Twins whose lag is measured on the table that publishes Delta only."""

    def settle(self, table: int) -> None:
        started = time.perf_counter()
        assert self.tables[table].publishing.flush(timeout=600)
        properties = self.tables[table].state().properties
        if properties.get("delta.publish") == "true" and properties.get("iceberg.publish") != "true":
            self.lags.append(time.perf_counter() - started)


def run(report: Report, quick: bool) -> None:
    commits, per_commit = (4, 100) if quick else (100, 1_000)
    rounds = 5 if quick else ROUNDS
    work = Path(tempfile.mkdtemp(prefix="bench-delta-"))
    try:
        catalog = ss.Catalog.local(str(work))
        _commit_latency(report, catalog, commits, per_commit, rounds)
        _opening(report, catalog, work, *((40, 10) if quick else (1_000, 100)))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _commit_latency(report: Report, catalog: ss.Catalog, commits: int, per_commit: int, rounds: int) -> None:
    size = commits * per_commit
    twins = _Triplets(catalog, [f"both_{size}", f"none_{size}", f"delta_{size}"], commits, per_commit)
    both, none, delta = twins.tables
    both.set_properties({"iceberg.publish": "true", "delta.publish": "true"})
    none.set_properties({"iceberg.publish": "false", "delta.publish": "false"})
    started = time.perf_counter()
    delta.set_properties({"delta.publish": "true"})  # publishes every version so far, behind the commit
    for table in twins.tables:
        assert table.publishing.flush(timeout=600)
    catch_up = time.perf_counter() - started
    twins.append(APPENDED_FILES)  # one unmeasured round: the publishers' state is now warm
    twins.lags.clear()
    ons, offs = [], []
    for round_ in range(rounds):
        took = twins.append(APPENDED_FILES, flip=round_ % 2 == 1)
        ons.append(took[0])
        offs.append(took[1])
    shape = f"{size:,} files ({commits} commits of {per_commit:,}), 5 columns of stats, partitioned by day"
    on, off = statistics.median(ons), statistics.median(offs)
    report.add(Row(f"{shape}: commit of an append of {APPENDED_FILES} files, publishing Iceberg and Delta vs "
                   f"neither, median of {rounds}", _ms(on, ons), _ms(off, offs), on / off, "<= 1.05x",
                   on / off <= 1.05, "publishing runs behind the commit, on the table's own thread"))
    lags = twins.lags
    p50 = statistics.median(lags)
    report.add(Row(f"{shape}: lag from an append's commit until it is in _delta_log, median of {len(lags)}",
                   _ms(p50, lags), "-", None, "<= 50 ms", p50 <= 0.050,
                   f"p90 {sorted(lags)[int(len(lags) * 0.9)] * 1000:.1f} ms (a checkpoint every 10 versions); "
                   f"publishing {commits + 1} versions from scratch took {catch_up:.2f} s"))
    assert delta.delta.publisher().newest_published() == delta.latest().version, "a commit was not published"


def _opening(report: Report, catalog: ss.Catalog, work: Path, commits: int, per_commit: int) -> None:
    import deltalake

    size = commits * per_commit
    ours = Twins(catalog, [f"open_{commits}x{per_commit}"], commits, per_commit).tables[0]
    ours.publish_delta()
    theirs = str(work / "delta-rs-own")
    for commit in range(commits):
        data = pa.table({"id": pa.array(range(per_commit), pa.int64()),
                         "day": [f"{commit:05d}-{i:04d}" for i in range(per_commit)]})
        deltalake.write_deltalake(theirs, data, partition_by=["day"], mode="append")
    ours_m, theirs_m = measure_pair(lambda: deltalake.DeltaTable(ours.location).file_uris(),
                                    lambda: deltalake.DeltaTable(theirs).file_uris(), 5)
    assert len(deltalake.DeltaTable(ours.location).file_uris()) == len(deltalake.DeltaTable(theirs).file_uris()) == size
    ratio = ours_m.best / theirs_m.best
    report.add(Row(f"delta-rs opening the newest version: {size:,} files in {commits:,} versions, published by "
                   "sleeper_spark vs written by delta-rs", seconds(ours_m), seconds(theirs_m), ratio, "<= 2x",
                   ratio <= 2, "DeltaTable(path).file_uris(), best of 5"))


def _ms(median: float, values: list[float]) -> str:
    return f"median {median * 1000:.1f} ms (best {min(values) * 1000:.1f})"

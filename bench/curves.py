"""Hilbert against Z-order: how many files a narrow range opens once rows are laid out along each.

Rows with two clustering columns are sorted along each curve (``sleeper_spark.datafiles.curves``)
and cut into equal files in that order; a file's min/max box on the two columns decides whether a
query opens it, as pruning does. Queries: 1 % ranges of one column, and 5 % x 5 % boxes of both,
at random places. The row is the mean share of files opened, Hilbert's against Z-order's (lower is
better; a ratio under 1 favours Hilbert). No Spark and no I/O: the layout alone (ADR 0015).
"""

from __future__ import annotations

import random
import statistics
import time

import pyarrow as pa
import pyarrow.compute as pc

from bench.common import Report, Row
from sleeper_spark.datafiles.curves import sort_by_curve


def run(report: Report, quick: bool) -> None:
    rows = 20_000 if quick else 400_000
    queries = 50 if quick else 400
    rng = random.Random(42)
    for data_name, data in (("uniform", _uniform(rng, rows)), ("skewed (one column log-normal)", _skewed(rng, rows))):
        for files in (16, 64, 256):
            layouts = {curve: _boxes(sort_by_curve(data, ["a", "b"], curve), files) for curve in ("hilbert", "z")}
            for query_name, width in (("1 % range of a", (0.01, 1.0)), ("5 % x 5 % box", (0.05, 0.05))):
                shares = {curve: _mean_share(boxes, data, width, queries, random.Random(7))
                          for curve, boxes in layouts.items()}
                ratio = shares["hilbert"] / shares["z"]
                report.add(Row(f"{data_name}, {files} files, {query_name}: share of files opened",
                               f"{shares['hilbert']:.1%}", f"{shares['z']:.1%}", ratio, "< 1 favours Hilbert",
                               None, "Hilbert vs Z-order"))
    started = time.perf_counter()
    sort_by_curve(_uniform(rng, 1_000_000), ["a", "b"])
    report.add(Row("ordering 1,000,000 rows by two columns along the Hilbert curve",
                   f"{time.perf_counter() - started:.2f} s", "", None, "", None, "keys and the sort, in Arrow"))


def _uniform(rng: random.Random, rows: int) -> pa.Table:
    return pa.table({"a": [rng.random() for _ in range(rows)], "b": [rng.random() for _ in range(rows)]})


def _skewed(rng: random.Random, rows: int) -> pa.Table:
    return pa.table({"a": [rng.lognormvariate(0, 2) for _ in range(rows)], "b": [rng.random() for _ in range(rows)]})


def _boxes(ordered: pa.Table, files: int) -> list[tuple[float, float, float, float]]:
    size = -(-ordered.num_rows // files)
    boxes = []
    for start in range(0, ordered.num_rows, size):
        part = ordered.slice(start, size)
        a, b = pc.min_max(part.column("a")), pc.min_max(part.column("b"))
        boxes.append((a["min"].as_py(), a["max"].as_py(), b["min"].as_py(), b["max"].as_py()))
    return boxes


def _mean_share(boxes: list[tuple[float, float, float, float]], data: pa.Table, width: tuple[float, float],
                queries: int, rng: random.Random) -> float:
    """Queries are placed by quantile, so that each covers the same share of rows on skewed data too."""
    a_sorted = sorted(data.column("a").to_pylist())
    b_sorted = sorted(data.column("b").to_pylist())

    def span(values: list[float], share: float) -> tuple[float, float]:
        start = rng.random() * (1 - share)
        return values[int(start * (len(values) - 1))], values[int((start + share) * (len(values) - 1))]

    shares = []
    for _ in range(queries):
        (a0, a1), (b0, b1) = span(a_sorted, width[0]), span(b_sorted, width[1])
        opened = sum(1 for lo_a, hi_a, lo_b, hi_b in boxes if hi_a >= a0 and lo_a <= a1 and hi_b >= b0 and lo_b <= b1)
        shares.append(opened / len(boxes))
    return statistics.fmean(shares)

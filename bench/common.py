"""What every benchmark shares: timing, the machine's state, and the result table."""

from __future__ import annotations

import math
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Measurement:
    """Seconds per run of one side of a comparison."""

    runs: tuple[float, ...]

    @property
    def best(self) -> float:
        return min(self.runs)

    @property
    def median(self) -> float:
        return statistics.median(self.runs)


def measure(action: Callable[[], object], repeat: int = 3, setup: Callable[[], object] | None = None) -> Measurement:
    runs = []
    for _ in range(repeat):
        if setup is not None:
            setup()
        started = time.perf_counter()
        action()
        runs.append(time.perf_counter() - started)
    return Measurement(tuple(runs))


def measure_pair(ours: Callable[[], object], baseline: Callable[[], object],
                 repeat: int = 3) -> tuple[Measurement, Measurement]:
    """Both sides, alternating run by run, so that warm-up and the machine's drift fall on both; the
    side that goes first alternates too (ours first in even rounds), so that neither always runs
    just after the other (on the data, the plan cache and the garbage the other left)."""
    return measure_pair_timed(_timed(ours), _timed(baseline), repeat)


def measure_pair_timed(ours: Callable[[], float], baseline: Callable[[], float],
                       repeat: int = 3) -> tuple[Measurement, Measurement]:
    """:func:`measure_pair` of actions that time their own part and return its seconds, so that
    what they set up before it, and what they wait for after it, stays out of both sides' times."""
    ours_runs: list[float] = []
    baseline_runs: list[float] = []
    for round_ in range(repeat):
        sides = ((ours, ours_runs), (baseline, baseline_runs))
        for action, runs in sides if round_ % 2 == 0 else sides[::-1]:
            runs.append(action())
    return Measurement(tuple(ours_runs)), Measurement(tuple(baseline_runs))


def _timed(action: Callable[[], object]) -> Callable[[], float]:
    def timed() -> float:
        started = time.perf_counter()
        action()
        return time.perf_counter() - started
    return timed


def paired_ratio(ours: Measurement, baseline: Measurement) -> float:
    """The ratio of the runs made one after the other (``measure_pair``'s rounds): each pair ran
    under the same state of the machine, so a slow spell falls on both sides of one ratio instead
    of on the best of one side. For the short queries of shared code paths, where the best of a
    few runs moves by more than the difference being looked for.

    ``measure_pair`` alternates which side goes first, and the rounds of each order give a median
    ratio of their own (:func:`ordered_ratios`); the result is their geometric mean, so that an
    advantage of going first or second cancels. On 0.07-0.3 s Spark queries the two medians of
    one row differed by up to 6 %, in either direction from run to run: what a 2 % target can
    resolve there takes 100 pairs or more.
    """
    first, second = ordered_ratios(ours, baseline)
    return first if second is None else math.sqrt(first * second)


def ordered_ratios(ours: Measurement, baseline: Measurement) -> tuple[float, float | None]:
    """The median ratio of the rounds in which ours ran first, and of those in which it ran second
    (None with a single round)."""
    ratios = [o / b for o, b in zip(ours.runs, baseline.runs, strict=True)]
    second = ratios[1::2]
    return statistics.median(ratios[0::2]), (statistics.median(second) if second else None)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


@dataclass
class Row:
    benchmark: str
    ours: str
    baseline: str
    ratio: float | None
    target: str
    met: bool | None
    note: str = ""


@dataclass
class Report:
    title: str
    rows: list[Row] = field(default_factory=list)

    def add(self, row: Row) -> None:
        self.rows.append(row)
        print(f"  {row.benchmark}: ours {row.ours} | baseline {row.baseline} | ratio "
              f"{'-' if row.ratio is None else f'{row.ratio:.2f}x'} | target {row.target} | "
              f"{_verdict(row.met)} {row.note}", flush=True)

    def markdown(self) -> str:
        return "\n".join([f"### {self.title}", "", *self.table()]) + "\n"

    def table(self) -> list[str]:
        """The report's rows as the lines of a Markdown table."""
        lines = ["| benchmark | ours | baseline | ratio | target | met |", "| --- | --- | --- | --- | --- | --- |"]
        for row in self.rows:
            ratio = "-" if row.ratio is None else f"{row.ratio:.2f}x"
            note = f" ({row.note})" if row.note else ""
            lines.append(f"| {row.benchmark} | {row.ours} | {row.baseline} | {ratio} | {row.target} | "
                         f"{_verdict(row.met)}{note} |")
        return lines


def _verdict(met: bool | None) -> str:
    return {True: "yes", False: "**no**", None: "-"}[met]


def seconds(measurement: Measurement) -> str:
    return f"{measurement.best:.3f} s (median {measurement.median:.3f})"


def machine_summary() -> str:
    load = os.getloadavg()[0]
    cores = os.cpu_count() or 1
    busy = " — BUSY: load above the core count, numbers are pessimistic" if load > cores else ""
    return f"{platform.machine()}, {cores} cores, Python {platform.python_version()}, load {load:.2f}{busy}"


def warn_if_busy() -> str | None:
    load = os.getloadavg()[0]
    cores = os.cpu_count() or 1
    if load > cores:
        return f"warning: load average {load:.2f} is above the {cores} cores; results will be noisy"
    return None

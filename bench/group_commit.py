"""Group commit on the loopback AWS test servers (DynamoDB Local + SeaweedFS): many writers, one table.

What is measured, and why:

1. a lone writer's commit latency with the catalog setting ``group_commit`` on against off, the
   two alternating commit by commit: group commit must cost a writer alone nothing (its fast
   path is one conditional put, as without it);
2. writer processes appending to one table back to back for a fixed time with group commit off:
   this machine's figure for the racing-writer rate of ``bench.aws`` (136 commits/s with 8);
3. the same with group commit on, at 8 and at 32 processes: appends per second, failures,
   latency, and how many appends a version holds; the point of group commit is a rate several
   times the log's one-commit-per-round-trip limit;
4. where the time goes in the largest race: CPU use of the machine, of DynamoDB Local and of the
   writers, and the requests each append costs, to tell whether the protocol or the machine
   (2 cores here) is the limit.

After every race the table's history is checked: each append a writer saw succeed is in it
exactly once, and nothing else is; a mismatch is flagged in the row's note.

Each writer is its own process (a spawn pool, released at once by a shared event) committing
pre-staged files, so the rate is the log's, not Parquet encoding's.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import tempfile
import time
import traceback
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pyarrow as pa

import sleeper_spark as ss
from bench.commits import staged_file
from bench.common import Report, Row, percentile
from sleeper_spark.storage.aws import make_client
from tests.fixtures.servers import TEST_CREDENTIALS, RunningServer, start_dynamodb_local, start_seaweedfs

SCHEMA = pa.schema([("writer", pa.int64()), ("seq", pa.int64())])

# The racing-writer rate recorded in docs/benchmarks.md by bench.aws (8 processes, 25 commits
# each, group commit off) before group commit existed; the targets below are multiples of it.
RECORDED_RACE_RATE = 136.0
GROUP_TARGET_RATE = 5 * RECORDED_RACE_RATE
WIDE_TARGET_RATE = 1_000.0
WIDE_TARGET_P99_S = 2.0
LONE_TARGET = 1.1
# A machine busier than this during a race has no CPU left: the servers and writers queue for it.
SATURATED = 0.9
READY_TIMEOUT_S = 600.0  # 32 interpreters importing boto3 and pyarrow on 2 cores take a while
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass
class WriterOutcome:
    """What one writer process did in its window."""

    writer: int
    began: float  # time.monotonic(), which is system-wide on Linux, so comparable across processes
    ended: float
    cpu_s: float  # this process's CPU time within the window
    latencies: list[float] = field(default_factory=list)  # seconds per successful append
    succeeded: list[int] = field(default_factory=list)  # seq numbers
    failed: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # "Type: message" per failure
    first_traceback: str = ""
    requests: Counter[str] = field(default_factory=Counter)  # AWS API calls by operation, within the window


def writer_process(options: dict[str, str], name: str, writer: int, duration_s: float, ready: Any,
                   start: Any) -> WriterOutcome:
    catalog = ss.Catalog.from_options(options)
    table = catalog.table(name)
    table.state()  # the log read happens before the start, as a long-running writer's would have
    # pyarrow imports pandas on its first pa.scalar, which reading history beyond its cached tail
    # calls: about 0.15 CPU-s that a long-running writer pays once, not in every window.
    pa.scalar(0, pa.int64())
    requests: Counter[str] = Counter()
    # The clients are cached per endpoint: these are the ones the table's commits use.
    for client in (make_client("dynamodb", catalog.config), make_client("dynamodb", catalog.config, retries=False),
                   make_client("s3", catalog.config), make_client("s3", catalog.config, retries=False)):
        client.meta.events.register("before-call", lambda model, **_: requests.update([model.name]))
    ready.put(writer)
    start.wait()
    began = time.monotonic()
    cpu_began = time.process_time()
    requests.clear()
    outcome = WriterOutcome(writer, began, began, 0.0, requests=requests)
    seq = 0
    while time.monotonic() - began < duration_s:
        seq += 1
        started = time.perf_counter()
        try:
            table.commit_files([staged_file()], "append", {"writer": str(writer), "seq": str(seq)}, uuid.uuid4().hex)
        except ss.SleeperSparkError as error:
            outcome.failed.append(seq)
            outcome.errors.append(f"{type(error).__name__}: {str(error).splitlines()[0]}")
            if not outcome.first_traceback:
                outcome.first_traceback = traceback.format_exc()
        else:
            outcome.latencies.append(time.perf_counter() - started)
            outcome.succeeded.append(seq)
    outcome.ended = time.monotonic()
    outcome.cpu_s = time.process_time() - cpu_began
    return outcome


# -- CPU accounting from /proc (Linux); psutil is not a dependency ----------------------------


def machine_ticks() -> tuple[int, int]:
    """(busy, total) clock ticks of every core since boot, from the first line of /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    idle = values[3] + values[4]  # idle and iowait
    total = sum(values)  # user nice system idle iowait irq softirq steal; guest time is inside user
    return total - idle, total


def process_tree_cpu_s(pid: int) -> float:
    """CPU seconds of a process and of its live descendants (weed and a JVM may run helpers)."""
    total = 0
    pending, seen = [pid], set()
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        try:
            # The command name may hold spaces and parentheses: the fields start after the last ")".
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
            for task in Path(f"/proc/{current}/task").iterdir():
                pending.extend(int(c) for c in (task / "children").read_text().split())
        except (OSError, IndexError, ValueError):
            continue
    return total / CLOCK_TICKS


@dataclass
class CpuUse:
    """CPU seconds spent during a race's window, by whom."""

    window_s: float
    cores: int
    machine_busy_s: float
    dynamodb_s: float
    seaweedfs_s: float
    writers_s: float

    @property
    def busy_fraction(self) -> float:
        return self.machine_busy_s / (self.window_s * self.cores)

    @property
    def other_s(self) -> float:
        return max(0.0, self.machine_busy_s - self.dynamodb_s - self.seaweedfs_s - self.writers_s)

    def summary(self) -> str:
        # "other" is CPU no watched process used: the kernel's loopback traffic, or another workload
        # on the machine, which makes the run noisy.
        return (f"machine {self.busy_fraction:.0%} busy of {self.cores} cores; DynamoDB Local "
                f"{self.dynamodb_s / self.window_s:.2f} cores, writers {self.writers_s / self.window_s:.2f} cores, "
                f"other {self.other_s / self.window_s:.2f} cores")


class CpuMeter:
    """Reads the machine's and the servers' CPU counters at the start and end of a window."""

    def __init__(self, dynamodb: RunningServer, seaweedfs: RunningServer) -> None:
        self.pids = (dynamodb.process.pid, seaweedfs.process.pid)
        self.available = Path("/proc/stat").exists()
        self._start: tuple[int, int, float, float] = (0, 0, 0.0, 0.0)
        self._began = 0.0

    def begin(self) -> None:
        if self.available:
            busy, total = machine_ticks()
            dynamodb_pid, seaweedfs_pid = self.pids
            self._start = (busy, total, process_tree_cpu_s(dynamodb_pid), process_tree_cpu_s(seaweedfs_pid))
        self._began = time.monotonic()

    def end(self, writers_s: float) -> CpuUse | None:
        if not self.available:
            return None
        busy, total = machine_ticks()
        dynamodb_s, seaweedfs_s = (process_tree_cpu_s(pid) for pid in self.pids)
        busy_0, total_0, dynamodb_0, seaweedfs_0 = self._start
        cores = os.cpu_count() or 1
        # The machine's window is what its counters saw pass, so that the busy fraction is exact.
        window_s = (total - total_0) / CLOCK_TICKS / cores
        return CpuUse(window_s, cores, (busy - busy_0) / CLOCK_TICKS, dynamodb_s - dynamodb_0,
                      seaweedfs_s - seaweedfs_0, writers_s)


# -- one race -------------------------------------------------------------------------------


@dataclass
class RaceResult:
    writers: int
    group_commit: bool
    window_s: float
    latencies: list[float]
    succeeded: int
    failed: int
    errors: Counter[str]
    first_traceback: str
    appends_in_log: int
    append_versions: int
    problems: list[str]
    pending_left: int
    cpu: CpuUse | None
    requests: Counter[str]

    @property
    def rate(self) -> float:
        return self.succeeded / self.window_s

    @property
    def members_per_version(self) -> float:
        return self.appends_in_log / max(1, self.append_versions)

    def p(self, fraction: float) -> str:
        return f"{percentile(self.latencies, fraction) * 1000:.0f} ms" if self.latencies else "-"

    def requests_note(self) -> str:
        per_append = ", ".join(f"{op} {n / max(1, self.succeeded):.2f}" for op, n in sorted(self.requests.items()))
        return f"requests per append: {per_append}"

    def check_note(self) -> str:
        if self.problems:
            return "HISTORY CHECK FAILED: " + "; ".join(self.problems)
        return f"history checked: {self.appends_in_log} appends, each once"

    def failure_note(self) -> str:
        if not self.failed:
            return ""
        kinds = ", ".join(f"{count}x {kind}" for kind, count in self.errors.most_common(3))
        return f"failures: {kinds}"


def race(options: dict[str, str], writers: int, duration_s: float, meter: CpuMeter) -> RaceResult:
    catalog = ss.Catalog.from_options(options)
    name = f"race_{writers}_{'on' if catalog.config.group_commit else 'off'}_{uuid.uuid4().hex[:6]}"
    catalog.create_table(name, SCHEMA)
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager:
        ready, start = manager.Queue(), manager.Event()
        with context.Pool(writers) as pool:
            pending = [pool.apply_async(writer_process, (options, name, w, duration_s, ready, start))
                       for w in range(writers)]
            # Released only once every process has imported and read the table: on 2 cores, 32
            # interpreters starting up would otherwise fill the first seconds of the window.
            _wait_ready(ready, writers, pending)
            meter.begin()
            start.set()
            outcomes: list[WriterOutcome] = [p.get(timeout=duration_s + 900) for p in pending]
            cpu = meter.end(sum(o.cpu_s for o in outcomes))
    window_s = max(o.ended for o in outcomes) - min(o.began for o in outcomes)
    errors: Counter[str] = Counter(e for o in outcomes for e in o.errors)
    first_traceback = next((o.first_traceback for o in outcomes if o.first_traceback), "")
    table = ss.Catalog.from_options(options).table(name)
    problems, appends_in_log, append_versions = check_history(table, outcomes)
    pending_left = len(table.group_commit.pending.list()) if table.group_commit is not None else 0
    return RaceResult(writers, catalog.config.group_commit, window_s,
                      [lat for o in outcomes for lat in o.latencies], sum(len(o.succeeded) for o in outcomes),
                      sum(len(o.failed) for o in outcomes), errors, first_traceback, appends_in_log,
                      append_versions, problems, pending_left, cpu, sum((o.requests for o in outcomes), Counter()))


def _wait_ready(ready: Any, writers: int, pending: list[Any]) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    count = 0
    while count < writers:
        try:
            ready.get(timeout=1.0)
            count += 1
        except queue.Empty:
            for task in pending:
                if task.ready():
                    task.get()  # a writer that ended before the start failed: raise its error here
            if time.monotonic() > deadline:
                raise TimeoutError(f"only {count} of {writers} writer processes were ready "
                                   f"after {READY_TIMEOUT_S:.0f} s") from None


def check_history(table: ss.Table, outcomes: list[WriterOutcome]) -> tuple[list[str], int, int]:
    """Problems with the log's appends against what the writers saw, the appends in it, and their versions."""
    seen: Counter[tuple[str, str]] = Counter()
    append_versions = 0
    for snapshot in table.history():
        writes = [m.metadata for m in snapshot.members] if snapshot.members else [snapshot.metadata]
        writes = [w for w in writes if "writer" in w]
        if writes:
            append_versions += 1
        seen.update((w["writer"], w.get("seq", "")) for w in writes)
    succeeded = {(str(o.writer), str(s)) for o in outcomes for s in o.succeeded}
    failed = {(str(o.writer), str(s)) for o in outcomes for s in o.failed}
    problems = []
    missing = sorted(k for k in succeeded if seen[k] == 0)
    repeated = sorted(k for k, n in seen.items() if n > 1)
    stray = sorted(k for k in seen if k not in succeeded and k not in failed)
    if missing:
        problems.append(f"{len(missing)} successful appends missing from the log, e.g. {missing[:3]}")
    if repeated:
        problems.append(f"{len(repeated)} appends in the log more than once, e.g. {repeated[:3]}")
    if stray:
        problems.append(f"{len(stray)} appends in the log that no writer made, e.g. {stray[:3]}")
    landed_failures = sum(1 for k in failed if seen[k])
    if landed_failures:
        # Not wrong in itself: an append whose outcome was unknown may have landed; reported for the record.
        problems.append(f"{landed_failures} of {len(failed)} failed appends are in the log (outcome was unknown)")
    return problems, sum(seen.values()), append_versions


def print_details(result: RaceResult) -> None:
    label = f"{result.writers} writers, group commit {'on' if result.group_commit else 'off'}"
    print(f"    {label}: {result.succeeded} appends in {result.window_s:.2f} s, {result.failed} failed, "
          f"{result.append_versions} versions, {result.pending_left} pending records left; "
          f"{result.requests_note()}", flush=True)
    if result.cpu is not None:
        cpu = result.cpu
        print(f"    CPU over {cpu.window_s:.2f} s: machine {cpu.machine_busy_s:.1f} s busy, DynamoDB Local "
              f"{cpu.dynamodb_s:.1f} s, SeaweedFS {cpu.seaweedfs_s:.1f} s, writers {cpu.writers_s:.1f} s, "
              f"other {cpu.other_s:.1f} s", flush=True)
    for kind, count in result.errors.most_common(5):
        print(f"    {count}x {kind}")
    if result.first_traceback:
        print("    first failure's traceback:\n" + result.first_traceback, flush=True)
    for problem in result.problems:
        print(f"    {problem}", flush=True)


def _note(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


# -- the benchmark --------------------------------------------------------------------------


def lone_writer(report: Report, on: ss.Catalog, off: ss.Catalog, count: int) -> None:
    on_table = on.create_table("lone_on", SCHEMA)
    off_table = off.create_table("lone_off", SCHEMA)
    on_values: list[float] = []
    off_values: list[float] = []
    tables = ((on_table, on_values), (off_table, off_values))
    for table, _ in tables:
        for _ in range(5):  # connections, credentials and the first log read are not a commit's cost
            table.commit_files([staged_file()], "append", {}, uuid.uuid4().hex)
    for i in range(count):
        # Commit by commit, the first of the pair swapping each time, so drift and the servers'
        # warm-up fall on both sides alike.
        for table, values in tables if i % 2 == 0 else tables[::-1]:
            started = time.perf_counter()
            table.commit_files([staged_file()], "append", {}, uuid.uuid4().hex)
            values.append(time.perf_counter() - started)
    ratio = percentile(on_values, 0.5) / percentile(off_values, 0.5)
    combined = sum(1 for s in on_table.history() if s.members)

    def describe(values: list[float]) -> str:
        return f"p50 {percentile(values, 0.5) * 1000:.2f} ms, p99 {percentile(values, 0.99) * 1000:.2f} ms"

    report.add(Row(f"Lone writer, group commit on vs off, {count}x each", describe(on_values),
                   describe(off_values) + " (off)", ratio, f"<= {LONE_TARGET}x", ratio <= LONE_TARGET,
                   f"{combined} combined versions" if combined else ""))


def race_without_group_commit(report: Report, off: ss.Catalog, writers: int, duration_s: float,
                              meter: CpuMeter) -> RaceResult:
    """A race of ``writers`` processes with group commit off, reported as the baseline row."""
    result = race(off.options(), writers, duration_s, meter)
    print_details(result)
    report.add(Row(f"{writers} writer processes, group commit off, {duration_s:.0f} s",
                   f"{result.rate:.0f} appends/s, {result.failed} failed, p50 {result.p(0.5)}, p99 {result.p(0.99)}",
                   f"{RECORDED_RACE_RATE:.0f} commits/s recorded (8 writers)", result.rate / RECORDED_RACE_RATE,
                   "- (baseline)", None if not result.problems else False,
                   _note(result.check_note(), result.failure_note(), result.requests_note(),
                         result.cpu.summary() if result.cpu else "")))
    return result


def run(report: Report, quick: bool) -> None:
    os.environ.update(TEST_CREDENTIALS)
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")  # inherited by the spawned writers
    work = Path(tempfile.mkdtemp(prefix="bench-group-commit-"))
    dynamodb = start_dynamodb_local(work / "ddb")
    s3 = start_seaweedfs(work / "s3")
    try:
        boto3.client("s3", endpoint_url=s3.endpoint_url, region_name="us-east-1").create_bucket(Bucket="bench")

        def catalog(group_commit: bool) -> ss.Catalog:
            return ss.Catalog.aws(warehouse="s3://bench/warehouse", region="us-east-1",
                                  s3_endpoint_url=s3.endpoint_url, dynamodb_endpoint_url=dynamodb.endpoint_url,
                                  group_commit=group_commit)

        on, off = catalog(True), catalog(False)
        on.ensure_infrastructure()
        meter = CpuMeter(dynamodb, s3)

        lone_writer(report, on, off, 20 if quick else 200)

        # Quick: the same shape, small enough for a smoke run.
        few, many, duration_s = (4, 8, 2.0) if quick else (8, 32, 10.0)

        baseline = race_without_group_commit(report, off, few, duration_s, meter)

        grouped = race(on.options(), few, duration_s, meter)
        print_details(grouped)
        met = grouped.rate >= GROUP_TARGET_RATE and not grouped.problems
        report.add(Row(f"{few} writer processes, group commit on, {duration_s:.0f} s",
                       f"{grouped.rate:.0f} appends/s, {grouped.failed} failed, p99 {grouped.p(0.99)}, "
                       f"{grouped.members_per_version:.1f} appends per version",
                       f"{RECORDED_RACE_RATE:.0f} commits/s recorded (8 writers)", grouped.rate / RECORDED_RACE_RATE,
                       f">= 5x ({GROUP_TARGET_RATE:.0f} appends/s)", met,
                       _note(f"{grouped.rate / baseline.rate:.2f}x group commit off in this run "
                             f"({baseline.rate:.0f}/s)", grouped.check_note(), grouped.failure_note(),
                             f"{grouped.pending_left} pending records left" if grouped.pending_left else "",
                             grouped.requests_note(), grouped.cpu.summary() if grouped.cpu else "")))

        wide_off = race_without_group_commit(report, off, many, duration_s, meter)

        wide = race(on.options(), many, duration_s, meter)
        print_details(wide)
        p99_s = percentile(wide.latencies, 0.99) if wide.latencies else float("inf")
        met = (wide.rate >= WIDE_TARGET_RATE and wide.failed == 0 and p99_s <= WIDE_TARGET_P99_S
               and not wide.problems)
        report.add(Row(f"{many} writer processes, group commit on, {duration_s:.0f} s",
                       f"{wide.rate:.0f} appends/s, {wide.failed} failed, p50 {wide.p(0.5)}, p99 {wide.p(0.99)}, "
                       f"{wide.members_per_version:.1f} appends per version",
                       f"{RECORDED_RACE_RATE:.0f} commits/s recorded (8 writers)", wide.rate / RECORDED_RACE_RATE,
                       f">= {WIDE_TARGET_RATE:,.0f} appends/s, 0 failed, p99 <= {WIDE_TARGET_P99_S:.0f} s", met,
                       _note(f"{wide.rate / wide_off.rate:.2f}x group commit off in this run "
                             f"({wide_off.rate:.0f}/s)", wide.check_note(), wide.failure_note(),
                             f"{wide.pending_left} pending records left" if wide.pending_left else "")))

        report.add(where_the_time_goes(wide))
    finally:
        dynamodb.stop()
        s3.stop()


def where_the_time_goes(result: RaceResult) -> Row:
    label = f"Where the time goes: {result.writers} writers, group commit on"
    cpu = result.cpu
    if cpu is None:
        return Row(label, "not measured (no /proc)", "-", None, "-", None)
    per_append_ms = 1000 / max(1, result.succeeded)
    ours = (f"machine {cpu.busy_fraction:.0%} busy of {cpu.cores} cores over {cpu.window_s:.1f} s; "
            f"DynamoDB Local {cpu.dynamodb_s:.1f} cpu-s ({cpu.dynamodb_s / cpu.window_s:.2f} cores, "
            f"{cpu.dynamodb_s * per_append_ms:.2f} ms per append), writers {cpu.writers_s:.1f} cpu-s "
            f"({cpu.writers_s / cpu.window_s:.2f} cores, {cpu.writers_s * per_append_ms:.2f} ms per append), "
            f"SeaweedFS {cpu.seaweedfs_s:.1f} cpu-s, other {cpu.other_s:.1f} cpu-s")
    saturated = cpu.busy_fraction >= SATURATED
    verdict = (f"the {cpu.cores} cores are the limit: every process queues for CPU" if saturated
               else f"CPU is not saturated ({cpu.busy_fraction:.0%}): the limit is elsewhere (round trips, "
                    "back-off, the log's one put per number)")
    return Row(label, ours, "-", None, "-", None, _note(verdict, result.requests_note()))

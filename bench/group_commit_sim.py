"""A discrete-event simulation of group commit on the DynamoDB log, under contention.

What it models. ``writers`` closed-loop writers append to one table back to back (files already
staged, no think time). The log is one item per number under one partition key; an append
lands when a conditional ``PutItem`` at ``head + 1`` is applied before any other at that number.
With group commit on (``sleeper_spark.commit.group``, whose constants it uses), a writer keeps
``contention``, a moving average over its appends of 1 (*contended*) and 0, and:

1. *solo path*, while ``contention`` is below one half: puts its append alone at the head it last
   saw + 1 (winning costs one request; this first put observes 1 if lost, 0 if won); on losing,
   if the estimate is still below one half, reads the log's tail and puts once more at
   ``head + 1``. At or above one half it skips this path: it records at once, and only what its
   recorded appends meet brings the estimate down (see 3). A writer committing alone back to back
   lists the pending records once a second and puts them in with its own (the *help*): its puts
   need fewer round trips than a proposal, so without it a writer that always wins would keep
   every recorded append waiting;
2. on losing both puts (or skipping them), records its append as a pending record (an
   unconditional ``PutItem`` under the pending partition key);
3. loops, backing off between iterations as the commit retry policy does (full jitter, doubling
   up to a cap): a ``Query`` of the log's tail (done if its append is there: whoever committed it
   deletes the record); while its record is younger than three of this writer's tail reads (a
   moving average) and it has waited fewer than three times, it only waits, for an older
   record's writer to propose; otherwise a ``Query`` of the pending records and a conditional put
   at ``head + 1`` of its own append and every listed one not in the log (at most
   ``max_members``, oldest first). Once its append is in, it observes 1 if another writer's
   proposal put it there, a listing held another writer's waiting append or one of its proposals
   lost, and 0 if it met nobody;
4. having won, deletes in one ``BatchWriteItem`` its own record and every listed record the win
   settled (each append in the log or in this proposal).

With group commit off, every writer retries its own append alone: after a lost put it backs off
(full-jitter exponential), reads the tail and puts at ``head + 1`` again.

Why a simulation. The real race benchmark (``bench.aws``) runs at most a handful of processes on
the machine with the server, so the machine is the limit long before the protocol is. Here each
request costs only what the server would charge: a latency drawn per request kind (DynamoDB's
documented latency, or samples measured on DynamoDB Local), applied at the server after a
one-way delay (so of two puts at one number the earlier-applied wins) and answered after the
rest.

Optionally each partition key has DynamoDB's per-partition throughput (about 1,000 write units
and 3,000 read units per second), charged as DynamoDB charges: a write unit per KB of the larger
of the new and the existing item, a failed conditional put too; a strongly consistent read unit
per 4 KB read. Beyond it a request is refused, charged nothing, and sent again after a back-off,
as DynamoDB and the store retry policy do; or, as an option, it waits in a queue, which under
overload spends the capacity on requests gone stale while they waited.

What it leaves out: the clients' CPU (each simulated writer is its own idle machine, with one
append at a time: no batching within a process), latency growing with item size or with the
server's load (the DynamoDB Local samples come from one client), timeouts and unknown outcomes,
and dead writers. A recorded append retries until it lands (the commit retry policy would give
up after its attempts), and a ``BatchWriteItem`` counts as one request whatever its size (the
real one sends one per 25 keys).

Each run checks the protocol: after the last append drains, every append is in exactly one
committed transaction and no pending record is left.
"""

from __future__ import annotations

import dataclasses
import enum
import heapq
import math
import random
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal, Protocol

from bench.common import Report, Row, percentile
from sleeper_spark.commit.group import (
    BACK_TO_BACK_S,
    CONTENTION_WEIGHT,
    HELP_EVERY_S,
    MAX_WAITS,
    PROPOSE_AFTER_READS,
    READ_WEIGHT,
    SOLO_ATTEMPTS,
    SOLO_BELOW,
)
from sleeper_spark.config import RetryPolicy

# -- what requests cost --------------------------------------------------------------------------


class Kind(enum.Enum):
    PUT = "PutItem"  # a pending record: no condition, always succeeds
    CONDITIONAL_PUT = "conditional PutItem"  # a log entry at a number
    QUERY_LOG = "Query (log)"
    QUERY_PENDING = "Query (pending)"
    DELETE = "BatchWriteItem (delete)"  # pending records, once their appends are in the log


LOG, PENDING = "log", "pending"
PARTITION = {Kind.PUT: PENDING, Kind.CONDITIONAL_PUT: LOG, Kind.QUERY_LOG: LOG, Kind.QUERY_PENDING: PENDING,
             Kind.DELETE: PENDING}
READS = frozenset({Kind.QUERY_LOG, Kind.QUERY_PENDING})


class Distribution(Protocol):
    def sample(self, rng: random.Random) -> float: ...


@dataclass(frozen=True)
class Fixed:
    seconds: float

    def sample(self, rng: random.Random) -> float:
        return self.seconds


@dataclass(frozen=True)
class Uniform:
    low_s: float
    high_s: float

    def sample(self, rng: random.Random) -> float:
        return rng.uniform(self.low_s, self.high_s)


@dataclass(frozen=True)
class LogNormal:
    """A latency with the given median and p99 / median ratio (a long right tail, never negative)."""

    median_s: float
    p99_ratio: float = 3.0

    def sample(self, rng: random.Random) -> float:
        z99 = 2.3263478740408408  # the standard normal's 99th percentile
        return rng.lognormvariate(math.log(self.median_s), math.log(self.p99_ratio) / z99)


@dataclass(frozen=True)
class Empirical:
    """Latencies measured one by one; a draw is one of them, uniformly."""

    samples: tuple[float, ...]

    def sample(self, rng: random.Random) -> float:
        return self.samples[int(rng.random() * len(self.samples))]


@dataclass(frozen=True)
class LatencyProfile:
    name: str
    latency: Mapping[Kind, Distribution]
    source: str = ""

    @classmethod
    def every_kind(cls, name: str, distribution: Distribution, source: str = "") -> LatencyProfile:
        return cls(name, dict.fromkeys(Kind, distribution), source)


# DynamoDB documents "consistent single-digit millisecond" latency for requests within a region
# (https://aws.amazon.com/dynamodb/); 5 ms is the middle of that range. The p99 of 3x the median
# is an assumption: DynamoDB publishes no percentiles.
AWS_MEDIAN_S = 0.005
AWS = LatencyProfile.every_kind("AWS ~5 ms", LogNormal(AWS_MEDIAN_S, 3.0),
                             "DynamoDB's documented single-digit-millisecond latency within a region: "
                             "lognormal, median 5 ms, p99 15 ms, every request kind")

# DynamoDB's per-partition limits (Developer Guide, "Partitions and data distribution"); the
# log's numbers only grow, so its writes stay on one partition whatever DynamoDB splits.
DYNAMODB_PARTITION_WRITES_PER_S = 1000.0
DYNAMODB_PARTITION_READS_PER_S = 3000.0
WRITE_UNIT_BYTES, READ_UNIT_BYTES = 1024, 4096

# Item sizes, for the capacity charge: the JSON of a one-file AddFiles (bench.commits.staged_file)
# is about 390 bytes; a log entry adds the AppendGroup's own fields and the key attributes; a
# pending record wraps one member in a PendingBatch with its key and expiry attributes.
MEMBER_BYTES = 390
ENTRY_OVERHEAD_BYTES = 300
RECORD_BYTES = 600


# -- the simulation --------------------------------------------------------------------------------


@dataclass(frozen=True)
class SimConfig:
    writers: int
    duration_s: float = 10.0
    warmup_s: float = 1.0
    group_commit: bool = True
    profile: LatencyProfile = AWS
    max_members: int = 300
    # Group commit: between a recorded append's iterations, the commit retry policy's back-off
    # (full jitter, base * 2**(iteration - 1) up to the cap; RetryPolicy's defaults).
    commit_backoff_base_s: float = RetryPolicy().base_delay_s
    commit_backoff_cap_s: float = RetryPolicy().max_delay_s
    # How often a writer committing alone back to back lists the pending records; None models a
    # protocol without that help (see the starvation test).
    help_every_s: float | None = HELP_EVERY_S
    solo_backoff_base_s: float = 0.001  # group commit off: full jitter, base * 2**attempt ...
    solo_backoff_cap_s: float = 0.1  # ... up to this
    partition_writes_per_s: float | None = None
    partition_reads_per_s: float | None = None
    # Beyond a partition's capacity: "throttle" refuses the request, as DynamoDB does, and the
    # client tries it again after a back-off (the defaults of StoreRetryPolicy: full jitter,
    # 50 ms doubling up to 2 s); "queue" makes it wait its turn.
    over_capacity: Literal["throttle", "queue"] = "throttle"
    throttle_backoff_base_s: float = 0.05
    throttle_backoff_cap_s: float = 2.0
    member_bytes: int = MEMBER_BYTES  # what one append adds to a log entry
    record_bytes: int = RECORD_BYTES  # a pending record
    # The server applies a request this far into its latency; the rest is the way back.
    apply_fraction: float = 0.5
    seed: int = 0


@dataclass(frozen=True)
class SimResult:
    config: SimConfig
    appends: int  # completed within the measured window
    window_s: float
    latencies_s: tuple[float, ...]
    transactions: int  # committed within the window
    members: int  # appends in those transactions
    requests: Counter[Kind]  # sent within the window, every attempt
    throttled: Counter[Kind]  # of those, refused for lack of capacity
    units: Mapping[tuple[str, bool], float]  # capacity units charged within the window, by (partition key, is read)
    wall_s: float

    @property
    def appends_per_s(self) -> float:
        return self.appends / self.window_s

    @property
    def p50_s(self) -> float:
        return percentile(list(self.latencies_s), 0.5) if self.latencies_s else math.nan

    @property
    def p99_s(self) -> float:
        return percentile(list(self.latencies_s), 0.99) if self.latencies_s else math.nan

    @property
    def members_per_transaction(self) -> float:
        return self.members / self.transactions if self.transactions else math.nan

    @property
    def requests_per_append(self) -> float:
        return sum(self.requests.values()) / self.appends if self.appends else math.nan

    def units_per_append(self, partition: str, read: bool) -> float:
        return self.units.get((partition, read), 0.0) / self.appends if self.appends else math.nan

    def partition_cap(self, writes_per_s: float = DYNAMODB_PARTITION_WRITES_PER_S,
                      reads_per_s: float = DYNAMODB_PARTITION_READS_PER_S) -> float:
        """The appends/s at which the busiest partition key would reach DynamoDB's limit, at this run's charges."""
        busiest = max(self.units_per_append(p, read) / (reads_per_s if read else writes_per_s)
                      for p in (LOG, PENDING) for read in (False, True))
        return 1 / busiest if busiest else math.inf

    def capacity(self) -> str:
        log, pending = ((self.units_per_append(p, False), self.units_per_append(p, True)) for p in (LOG, PENDING))
        return (f"per append: log key {log[0]:.1f} WCU + {log[1]:.1f} RCU, "
                f"pending key {pending[0]:.1f} WCU + {pending[1]:.1f} RCU")

    def summary(self) -> str:
        if not self.appends:
            return f"no append completed within the {self.window_s:g} s measured"
        members = "no transaction" if not self.transactions else f"{self.members_per_transaction:.1f} members/txn"
        return (f"{self.appends_per_s:,.0f} appends/s, p50 {self.p50_s * 1000:.1f} ms, p99 {self.p99_s * 1000:.1f} ms, "
                f"{members}, {self.requests_per_append:.1f} requests/append")


class SimulationError(AssertionError):
    """The protocol broke its promise: an append is missing from the log, or in it twice."""


@dataclass(slots=True)
class Request:
    kind: Kind
    apply: Callable[[], Any]  # runs at the server at the apply time; its value is the answer
    units: Callable[[], float]  # capacity units charged, asked at the request's arrival
    throttled: int = 0  # attempts refused so far


@dataclass(slots=True)
class Sleep:
    seconds: float


Action = Request | Sleep
Process = Generator[Action, Any, None]

_RESUME, _ARRIVE, _APPLY, _SEND = 0, 1, 2, 3


@dataclass
class _Capacity:
    """One capacity (reads or writes) of one partition key, ``rate`` units per second.

    As a queue, a request waits until the units before it are served. As DynamoDB does it, a
    token bucket: a request is let in while the bucket is not empty (a query's charge is known
    only once it has run, so the bucket may go below zero) and refused otherwise, charged
    nothing. The bucket holds one second of units, so short bursts pass.
    """

    rate: float
    free_at: float = 0.0  # the queue
    tokens: float = 0.0  # the bucket
    filled_at: float = 0.0

    def __post_init__(self) -> None:
        self.tokens = self.rate

    def queue(self, arrival: float, units: float) -> float:
        """When a request arriving now is served."""
        start = max(arrival, self.free_at)
        self.free_at = start + units / self.rate
        return start

    def take(self, now: float, units: float) -> bool:
        """Whether a request arriving now is let in (and charged)."""
        self.tokens = min(self.rate, self.tokens + (now - self.filled_at) * self.rate)
        self.filled_at = now
        if self.tokens <= 0:
            return False
        self.tokens -= units
        return True


@dataclass
class _Writer:
    """One writer process: what ``GroupCommit`` keeps between appends."""

    cached_head: int = 0
    contention: float = 0.0  # the moving average of what its appends met, 1 contended
    listed_at: float = 0.0  # when it last listed the pending records (a process starts as if it just had)
    committed_at: float = -math.inf  # when a put of it last landed
    read_s: float = 0.002  # the moving average of its tail reads, from GroupCommit's starting guess
    process: Process = field(init=False)

    def observe(self, contended: bool) -> None:
        self.contention += CONTENTION_WEIGHT * ((1.0 if contended else 0.0) - self.contention)


@dataclass(frozen=True, slots=True)
class Listing:
    """What a query of the pending records saw: the records ``[first, end)`` not deleted by ``tick``."""

    first: int
    end: int
    tick: int
    waiting: int  # live records whose append was not in the log yet


@dataclass
class Simulation:
    config: SimConfig
    now: float = 0.0
    # The log: members of transaction n at index n - 1, and the running total of entry sizes.
    log: list[list[int]] = field(default_factory=list)
    log_bytes: list[int] = field(default_factory=lambda: [0])
    log_times: list[float] = field(default_factory=list)
    committed_in: dict[int, int] = field(default_factory=dict)
    # Pending records in the order their puts were applied; deleted ones stay, marked with the
    # count of deletions applied once they were gone (so a listing knows what it saw).
    records: list[int] = field(default_factory=list)
    deleted_tick: list[float] = field(default_factory=list)
    tick: int = 0
    live: dict[int, int] = field(default_factory=dict)  # append -> index in records
    first_live: int = 0
    live_uncommitted: int = 0
    started: int = 0
    completions: list[tuple[float, float]] = field(default_factory=list)  # (done at, latency)
    requests: Counter[Kind] = field(default_factory=Counter)
    units: defaultdict[tuple[str, bool], float] = field(default_factory=lambda: defaultdict(float))

    def __post_init__(self) -> None:
        c = self.config
        self.rng = random.Random(c.seed)
        self.capacities: dict[tuple[str, bool], _Capacity] = {}
        for partition in (LOG, PENDING):
            if c.partition_writes_per_s:
                self.capacities[partition, False] = _Capacity(c.partition_writes_per_s)
            if c.partition_reads_per_s:
                self.capacities[partition, True] = _Capacity(c.partition_reads_per_s)
        self.throttled: Counter[Kind] = Counter()
        self.events: list[tuple[float, int, int, Any]] = []
        self.seq = 0

    # -- the event loop --

    def _push(self, at: float, what: int, payload: Any) -> None:
        self.seq += 1
        heapq.heappush(self.events, (at, self.seq, what, payload))

    def _step(self, writer: _Writer, answer: Any) -> None:
        try:
            action = writer.process.send(answer)
        except StopIteration:
            return
        if isinstance(action, Sleep):
            self._push(self.now + action.seconds, _RESUME, (writer, None))
        else:
            self._send(writer, action)

    def _in_window(self) -> bool:
        return self.config.warmup_s <= self.now < self.config.duration_s

    def _send(self, writer: _Writer, request: Request) -> None:
        c = self.config
        latency = c.profile.latency[request.kind].sample(self.rng)
        if self._in_window():
            self.requests[request.kind] += 1
        self._push(self.now + latency * c.apply_fraction, _ARRIVE, (writer, request, latency))

    def _arrive(self, writer: _Writer, request: Request, latency: float) -> None:
        c = self.config
        key = (PARTITION[request.kind], request.kind in READS)
        units = request.units()
        capacity = self.capacities.get(key)
        start = self.now
        if capacity is not None and c.over_capacity == "queue":
            start = capacity.queue(self.now, units)
        elif capacity is not None and not capacity.take(self.now, units):
            # Refused and charged nothing; the client sends the same request again after a
            # back-off, without the writer's code seeing it (as the store retry policy does).
            if self._in_window():
                self.throttled[request.kind] += 1
            request.throttled += 1
            delay = self.rng.uniform(0, min(c.throttle_backoff_cap_s,
                                            c.throttle_backoff_base_s * 2 ** (request.throttled - 1)))
            self._push(self.now + latency * (1 - c.apply_fraction) + delay, _SEND, (writer, request))
            return
        if self._in_window():
            self.units[key] += units
        if start > self.now:
            self._push(start, _APPLY, (writer, request, latency))
        else:
            self._apply(writer, request, latency)

    def _apply(self, writer: _Writer, request: Request, latency: float) -> None:
        answer = request.apply()
        self._push(self.now + latency * (1 - self.config.apply_fraction), _RESUME, (writer, answer))

    def run(self) -> SimResult:
        c = self.config
        began = time.perf_counter()
        process = self._group_writer if c.group_commit else self._solo_writer
        for _ in range(c.writers):
            writer = _Writer()
            writer.process = process(writer)
            self._step(writer, None)
        events = self.events
        while events:
            self.now, _, what, payload = heapq.heappop(events)
            if what == _RESUME:
                self._step(*payload)
            elif what == _SEND:
                self._send(*payload)
            elif what == _ARRIVE:
                self._arrive(*payload)
            else:
                self._apply(*payload)
        self._check()
        return self._result(time.perf_counter() - began)

    # -- what the server does at a request's apply time --

    def _commit(self, number: int, members: list[int]) -> bool:
        """A conditional put at ``number``: in only if the number is free (numbers have no gaps)."""
        if number != len(self.log) + 1:
            return False
        self.log.append(members)
        self.log_times.append(self.now)
        self.log_bytes.append(self.log_bytes[-1] + ENTRY_OVERHEAD_BYTES + self.config.member_bytes * len(members))
        for member in members:
            self.committed_in[member] = number
            if member in self.live:
                self.live_uncommitted -= 1
        return True

    def _propose(self, head: int, listing: Listing | None, own: int) -> list[int] | None:
        """A put at ``head + 1`` of ``own`` and what ``listing`` saw; on winning, the records it settles.

        The proposer built its proposal from a snapshot of the records, taken at the listing's
        apply time; the members are worked out only when the put wins, which is equivalent and
        far cheaper: a win at ``head + 1`` means every append committed so far is at or below
        ``head``, so what is in the log now was in the log the proposer read. ``None`` when the
        number was taken. The settled records are those the listing saw whose append is in the
        log or in this proposal, not the proposer's own.
        """
        if len(self.log) != head:
            return None  # taken: what the members would have been does not matter
        members = [own]
        settled: list[int] = []
        if listing is not None:
            committed_in, records, deleted_tick = self.committed_in, self.records, self.deleted_tick
            for index in range(listing.first, listing.end):
                append = records[index]
                if append == own or deleted_tick[index] <= listing.tick:
                    continue  # its own record, or one already gone when listed
                if append in committed_in:
                    settled.append(append)  # committed by an earlier winner whose delete had not landed
                elif len(members) < self.config.max_members:
                    members.append(append)
                    settled.append(append)
        self._commit(head + 1, members)
        return settled

    def _read_tail(self, own: int) -> tuple[int, bool]:
        """A query of the log's tail: the head, and whether ``own`` is in the log."""
        return len(self.log), own in self.committed_in

    def _list_pending(self) -> Listing:
        return Listing(self.first_live, len(self.records), self.tick, self.live_uncommitted)

    def _record(self, append: int) -> None:
        self.live[append] = len(self.records)
        self.records.append(append)
        self.deleted_tick.append(math.inf)
        if append not in self.committed_in:
            self.live_uncommitted += 1

    def _delete(self, appends: list[int]) -> None:
        """One ``BatchWriteItem``: deleting a record already gone does nothing."""
        self.tick += 1
        for append in appends:
            index = self.live.pop(append, None)
            if index is None:
                continue
            self.deleted_tick[index] = self.tick
            if append not in self.committed_in:
                self.live_uncommitted -= 1
        records, live = self.records, self.live
        while self.first_live < len(records) and records[self.first_live] not in live:
            self.first_live += 1

    # -- capacity charges --

    @staticmethod
    def _write_units(size: int) -> float:
        return float(max(1, math.ceil(size / WRITE_UNIT_BYTES)))

    @staticmethod
    def _read_units(size: int) -> float:
        return float(max(1, math.ceil(size / READ_UNIT_BYTES)))

    def _put_units(self, number: int, members: int) -> float:
        """A conditional put is charged for the larger of its item and the one already at its number.

        So a lost race costs as much as a won one: DynamoDB charges a write whose condition
        fails (Developer Guide, "Condition expressions").
        """
        size = ENTRY_OVERHEAD_BYTES + self.config.member_bytes * members
        if number <= len(self.log):
            size = max(size, self.log_bytes[number] - self.log_bytes[number - 1])
        return self._write_units(size)

    def _pending_units(self) -> float:
        return self._read_units(self.config.record_bytes * len(self.live))

    def _tail_units(self, after: int) -> float:
        return self._read_units(self.log_bytes[-1] - self.log_bytes[min(after, len(self.log))])

    # -- the writers --

    def _begin(self) -> tuple[int, float] | None:
        if self.now >= self.config.duration_s:
            return None  # the run is over: stop starting appends, let the started ones drain
        self.started += 1
        return self.started, self.now

    def _done(self, started_at: float) -> None:
        self.completions.append((self.now, self.now - started_at))

    def _group_writer(self, writer: _Writer) -> Process:
        while (begun := self._begin()) is not None:
            own, started_at = begun
            # At or above one half the append records at once: a solo put that won on a busy table
            # would take a number from under every proposal in flight, so the table is not probed
            # that way; the recorded appends that meet nobody bring the estimate down instead.
            committed = writer.contention < SOLO_BELOW and (yield from self._commit_solo(writer, own))
            if not committed:
                yield from self._commit_recorded(writer, own)
            self._done(started_at)

    def _commit_solo(self, writer: _Writer, own: int) -> Generator[Action, Any, bool]:
        """The solo path: a blind put, then a tail read and one more put; whether one landed."""
        c = self.config
        for attempt in range(SOLO_ATTEMPTS):
            if attempt:
                if writer.contention >= SOLO_BELOW:
                    break  # the lost blind put tipped the estimate: record at once
                writer.cached_head, _ = yield self._tail_read(writer, own)
            head = writer.cached_head
            listing: Listing | None = None
            if (c.help_every_s is not None and self.now - writer.listed_at > c.help_every_s
                    and self.now - writer.committed_at < BACK_TO_BACK_S):
                writer.listed_at = self.now
                listing = yield Request(Kind.QUERY_PENDING, self._list_pending, self._pending_units)
            settled = yield self._proposal(head, listing, own, recorded=False)
            if attempt == 0:
                writer.observe(contended=settled is None)
            if settled is None:
                continue
            writer.cached_head, writer.committed_at = head + 1, self.now
            if settled:
                yield self._forget(settled)
            return True
        return False

    def _commit_recorded(self, writer: _Writer, own: int) -> Generator[Action, Any, None]:
        """The recorded path: a pending record, then tail reads, waits and proposals until it lands."""
        c = self.config
        yield Request(Kind.PUT, partial(self._record, own), partial(self._write_units, c.record_bytes))
        recorded = self.now
        iterations = waits = 0
        alone = True  # no other writer met: what lets a writer back onto the solo path
        while True:
            iterations += 1
            reading = self.now
            writer.cached_head, mine = yield self._tail_read(writer, own)
            writer.read_s += READ_WEIGHT * (self.now - reading - writer.read_s)
            if mine:
                writer.observe(contended=True)  # another writer's proposal took it
                return  # whoever put it in deletes the record
            if waits < MAX_WAITS and self.now - recorded < PROPOSE_AFTER_READS * writer.read_s:
                # A young record waits for the writer of an older one to propose and take it, so
                # that a round has one proposer rather than one per writer.
                waits += 1
            else:
                head = writer.cached_head
                listing = yield Request(Kind.QUERY_PENDING, self._list_pending, self._pending_units)
                writer.listed_at = self.now
                # The listing's waiting count takes in its own record while its append is out of
                # the log; should the append have landed since the tail read, the put below loses,
                # which counts as contended anyway.
                alone = alone and listing.waiting <= 1
                settled = yield self._proposal(head, listing, own, recorded=True)
                if settled is not None:
                    writer.cached_head, writer.committed_at = head + 1, self.now
                    writer.observe(contended=not alone)
                    yield self._forget([own, *settled])
                    return
                alone = False
            yield Sleep(self.rng.uniform(0, min(c.commit_backoff_cap_s,
                                                c.commit_backoff_base_s * 2 ** min(iterations - 1, 30))))

    def _tail_read(self, writer: _Writer, own: int) -> Request:
        return Request(Kind.QUERY_LOG, partial(self._read_tail, own), partial(self._tail_units, writer.cached_head))

    def _proposal(self, head: int, listing: Listing | None, own: int, recorded: bool) -> Request:
        # Charged at the size the proposer would build: its own append and those the listing saw
        # waiting (its own among them once recorded).
        members = 1 if listing is None else min(self.config.max_members,
                                                max(1, listing.waiting + (0 if recorded else 1)))
        return Request(Kind.CONDITIONAL_PUT, partial(self._propose, head, listing, own),
                       partial(self._put_units, head + 1, members))

    def _forget(self, appends: list[int]) -> Request:
        # DynamoDB charges each delete of a batch its own write units, present or not.
        units = len(appends) * self._write_units(self.config.record_bytes)
        return Request(Kind.DELETE, partial(self._delete, appends), lambda: units)

    def _solo_writer(self, writer: _Writer) -> Process:
        c = self.config
        while (begun := self._begin()) is not None:
            own, started_at = begun
            attempt = 0
            while True:
                number = writer.cached_head + 1
                won = yield Request(Kind.CONDITIONAL_PUT, partial(self._commit, number, [own]),
                                    partial(self._put_units, number, 1))
                if won:
                    writer.cached_head = number
                    break
                yield Sleep(self.rng.uniform(0, min(c.solo_backoff_cap_s, c.solo_backoff_base_s * 2**attempt)))
                attempt += 1
                head, _ = yield Request(Kind.QUERY_LOG, partial(self._read_tail, own),
                                        partial(self._tail_units, writer.cached_head))
                writer.cached_head = head
            self._done(started_at)

    # -- the end of a run --

    def _check(self) -> None:
        counts = Counter(member for members in self.log for member in members)
        twice = [append for append, count in counts.items() if count > 1]
        missing = self.started - len(counts)
        if twice or missing or set(counts) != set(range(1, self.started + 1)):
            raise SimulationError(f"{len(twice)} appends committed more than once (e.g. {twice[:5]}), "
                                  f"{missing} of {self.started} never committed")
        if self.live:
            raise SimulationError(f"{len(self.live)} pending records left behind")
        if len(self.completions) != self.started:
            raise SimulationError(f"{self.started - len(self.completions)} appends never completed")

    def _result(self, wall_s: float) -> SimResult:
        c = self.config
        window = [latency for done_at, latency in self.completions if c.warmup_s <= done_at < c.duration_s]
        in_window = [n for n, at in enumerate(self.log) if c.warmup_s <= self.log_times[n] < c.duration_s]
        return SimResult(
            config=c, appends=len(window), window_s=c.duration_s - c.warmup_s, latencies_s=tuple(window),
            transactions=len(in_window), members=sum(len(self.log[n]) for n in in_window),
            requests=self.requests, throttled=self.throttled, units=self.units, wall_s=wall_s,
        )


def simulate(config: SimConfig) -> SimResult:
    return Simulation(config).run()


# -- the benchmark ---------------------------------------------------------------------------------

TARGET_WRITERS = 256
TARGET_APPENDS_PER_S = 5000.0


def _pair(config: SimConfig) -> tuple[SimResult, SimResult]:
    """The run with group commit, and the same run with every writer retrying its own append."""
    return simulate(config), simulate(dataclasses.replace(config, group_commit=False))


def _add(report: Report, label: str, pair: tuple[SimResult, SimResult], note: str, target: str = "-",
         met: bool | None = None) -> None:
    on, off = pair
    baseline = (f"group commit off: {off.appends_per_s:,.0f} appends/s, p50 {off.p50_s * 1000:.1f} ms, "
                f"p99 {off.p99_s * 1000:.1f} ms")
    ratio = on.appends_per_s / off.appends_per_s if off.appends_per_s else None
    seconds = f"{on.window_s:g} simulated s in {on.wall_s + off.wall_s:.1f} s"
    report.add(Row(label, on.summary(), baseline, ratio, target, met, f"{note}; {seconds}" if note else seconds))


def _writers(count: int) -> str:
    return f"{count:,} writer{'' if count == 1 else 's'}"


def run(report: Report, quick: bool) -> None:
    duration, warmup = (1.0, 0.2) if quick else (10.0, 1.0)

    # The AWS rows charge DynamoDB's write capacity per partition key, as the service would.
    for writers in (1, 32, TARGET_WRITERS) if quick else (1, 2, 4, 8, 32, TARGET_WRITERS, 1000):
        pair = _pair(SimConfig(writers, duration, warmup, partition_writes_per_s=DYNAMODB_PARTITION_WRITES_PER_S))
        on = pair[0]
        note = on.capacity()
        if on.throttled:
            note += f", {sum(on.throttled.values()) / max(1, on.appends):.1f} throttled requests/append"
        label = f"AWS ~5 ms, 1,000 WCU/s per key: {_writers(writers)}"
        if writers == TARGET_WRITERS:
            # The target is stated at AWS latencies (the row without a limit, below); this row
            # says what DynamoDB's per-key capacity, which the target leaves out, does to it.
            _add(report, label, pair, note, f"(>= {TARGET_APPENDS_PER_S:,.0f} appends/s, with capacity)",
                 on.appends_per_s >= TARGET_APPENDS_PER_S)
        else:
            _add(report, label, pair, note)

    # The same without any capacity limit: what latency alone allows, and what that would cost.
    for writers in (TARGET_WRITERS,) if quick else (TARGET_WRITERS, 1000):
        pair = _pair(SimConfig(writers, duration, warmup))
        on = pair[0]
        note = (f"{on.capacity()}; at these charges DynamoDB's 1,000 WCU and 3,000 RCU per key allow at most "
                f"{on.partition_cap():,.0f} appends/s")
        label = f"AWS ~5 ms, no capacity limit: {_writers(writers)}"
        if writers == TARGET_WRITERS:
            _add(report, label, pair, note, f">= {TARGET_APPENDS_PER_S:,.0f} appends/s",
                 on.appends_per_s >= TARGET_APPENDS_PER_S)
        else:
            _add(report, label, pair, note)

    try:
        from bench.latency_profile import measure_dynamodb_local

        local = measure_dynamodb_local(count=50 if quick else 300)
        local_note = local.source
    except Exception as error:  # no Java, no jar, a port taken: the AWS profile stands in
        local = AWS
        local_note = f"DynamoDB Local did not start ({type(error).__name__}: {error}), so the AWS profile"
    for writers in (1, 8) if quick else (1, 8, 32):
        # DynamoDB Local enforces no capacity, so neither does the simulation of it.
        pair = _pair(SimConfig(writers, duration, warmup, profile=local))
        _add(report, f"{local.name} latencies: {_writers(writers)}", pair, local_note if writers == 1 else "")

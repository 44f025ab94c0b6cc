"""Exhaustive interleavings of put-and-verify transactions against a model store.

The transactions are the library's own (:func:`exclusive_write` is a generator of store
operations), so what is checked is the code that runs in production, not a transcription of
it. A model store applies PUT, HEAD and DELETE atomically, as a strongly consistent store
does. A LIST is either atomic too, or (``atomic_list=False``) two steps, begin and end, that
return only what a real LIST is sure to: the objects that existed from its beginning to its
end, with the etags they had at its beginning. Objects created or deleted in between are left
out, as an adversary would. A schedule is the order in which clients get to run their next
step; the search tries every schedule, depth first. Sleeps are local to a client and skipped.

Two schedules that reach the same state have the same futures, so each state is expanded once.
A state is the store's contents plus each client's local state, in one of two ways:

* ``exact``: the operations the client ran and the answers it got. Its code is deterministic,
  so the history fixes its local state exactly; but histories rarely coincide.
* ``frame``: where the generator is suspended (its frame's instruction offset), the locals
  that are read after a yield (``attempt``, ``intent``), the transaction-id source's counter,
  its pending operation and the last answer it got (which decides the exception a clean-up
  path re-raises). Everything else in the frame is either constant, rewritten before it is
  read again, or only shapes an error message. Much smaller; the tests check on small cases
  that both give the same terminal outcomes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import GeneratorType
from typing import Any, cast

from sleeper_spark.storage.base import ObjectInfo
from sleeper_spark.storage.put_and_verify import is_intent_of
from sleeper_spark.storage.store_steps import (
    DeleteOp,
    HeadOp,
    ListOp,
    PutOp,
    SleepOp,
    Steps,
    StoreOp,
)
from tests.storage.stores import EPOCH


class ModelStore:
    """Key -> (bytes, etag); an etag is ``<key>#<n>`` for the n-th write of that key."""

    def __init__(self, initial: dict[str, bytes] | None = None) -> None:
        self.objects: dict[str, tuple[bytes, str]] = {}
        self.writes: dict[str, int] = {}
        self.deletes: dict[str, int] = {}
        for key, data in (initial or {}).items():
            self.apply(PutOp(key, data))

    def apply(self, op: StoreOp) -> Any:
        if isinstance(op, PutOp):
            count = self.writes.get(op.key, 0) + 1
            self.writes[op.key] = count
            self.objects[op.key] = (op.data, f"{op.key}#{count}")
            return self.objects[op.key][1]
        if isinstance(op, DeleteOp):
            if self.objects.pop(op.key, None) is not None:
                self.deletes[op.key] = self.deletes.get(op.key, 0) + 1
            return None
        if isinstance(op, HeadOp):
            return self.info(op.key) if op.key in self.objects else None
        if isinstance(op, ListOp):
            return [self.info(key) for key in sorted(self.objects) if key.startswith(op.prefix)]
        raise AssertionError(f"not a store operation: {op}")

    def list_begin(self, prefix: str) -> tuple[tuple[str, str, int], ...]:
        """What a LIST starting now remembers: each object's etag and how often it was deleted."""
        return tuple((k, v[1], self.deletes.get(k, 0)) for k, v in sorted(self.objects.items()) if k.startswith(prefix))

    def list_end(self, begun: tuple[tuple[str, str, int], ...]) -> list[ObjectInfo]:
        """The objects that were there all along, as they were at the beginning."""
        kept = [(key, etag) for key, etag, deletes in begun if self.deletes.get(key, 0) == deletes]
        return [ObjectInfo(key, 0, EPOCH, etag) for key, etag in kept]

    def info(self, key: str) -> ObjectInfo:
        data, etag = self.objects[key]
        return ObjectInfo(key, len(data), EPOCH, etag)

    def etag(self, key: str) -> str | None:
        found = self.objects.get(key)
        return found[1] if found else None

    def frozen(self) -> tuple[Any, ...]:
        return (tuple(sorted((k, v[1]) for k, v in self.objects.items())), tuple(sorted(self.writes.items())),
                tuple(sorted(self.deletes.items())))


@dataclass
class Client:
    """One transaction in flight: its next operation, what it saw, how it ended."""

    name: str
    target: str
    steps: Steps[str]
    ids: IdSource
    pending: StoreOp | None = None
    history: list[Any] = field(default_factory=list)
    outcome: str | None = None  # "ok" or the exception's class name
    wrote_target: bool = False
    released: bool = False
    listing_since: tuple[tuple[str, str, int], ...] | None = None  # a LIST begun, not ended

    @property
    def done(self) -> bool:
        return self.outcome is not None

    @property
    def past_check(self) -> bool:
        """Decided to write its target (or did), and has not yet removed its intent."""
        deciding = isinstance(self.pending, PutOp) and self.pending.key == self.target
        return deciding or (self.wrote_target and not self.released)

    @property
    def holds(self) -> bool:
        """Decided to write its target, or did: for locks, which are never released here."""
        return self.wrote_target or (isinstance(self.pending, PutOp) and self.pending.key == self.target)

    def advance(self, result: Any) -> None:
        while True:
            try:
                op = self.steps.send(result)
            except StopIteration:
                self.outcome, self.pending = "ok", None
                return
            except Exception as error:
                self.outcome, self.pending = type(error).__name__, None
                return
            if isinstance(op, SleepOp):
                result = None
                continue
            self.pending = op
            return


def _compact(result: Any) -> Any:
    if isinstance(result, list):
        return tuple((info.key, info.etag) for info in result)
    return result


class IdSource:
    """Transaction ids ``<client><n>`` in hex (lock families accept only hex ids)."""

    def __init__(self, client: int) -> None:
        self.client = client
        self.count = 0

    def __call__(self) -> str:
        self.count += 1
        return f"{self.client:02x}{self.count:04x}"


@dataclass(frozen=True)
class ClientSpec:
    name: str
    target: str
    make: Callable[[IdSource], Steps[str]]


@dataclass
class World:
    store: ModelStore
    clients: list[Client]

    def key(self, exact: bool) -> tuple[Any, ...]:
        if exact:
            return self.store.frozen(), tuple((tuple(c.history), c.outcome) for c in self.clients)
        return self.store.frozen(), tuple(_frame_key(c) for c in self.clients)


def _frame_key(client: Client) -> tuple[Any, ...]:
    frame = cast("GeneratorType[Any, Any, Any]", client.steps).gi_frame
    last = client.history[-1] if client.history else None
    if frame is None:
        return (client.outcome, client.wrote_target, client.released)
    local = frame.f_locals
    return (frame.f_lasti, local.get("attempt"), local.get("intent"), client.ids.count, client.pending, last,
            client.wrote_target, client.released, client.listing_since)


# Called with the world and the client just before it writes its target.
OnTargetWrite = Callable[[World, Client], None]
Check = Callable[[World], None]


@dataclass
class SearchResult:
    states: int = 0  # distinct states expanded
    terminal_states: int = 0
    interleavings: int = 0  # complete schedules, counted through the state graph
    outcomes: dict[tuple[str | None, ...], int] = field(default_factory=dict)


def replay(specs: list[ClientSpec], initial: dict[str, bytes], schedule: tuple[int, ...],
           on_target_write: OnTargetWrite, atomic_list: bool) -> World:
    clients = []
    for index, spec in enumerate(specs):
        ids = IdSource(index)
        clients.append(Client(spec.name, spec.target, spec.make(ids), ids))
    world = World(ModelStore(initial), clients)
    for client in world.clients:
        client.advance(None)
    for index in schedule:
        step(world, index, on_target_write, atomic_list)
    return world


def step(world: World, index: int, on_target_write: OnTargetWrite, atomic_list: bool) -> None:
    """Runs the next step of client ``index``: an operation, or half of a LIST."""
    client = world.clients[index]
    op = client.pending
    assert op is not None
    if isinstance(op, ListOp) and not atomic_list:
        if client.listing_since is None:
            client.listing_since = world.store.list_begin(op.prefix)
            client.history.append(("ListBegin", op.prefix, client.listing_since))
            return
        result: Any = world.store.list_end(client.listing_since)
        client.listing_since = None
        client.history.append(("ListEnd", op.prefix, _compact(result)))
        client.advance(result)
        return
    if isinstance(op, PutOp) and op.key == client.target:
        on_target_write(world, client)
        client.wrote_target = True
    if isinstance(op, DeleteOp) and client.wrote_target and is_intent_of(op.key, client.target):
        client.released = True
    result = world.store.apply(op)
    client.history.append((type(op).__name__, getattr(op, "key", getattr(op, "prefix", "")), _compact(result)))
    client.advance(result)


def explore(
    specs: list[ClientSpec],
    *,
    initial: dict[str, bytes] | None = None,
    on_target_write: OnTargetWrite,
    check: Check,
    check_final: Check,
    exact: bool = False,
    atomic_list: bool = False,
    max_states: int = 2_000_000,
) -> SearchResult:
    """Runs ``check`` on every reachable state and ``check_final`` on every terminal one."""
    start = initial or {}
    result = SearchResult()
    seen: set[tuple[Any, ...]] = set()
    edges: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    root: tuple[Any, ...] | None = None
    # A schedule, its parent state, and its world if one is at hand: the first child of a
    # state goes on in its parent's world, the others are replayed from scratch.
    stack: list[tuple[tuple[int, ...], tuple[Any, ...] | None, World | None]] = [((), None, None)]
    while stack:
        schedule, parent, world = stack.pop()
        if world is None:
            world = replay(specs, start, schedule, on_target_write, atomic_list)
        else:
            step(world, schedule[-1], on_target_write, atomic_list)
        key = world.key(exact)
        if parent is None:
            root = key
        else:
            edges[parent].append(key)
        if key in seen:
            continue
        seen.add(key)
        edges[key] = []
        result.states += 1
        assert result.states <= max_states, "state space larger than the bound"
        check(world)
        runnable = [i for i, client in enumerate(world.clients) if not client.done]
        if not runnable:
            result.terminal_states += 1
            outcome = tuple(c.outcome for c in world.clients)
            result.outcomes[outcome] = result.outcomes.get(outcome, 0) + 1
            check_final(world)
        children: list[tuple[tuple[int, ...], tuple[Any, ...] | None, World | None]] = [
            ((*schedule, i), key, None) for i in reversed(runnable)
        ]
        if children:
            children[-1] = (children[-1][0], key, world)  # popped first
        stack.extend(children)
    assert root is not None
    result.interleavings = _count_paths(root, edges)
    return result


def _count_paths(root: tuple[Any, ...], edges: dict[tuple[Any, ...], list[tuple[Any, ...]]]) -> int:
    """Complete schedules from ``root``: the graph is acyclic (every step moves a client on)."""
    counts: dict[tuple[Any, ...], int] = {}
    order: list[tuple[Any, ...]] = []
    stack = [(root, False)]
    while stack:  # post-order without recursion
        node, expanded = stack.pop()
        if node in counts:
            continue
        if expanded:
            children = edges[node]
            counts[node] = sum(counts[c] for c in children) if children else 1
            order.append(node)
            continue
        stack.append((node, True))
        stack.extend((child, False) for child in edges[node] if child not in counts)
    return counts[root]

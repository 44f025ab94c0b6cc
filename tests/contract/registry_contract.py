"""The registry contract (see sleeper_spark/log/registry.py), as a suite every backend subclasses:
table entries, and the records of created namespaces beside them.

A subclass provides ``open_registry``: a picklable callable that opens the SAME registry (one
catalog's) each time it is called, in this process or in a spawned one.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Any

import pytest

from sleeper_spark.config import StoreRetryPolicy
from sleeper_spark.errors import NamespaceAlreadyExistsError, TableAlreadyExistsError
from sleeper_spark.log.registry import TableEntry, TableRegistry
from sleeper_spark.models import Namespace
from tests.fixtures.processes import racing_context, released_together

OpenRegistry = Callable[[], TableRegistry]

# Names a catalog accepts (``[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}``) that a store key or a DynamoDB
# key could trip over: dots, dashes, a ".json" ending, names starting with others, case, length.
AWKWARD_NAMES = ["events", "events.archive", "events-2024", "events_v2", "web.events.json", "a.b-c_d",
                 "_hidden", "9lives", "E", "e", "x" * 128]


def entry(name: str) -> TableEntry:
    """A new table's entry: a fresh id, its folder named after it."""
    return TableEntry(name=name, table_id=str(uuid.uuid4()), root=name, created_at=datetime.now(timezone.utc))


def namespace(name: str, comment: str | None = None, **properties: str) -> Namespace:
    """A created namespace's record."""
    return Namespace(name=name, comment=comment, properties=properties, created_at=datetime.now(timezone.utc))


def _with_property(key: str) -> Callable[[Namespace], Namespace]:
    """A change that sets one property (idempotent, as the registry requires)."""
    return lambda record: record.model_copy(update={"properties": {**record.properties, key: "set"}})


def _record_namespace(open_registry: OpenRegistry, new: Namespace, start: threading.Barrier) -> bool:
    registry = open_registry()
    start.wait()
    try:
        registry.register_namespace(new)
        return True
    except NamespaceAlreadyExistsError:
        return False


def _change_namespace_when_released(args: tuple[OpenRegistry, str], worker: int, start: Any) -> list[str]:
    open_registry, name = args
    registry = open_registry()
    start.wait()
    key = f"racer-{worker}"
    assert registry.update_namespace(name, _with_property(key)) is not None
    return [key]


def _register(open_registry: OpenRegistry, new: TableEntry, start: threading.Barrier | None = None) -> bool:
    registry = open_registry()
    if start is not None:
        start.wait()
    try:
        registry.register(new)
        return True
    except TableAlreadyExistsError:
        return False


def _register_in_process(args: tuple[OpenRegistry, TableEntry]) -> bool:
    return _register(*args)


class TableRegistryContract:
    supports_processes = True
    racers = 6
    rounds = 8

    @pytest.fixture
    def open_registry(self) -> OpenRegistry:
        raise NotImplementedError

    def _check_race(self, registry: TableRegistry, entries: list[TableEntry], wins: list[bool]) -> None:
        """Exactly one racer registered the name, and the stored entry is the winner's."""
        assert wins.count(True) == 1, f"{entries[0].name}: {wins.count(True)} winners"
        assert registry.lookup(entries[0].name) == entries[wins.index(True)]

    def test_an_empty_registry_has_no_names(self, open_registry: OpenRegistry) -> None:
        # Given a registry nothing was registered in, When it is asked, Then it knows no table
        registry = open_registry()
        assert registry.names() == []
        assert registry.lookup("events") is None

    def test_register_then_lookup_returns_the_entry(self, open_registry: OpenRegistry) -> None:
        # Given a registered table
        registry = open_registry()
        events = entry("events")
        registry.register(events)
        # When it is looked up, here and through another handle, Then the whole entry comes back
        assert registry.lookup("events") == events
        assert open_registry().lookup("events") == events
        assert registry.lookup("other") is None

    def test_names_are_sorted(self, open_registry: OpenRegistry) -> None:
        # Given tables registered out of order
        registry = open_registry()
        for name in ("clicks", "views", "events", "ads"):
            registry.register(entry(name))
        # When the names are listed, Then they come sorted
        assert registry.names() == ["ads", "clicks", "events", "views"]

    def test_a_taken_name_is_refused_and_the_first_entry_kept(self, open_registry: OpenRegistry) -> None:
        # Given a registered table
        registry = open_registry()
        first = entry("events")
        registry.register(first)
        # When another table, or the same entry again, is registered under its name
        with pytest.raises(TableAlreadyExistsError):
            registry.register(entry("events"))
        with pytest.raises(TableAlreadyExistsError):
            open_registry().register(first)
        # Then both are refused and the first entry stays
        assert registry.lookup("events") == first
        assert registry.names() == ["events"]

    def test_unregister_removes_the_name_and_is_idempotent(self, open_registry: OpenRegistry) -> None:
        # Given two registered tables
        registry = open_registry()
        registry.register(entry("events"))
        registry.register(entry("clicks"))
        # When one is unregistered twice, and a name never registered is unregistered
        registry.unregister("events")
        registry.unregister("events")
        registry.unregister("never-registered")
        # Then only that one is gone
        assert registry.lookup("events") is None
        assert registry.names() == ["clicks"]

    def test_a_name_unregistered_can_be_registered_anew(self, open_registry: OpenRegistry) -> None:
        # Given a table dropped from the registry
        registry = open_registry()
        registry.register(entry("events"))
        registry.unregister("events")
        # When a table is created again under its name, Then the registry holds the new entry
        again = entry("events")
        registry.register(again)
        assert registry.lookup("events") == again

    def test_names_with_dots_dashes_and_underscores(self, open_registry: OpenRegistry) -> None:
        # Given tables whose names are awkward for keys (see AWKWARD_NAMES)
        registry = open_registry()
        entries = {name: entry(name) for name in AWKWARD_NAMES}
        for new in entries.values():
            registry.register(new)
        # When they are listed and looked up, Then each name is itself, and no name hides another
        assert registry.names() == sorted(AWKWARD_NAMES)
        for name, registered in entries.items():
            assert registry.lookup(name) == registered
        # And unregistering one name leaves those that start with it
        registry.unregister("events")
        assert registry.names() == sorted(set(AWKWARD_NAMES) - {"events"})

    def test_racing_threads_register_one_name_once(self, open_registry: OpenRegistry) -> None:
        for round_ in range(self.rounds):
            # Given racers that each create a table of one name at the same moment
            start = threading.Barrier(self.racers)
            entries = [entry(f"raced-{round_}") for _ in range(self.racers)]
            # When they register
            with ThreadPoolExecutor(self.racers) as pool:
                wins = list(pool.map(_register, [open_registry] * self.racers, entries, [start] * self.racers))
            # Then one won, and the registry holds its entry
            self._check_race(open_registry(), entries, wins)
        assert open_registry().names() == sorted(f"raced-{r}" for r in range(self.rounds))

    def test_racing_processes_register_one_name_once(self, open_registry: OpenRegistry) -> None:
        if not self.supports_processes:
            pytest.skip("this registry lives in one process by design")
        # Given racing processes, as Spark drivers creating one table on several machines
        context = racing_context()
        with context.Pool(self.racers) as pool:
            for round_ in range(self.rounds):
                entries = [entry(f"raced-{round_}") for _ in range(self.racers)]
                # When each registers its own entry under the round's name
                wins = pool.map(_register_in_process, [(open_registry, new) for new in entries])
                # Then one won, and the registry holds its entry
                self._check_race(open_registry(), entries, wins)

    # -- namespace records ---------------------------------------------------------------

    def test_an_empty_registry_has_no_namespace_records(self, open_registry: OpenRegistry) -> None:
        # Given a registry nothing was recorded in, When it is asked, Then it knows no namespace
        registry = open_registry()
        assert registry.namespace_names() == []
        assert registry.lookup_namespace("sales") is None
        assert registry.update_namespace("sales", _with_property("owner")) is None
        registry.unregister_namespace("sales")  # nothing to remove: no error

    def test_a_recorded_namespace_reads_back_whole_and_once(self, open_registry: OpenRegistry) -> None:
        # Given a recorded namespace with a comment and properties
        registry = open_registry()
        sales = namespace("sales", "Orders and refunds", owner="finance", retention="7d")
        registry.register_namespace(sales)
        # When it is looked up through another handle, Then the whole record comes back
        assert open_registry().lookup_namespace("sales") == sales
        # And recording it again, or another namespace of its name, is refused, the first kept
        with pytest.raises(NamespaceAlreadyExistsError):
            registry.register_namespace(namespace("sales"))
        with pytest.raises(NamespaceAlreadyExistsError):
            open_registry().register_namespace(sales)
        assert registry.lookup_namespace("sales") == sales
        assert registry.namespace_names() == ["sales"]

    def test_namespace_records_and_table_entries_never_meet(self, open_registry: OpenRegistry) -> None:
        # Given tables of awkward names, and namespaces of the same names and of others
        registry = open_registry()
        tables = {name: entry(name) for name in [*AWKWARD_NAMES, "_namespaces", "namespace"]}
        for new in tables.values():
            registry.register(new)
        records = {name: namespace(name) for name in ["events", "events.archive", "web", "web.events", "a.b-c_d"]}
        for record in records.values():
            registry.register_namespace(record)
        # When both are listed, Then each lists only its own
        assert registry.names() == sorted(tables)
        assert registry.namespace_names() == sorted(records)
        # And removing a table leaves the namespace of its name, and the other way round
        registry.unregister("events")
        registry.unregister_namespace("web")
        assert registry.lookup_namespace("events") == records["events"]
        assert registry.lookup("web.events.json") == tables["web.events.json"]
        assert registry.namespace_names() == sorted(set(records) - {"web"})
        assert registry.names() == sorted(set(tables) - {"events"})

    def test_a_change_replaces_the_record_and_unregistering_removes_it(self, open_registry: OpenRegistry) -> None:
        # Given a recorded namespace
        registry = open_registry()
        sales = namespace("sales", "Orders", owner="finance")
        registry.register_namespace(sales)
        # When its comment is changed and a property removed
        changed = registry.update_namespace(
            "sales", lambda record: record.model_copy(update={"comment": "Orders and refunds", "properties": {}}))
        # Then the stored record is the changed one, with its name and creation time kept
        assert changed == sales.model_copy(update={"comment": "Orders and refunds", "properties": {}})
        assert open_registry().lookup_namespace("sales") == changed
        # And once it is unregistered (twice: no error) it is gone, and a change finds nothing
        registry.unregister_namespace("sales")
        registry.unregister_namespace("sales")
        assert registry.lookup_namespace("sales") is None and registry.namespace_names() == []
        assert registry.update_namespace("sales", _with_property("owner")) is None

    def test_racing_threads_record_one_namespace_once(self, open_registry: OpenRegistry) -> None:
        for round_ in range(self.rounds):
            # Given racers that each create a namespace of one name at the same moment
            start = threading.Barrier(self.racers)
            records = [namespace(f"raced-{round_}", f"racer {racer}") for racer in range(self.racers)]
            # When they record it
            with ThreadPoolExecutor(self.racers) as pool:
                wins = list(pool.map(_record_namespace, [open_registry] * self.racers, records,
                                     [start] * self.racers))
            # Then one won, and the registry holds its record
            assert wins.count(True) == 1, f"round {round_}: {wins.count(True)} winners"
            assert open_registry().lookup_namespace(f"raced-{round_}") == records[wins.index(True)]

    def test_racing_changes_of_one_namespace_all_land(self, open_registry: OpenRegistry) -> None:
        if not self.supports_processes:
            pytest.skip("this registry lives in one process by design")
        # Given a recorded namespace, and racing processes (Spark drivers on several machines)
        # that each set a property of their own on it
        open_registry().register_namespace(namespace("sales"))
        # When they are released at one moment: as many as a change has attempts (each failed
        # compare-and-swap means another racer's change landed, so a racer fails at most once per
        # other racer; with more racers than attempts, running out is the documented outcome,
        # StorageError with nothing changed, and it happened on the slower registries under load)
        racers = min(self.racers, StoreRetryPolicy().max_attempts)
        keys = released_together(_change_namespace_when_released, (open_registry, "sales"), racers)
        # Then no change was lost: each compare-and-swap saw the changes before it
        record = open_registry().lookup_namespace("sales")
        assert record is not None and record.properties == {key: "set" for key in keys}

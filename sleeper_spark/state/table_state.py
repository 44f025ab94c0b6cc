"""The materialised state of one table at one transaction number."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn, TypeVar

from sleeper_spark.models import Snapshot, TableSchema
from sleeper_spark.state.collections import FileSet
from sleeper_spark.state.file_columns import FileLayout
from sleeper_spark.state.history import SnapshotLog

V = TypeVar("V")


class ReadOnlyDict(dict[str, V]):
    """A dict that refuses changes: a state's properties and app versions, shared between threads.

    A real dict, so that code which serialises a state's fields (JSON, the CLI) sees a dict.
    """

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError("a table state is never changed; apply() makes a new one")

    __setitem__ = __delitem__ = update = pop = popitem = clear = setdefault = __ior__ = _refuse

    def __reduce__(self) -> tuple[Any, ...]:
        return ReadOnlyDict, (dict(self),)

    def __copy__(self) -> ReadOnlyDict[V]:
        return self


@dataclass(frozen=True, eq=True)
class TableState:
    """What the fold over transactions ``1..version`` produces. Immutable.

    Threads share states (one catalog, one head per table), so a state is never changed once
    made: :func:`sleeper_spark.state.apply` returns a new one. That stays O(change), not
    O(files): the new state shares the old one's Arrow batches and adds a few rows (see
    :mod:`sleeper_spark.state.runs`); ``properties`` and ``app_versions`` are small read-only
    mappings, copied when they change.
    """

    table_id: str
    name: str
    schema: TableSchema
    partition_by: tuple[str, ...]
    event_time_column: str | None
    properties: Mapping[str, str] = field(default_factory=lambda: ReadOnlyDict({}))
    files: FileSet = None  # type: ignore[assignment]  # filled in by __post_init__ when not given
    history: SnapshotLog = field(default_factory=SnapshotLog)  # data snapshots, oldest first
    app_versions: Mapping[str, int] = field(default_factory=lambda: ReadOnlyDict({}))  # highest per app
    version: int = 1  # number of the last transaction applied

    def __post_init__(self) -> None:
        if not isinstance(self.properties, ReadOnlyDict):
            object.__setattr__(self, "properties", ReadOnlyDict(dict(self.properties)))
        if not isinstance(self.app_versions, ReadOnlyDict):
            object.__setattr__(self, "app_versions", ReadOnlyDict(dict(self.app_versions)))
        if self.files is None:
            object.__setattr__(self, "files", FileSet(self.layout))

    @property
    def layout(self) -> FileLayout:
        """Which columns this state's files table has."""
        return FileLayout(self.schema, self.partition_by)

    @property
    def snapshot_id(self) -> str | None:
        """The id of the newest data snapshot: the parent of the next one."""
        return self.history[-1].snapshot_id if self.history else None

    @property
    def latest(self) -> Snapshot | None:
        return self.history[-1] if self.history else None

    def snapshot_for_write(self, write_id: str) -> Snapshot | None:
        """The snapshot that committed the write with this id, alone or in a group; newest first."""
        return self.history.last_holding_write(write_id)

    def snapshot_for_app(self, app_id: str, app_version: int) -> Snapshot | None:
        return self.history.last_holding_app(app_id, app_version)

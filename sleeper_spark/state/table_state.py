"""The materialised state of one table at one transaction number."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from sleeper_spark.models import Snapshot, TableSchema
from sleeper_spark.state.collections import FileMap, SnapshotLog


@dataclass
class TableState:
    """What the fold over transactions ``1..version`` produces.

    Mutable on purpose: :func:`sleeper_spark.state.apply` updates it in place so that replaying
    a long log costs O(changes), not O(files) per transaction. Call :meth:`copy` to keep an
    earlier state.
    """

    table_id: str
    name: str
    schema: TableSchema
    partition_by: tuple[str, ...]
    event_time_column: str | None
    properties: dict[str, str] = field(default_factory=dict)
    files: FileMap = field(default_factory=FileMap)  # active files by path, in commit order
    history: SnapshotLog = field(default_factory=SnapshotLog)  # data snapshots, oldest first
    app_versions: dict[str, int] = field(default_factory=dict)  # highest committed version per app
    version: int = 1  # number of the last transaction applied

    @property
    def snapshot_id(self) -> str | None:
        """The id of the newest data snapshot: the parent of the next one."""
        return self.history[-1].snapshot_id if self.history else None

    @property
    def latest(self) -> Snapshot | None:
        return self.history[-1] if self.history else None

    def copy(self) -> TableState:
        # FileRef and Snapshot are frozen, so sharing them is safe; only containers are copied.
        clone = copy.copy(self)
        clone.properties = dict(self.properties)
        clone.files = self.files.copy()
        clone.history = self.history.copy()
        clone.app_versions = dict(self.app_versions)
        return clone

    def snapshot_for_write(self, write_id: str) -> Snapshot | None:
        """The snapshot a write with this id committed, newest first (a retry's usual target)."""
        for snapshot in reversed(self.history):
            if snapshot.write_id == write_id:
                return snapshot
        return None

    def snapshot_for_app(self, app_id: str, app_version: int) -> Snapshot | None:
        for snapshot in reversed(self.history):
            if snapshot.app_id == app_id and snapshot.app_version == app_version:
                return snapshot
        return None

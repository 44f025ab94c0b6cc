"""A committed table version."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


class SnapshotMember(BaseModel):
    """One writer's append in a version that holds several (group commit)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    write_id: str
    operation: str = "append"
    metadata: dict[str, str] = Field(default_factory=dict)
    app_id: str | None = None
    app_version: int | None = None
    rows_added: int = 0
    files_added: int = 0
    bytes_added: int = 0


class Snapshot(BaseModel):
    """One committed version of a table (Lode's sense of snapshot).

    ``version`` is the number of the transaction that made it; history is linear and each
    snapshot names its parent (``None`` for the first).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = Field(ge=1)
    snapshot_id: str
    parent_id: str | None = None
    committed_at: datetime
    operation: str
    metadata: dict[str, str] = Field(default_factory=dict)
    rows_added: int = 0
    rows_removed: int = 0
    files_added: int = 0
    files_removed: int = 0
    bytes_added: int = 0
    min_event_time: datetime | None = None
    max_event_time: datetime | None = None
    app_id: str | None = None
    app_version: int | None = None
    write_id: str | None = None
    # What the operation did, beyond the counts above: a merge's rows_inserted, rows_updated,
    # rows_deleted, rows_copied, files_rewritten; an update's rows_updated, rows_copied, ...
    operation_metrics: dict[str, int] = Field(default_factory=dict)
    # The appends a group commit combined into this version, one per writer, in commit order;
    # empty for a version one writer made (whose fields above are then its own).
    members: tuple[SnapshotMember, ...] = ()

    def member(self, write_id: str) -> SnapshotMember | None:
        """The member with this write id, if the version holds it."""
        return next((m for m in self.members if m.write_id == write_id), None)

    def holds_write(self, write_id: str) -> bool:
        """Whether this version committed the write ``write_id`` (alone or as a member)."""
        return self.write_id == write_id or self.member(write_id) is not None

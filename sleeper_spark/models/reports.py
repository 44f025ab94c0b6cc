"""Reports returned by maintenance operations."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class FileProblem(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    problem: str  # "missing", "size", "checksum"; a deep verify adds "unreadable" and "stats"
    detail: str = ""


class VerifyReport(BaseModel):
    """What ``Table.verify`` found: every referenced file checked for presence, size, checksum."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int
    files_checked: int
    bytes_checked: int
    problems: tuple[FileProblem, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems


class VacuumReport(BaseModel):
    """What ``Table.vacuum`` deleted (or would delete, with ``dry_run``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    dry_run: bool
    data_files_deleted: int = 0
    bodies_deleted: int = 0
    state_snapshots_deleted: int = 0
    temporaries_deleted: int = 0  # temporary files and put-and-verify intents that dead writers left
    bytes_deleted: int = 0
    deleted: tuple[str, ...] = Field(default=())


class TruncateReport(BaseModel):
    """What ``Table.truncate_log`` deleted (or would delete, with ``dry_run``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    dry_run: bool
    up_to: int | None = None  # transactions numbered <= up_to were deleted; None: nothing was
    transactions_deleted: int = 0
    bodies_deleted: int = 0
    first_transaction: int | None = None  # the lowest number left in the log

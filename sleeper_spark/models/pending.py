"""The record of a pending append (group commit): what any writer needs to commit it."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from sleeper_spark.models.transactions import AddFiles


class PendingBatch(BaseModel):
    """The appends one writer is waiting to commit, as it recorded them.

    ``after``: a version the log had reached before any of these appends could be in it, so a
    combiner looks for them only in versions above it (usually a handful, from memory).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    recorded_at: datetime
    after: int = Field(ge=1)
    members: tuple[AddFiles, ...] = Field(min_length=1)

    def encode(self) -> bytes:
        return self.model_dump_json(by_alias=True, exclude_none=True).encode()

    @classmethod
    def decode(cls, data: bytes) -> PendingBatch:
        return cls.model_validate_json(data)

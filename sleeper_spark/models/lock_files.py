"""The bodies of lock files and put-and-verify intent files on the object store.

Both are small JSON documents written for the people and tools that look at a lock: who holds
it, since when, until when. Key order and separators are as released; golden files pin them.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict
from typing_extensions import Self

from sleeper_spark.models.iso_times import IsoTimesModel

HeldLockKind = Literal["mutex", "write", "read"]


class _JsonBody(IsoTimesModel):
    """A body stored as one JSON document."""

    def encode(self) -> bytes:
        return json.dumps(self.model_dump(mode="json")).encode()

    @classmethod
    def decode(cls, data: bytes) -> Self:
        return cls.model_validate_json(data)


class LockOwner(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    host: str
    pid: int
    label: str = ""


class LockFileBody(_JsonBody):
    """A mutex, write lock or read lock file: its holder and lease."""

    kind: HeldLockKind
    owner: LockOwner
    token: str = ""  # random per acquisition: tells the holder its lock from a later one
    acquired_at: datetime
    expires_at: datetime


class IntentBody(_JsonBody):
    """A put-and-verify writer's intent: only for people looking at one left behind."""

    target: str
    host: str
    pid: int
    written_at: datetime

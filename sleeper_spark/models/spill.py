"""The log entry that stands in for a transaction body too big for the log (see log/codec.py)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, field_serializer

# Both separators a released writer used: the pointer is recognised by its first bytes, so that
# telling it from a transaction costs no JSON parse of an ordinary entry.
_PREFIXES = (b'{"type": "spilled"', b'{"type":"spilled"')


class SpillPointer(BaseModel):
    """Where the body lives (table-relative), its checksum, and the fields a rebase changes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["spilled"] = "spilled"
    body: str
    checksum: str  # "sha256:<hex>" of the stored body
    parent_id: str | None
    committed_at: datetime

    @field_serializer("committed_at")
    def _iso(self, value: datetime) -> str:
        return value.isoformat()

    def encode(self) -> bytes:
        # Key order and separators as released; a golden file pins them.
        return json.dumps(self.model_dump(mode="json")).encode()

    @classmethod
    def decode(cls, data: bytes) -> SpillPointer:
        return cls.model_validate_json(data)

    @staticmethod
    def is_pointer(data: bytes) -> bool:
        """Whether a log entry's bytes are a spill pointer rather than a transaction."""
        return data.startswith(_PREFIXES)

"""How a stored shape writes its times: as ``datetime.isoformat()`` does (``+00:00``).

Pydantic would write ``Z`` instead; lock files, intents and DynamoDB items were released with
``isoformat()``, and their golden files pin it.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, field_serializer


class IsoTimesModel(BaseModel):
    """A frozen stored shape that refuses unknown fields and writes every time with ``isoformat()``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    @field_serializer("*")
    def _iso(self, value: object) -> object:
        return value.isoformat() if isinstance(value, datetime) else value

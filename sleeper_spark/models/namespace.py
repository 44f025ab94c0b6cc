"""A namespace of a catalog: a dotted prefix of table names, with a comment and properties.

A namespace exists when it was created (then the catalog keeps its record, this model) or when
some table's name has it as a prefix (it is implied: no comment, no properties, no
``created_at``). The record is stored as this model's JSON; its golden files pin the form.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


class Namespace(BaseModel):
    """A namespace: ``name`` (``sales``, ``sales.eu``), its ``comment`` and ``properties``.

    ``created_at`` is when it was created, and ``None`` for an implied namespace, one that only
    table names make (``sales`` for the table ``sales.orders``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    comment: str | None = None
    properties: dict[str, str] = Field(default_factory=dict)
    created_at: datetime | None = None

    @property
    def recorded(self) -> bool:
        """Whether the catalog keeps a record of it (it was created), rather than table names implying it."""
        return self.created_at is not None

"""Data files and their statistics."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

# A statistic is stored as a JSON scalar: numbers and booleans as themselves, strings as
# themselves, dates/timestamps as ISO-8601 strings and decimals as strings. The column's type in
# the table schema says how to read it back.
StatValue = bool | int | float | str | None


class ColumnStats(BaseModel):
    """Per-column statistics of one data file, computed while the file was written."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    min: StatValue = None
    max: StatValue = None
    null_count: int = Field(default=0, ge=0)


class FileRef(BaseModel):
    """An immutable Parquet data file of a table.

    ``path`` is relative to the table root; ``partition`` maps every partition column to its
    value as a string (``None`` for null); ``checksum`` is ``"<algo>:<hex>"`` over the bytes.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    partition: dict[str, str | None] = Field(default_factory=dict)
    size_bytes: int = Field(ge=0)
    row_count: int = Field(ge=0)
    checksum: str
    column_stats: dict[str, ColumnStats] = Field(default_factory=dict)

"""Where data files go: ``data/<col>=<escaped value>/.../<uuid>.parquet`` under the table.

Every partition value is percent-encoded (everything but ``A-Za-z0-9_.-~``), so ``/`` and
``\\`` cannot start a new path segment, and a value of ``.`` or ``..`` becomes ``%2E`` / ``%2E%2E``.
A segment always starts with ``<col>=``, so no value can leave the table's directory. Null is
Hive's ``__HIVE_DEFAULT_PARTITION__``; a literal string with that text is encoded so the two
never share a directory. Values whose encoding would make a segment too long for a file system
are replaced by a hash (the exact value is always in the FileRef, never parsed from paths).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from urllib.parse import quote

from sleeper_spark.layout import DATA_DIR

NULL_SEGMENT = "__HIVE_DEFAULT_PARTITION__"
_MAX_SEGMENT_BYTES = 200


def escape_partition_value(value: str | None) -> str:
    if value is None:
        return NULL_SEGMENT
    if value == NULL_SEGMENT:
        return "%5F" + value[1:]
    escaped = quote(value, safe="")
    if escaped in (".", ".."):
        escaped = escaped.replace(".", "%2E")
    if escaped.startswith("."):
        escaped = "%2E" + escaped[1:]
    if len(escaped.encode()) > _MAX_SEGMENT_BYTES - 40:
        escaped = "__hash_" + hashlib.sha256(value.encode()).hexdigest()
    return escaped


def partition_dir(partition: Mapping[str, str | None], columns: tuple[str, ...]) -> str:
    segments = [f"{quote(column, safe='')}={escape_partition_value(partition[column])}" for column in columns]
    return "/".join([DATA_DIR, *segments])


def new_data_file_path(partition: Mapping[str, str | None], columns: tuple[str, ...]) -> str:
    """A fresh, never-used path relative to the table root."""
    return f"{partition_dir(partition, columns)}/{uuid.uuid4().hex}.parquet"

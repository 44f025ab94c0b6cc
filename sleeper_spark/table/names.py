"""Table names: what is allowed, and the folder a table lives in."""

from __future__ import annotations

import re

from sleeper_spark.errors import InvalidTableNameError

_TABLE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")


def check_table_name(name: object) -> str:
    if not isinstance(name, str) or not _TABLE_NAME.fullmatch(name):
        raise InvalidTableNameError(
            f"invalid table name {name!r}: use 1-128 characters from A-Z a-z 0-9 _ . - , not starting with . or -"
        )
    return name

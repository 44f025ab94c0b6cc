"""Table names: what is allowed, and the folder a table lives in."""

from __future__ import annotations

import re

from sleeper_spark.errors import InvalidTableNameError
from sleeper_spark.layout import CATALOG_DIR

_TABLE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")


def check_table_name(name: object) -> str:
    if not isinstance(name, str) or not _TABLE_NAME.fullmatch(name):
        raise InvalidTableNameError(
            f"invalid table name {name!r}: use 1-128 characters from A-Z a-z 0-9 _ . - , not starting with . or -"
        )
    if name == CATALOG_DIR:
        # A table's files live under <warehouse>/<name>/: this one's folder would hold the records
        # of every table of the catalog, and dropping it with purge would delete them all.
        raise InvalidTableNameError(f"{CATALOG_DIR!r} is the folder of the catalog's records and cannot name a "
                                    "table; choose another name")
    return name

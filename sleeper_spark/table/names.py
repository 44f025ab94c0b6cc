"""Table and namespace names: what is allowed, and which namespaces a name is in.

A namespace is a dotted prefix of table names: ``sales.orders`` is in ``sales``, ``a.b.t`` in
``a.b`` and, through it, in ``a``.
"""

from __future__ import annotations

import re

from sleeper_spark.errors import InvalidNamespaceNameError, InvalidTableNameError
from sleeper_spark.layout import CATALOG_DIR

_TABLE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
# Dot-separated parts, none empty, each as a table name starts; room left for ".<table>".
_NAMESPACE_NAME = re.compile(r"(?=.{1,126}$)[A-Za-z0-9_][A-Za-z0-9_-]*(\.[A-Za-z0-9_][A-Za-z0-9_-]*)*")


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


def check_namespace_name(name: object) -> str:
    if not isinstance(name, str) or not _NAMESPACE_NAME.fullmatch(name):
        raise InvalidNamespaceNameError(
            f"invalid namespace name {name!r}: use parts of A-Z a-z 0-9 _ - joined by dots (such as 'sales' or "
            "'sales.eu'), each part starting with a letter, digit or _, at most 126 characters in all"
        )
    return name


def parent_namespaces(name: str) -> list[str]:
    """The namespaces a table or namespace of this name is in, outermost first: ``a.b.t`` is in ``a`` and ``a.b``.

    Only prefixes that are namespace names count: the table ``a..t`` is in ``a`` alone.
    """
    parts = name.split(".")[:-1]
    found: list[str] = []
    for count in range(1, len(parts) + 1):
        prefix = ".".join(parts[:count])
        if not _NAMESPACE_NAME.fullmatch(prefix):
            break
        found.append(prefix)
    return found


def is_inside(name: str, namespace: str) -> bool:
    """Whether the table or namespace ``name`` is in ``namespace`` or in a namespace nested in it."""
    return name.startswith(namespace + ".")

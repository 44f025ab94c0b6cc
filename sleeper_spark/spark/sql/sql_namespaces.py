"""The SQL catalog's namespace requests: Spark's ``SupportsNamespaces`` over the catalog's namespaces.

Each takes the request's ``namespace`` (Spark's parts: ``["sales", "eu"]`` is ``sales.eu``) and
answers one JSON object (see :mod:`sleeper_spark.spark.sql.sql_catalog` for the ops). Spark's
namespace metadata is the namespace's properties with its comment under ``"comment"``.

A missing warehouse holds no namespace, so the existence checks Spark makes before ``CREATE
NAMESPACE`` answer "missing" and the creation goes on to create the warehouse; the statements
on one namespace (``DESCRIBE``, ``ALTER``) raise :class:`WarehouseNotFoundError`, which says to
check the path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sleeper_spark.errors import (
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NamespaceNotFoundError,
    WarehouseNotFoundError,
)
from sleeper_spark.table import Catalog
from sleeper_spark.table.namespaces import COMMENT

NamespaceRequest = Callable[[Catalog, Mapping[str, Any]], dict[str, Any]]


def _name(body: Mapping[str, Any]) -> str:
    return ".".join(str(part) for part in body["namespace"])


def exists(catalog: Catalog, name: str) -> bool:
    """Whether the namespace ``name`` exists; a missing warehouse has none."""
    try:
        catalog.namespace(name)
    except NamespaceNotFoundError:
        return False
    return True


def children(catalog: Catalog, body: Mapping[str, Any]) -> dict[str, Any]:
    """``namespaces``: whether the namespace exists, and the last part of each namespace directly in it."""
    name = _name(body)
    try:
        found = catalog.namespaces(name or None)
    except NamespaceNotFoundError:
        if not name:
            raise  # the catalog itself: a missing warehouse is a mistyped path
        return {"exists": False, "children": []}
    return {"exists": True, "children": [child.rsplit(".", 1)[-1] for child in found]}


def metadata(catalog: Catalog, body: Mapping[str, Any]) -> dict[str, Any]:
    """``namespace``: its metadata (properties, and the comment as ``"comment"``), or ``{"missing": <why>}``."""
    try:
        namespace = catalog.namespace(_name(body))
    except WarehouseNotFoundError:
        raise
    except NamespaceNotFoundError as missing:
        return {"missing": str(missing)}
    described = dict(namespace.properties)
    if namespace.comment is not None:
        described[COMMENT] = namespace.comment
    return {"metadata": described}


def create(catalog: Catalog, body: Mapping[str, Any]) -> dict[str, Any]:
    """``createNamespace``: records it with Spark's metadata; ``{"exists": true}`` if it exists."""
    try:
        catalog.create_namespace(_name(body), properties=dict(body.get("metadata") or {}))
    except NamespaceAlreadyExistsError:
        return {"exists": True}
    return {}


def alter(catalog: Catalog, body: Mapping[str, Any]) -> dict[str, Any]:
    """``alterNamespace`` ``{set, unset}``: the properties set and removed; ``{"missing": <why>}``."""
    try:
        catalog.alter_namespace(_name(body), set=dict(body.get("set") or {}), unset=list(body.get("unset") or ()))
    except WarehouseNotFoundError:
        raise
    except NamespaceNotFoundError as missing:
        return {"missing": str(missing)}
    return {}


def drop(catalog: Catalog, body: Mapping[str, Any]) -> dict[str, Any]:
    """``dropNamespace`` ``{cascade}``: ``{"dropped": bool}``, or ``{"nonEmpty": true}`` while it holds tables."""
    try:
        catalog.drop_namespace(_name(body), cascade=bool(body.get("cascade")))
    except NamespaceNotEmptyError:
        return {"nonEmpty": True}
    except WarehouseNotFoundError:
        raise
    except NamespaceNotFoundError:
        return {"dropped": False}
    return {"dropped": True}


OPERATIONS: dict[str, NamespaceRequest] = {
    "namespaces": children, "namespace": metadata, "createNamespace": create, "alterNamespace": alter,
    "dropNamespace": drop,
}

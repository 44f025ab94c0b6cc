"""The catalog's registry: table name -> (table id, location), and the records of created namespaces.

Registering is a conditional create, so two processes creating the same table race safely: one
wins, the other gets :class:`TableAlreadyExistsError`. Dropping a table removes its entry; a
table created again under the same name gets a new id, and with it an empty log.

A namespace record (a :class:`~sleeper_spark.models.Namespace`) is created the same way
(:class:`NamespaceAlreadyExistsError` for the loser) and changed by compare-and-swap, retried
while other writers change it, so that racing changes of different properties all land. The
records say nothing about tables: a table never needs its namespace to be recorded.
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from datetime import datetime
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from sleeper_spark.config import StoreRetryPolicy
from sleeper_spark.errors import (
    CorruptLogError,
    NamespaceAlreadyExistsError,
    PathExistsError,
    PreconditionFailedError,
    StorageError,
    TableAlreadyExistsError,
    WriteOutcomeUnknownError,
)
from sleeper_spark.layout import CATALOG_DIR, NAMESPACES_DIR, namespace_key, namespace_of_key, registry_key
from sleeper_spark.models import Namespace
from sleeper_spark.storage import ConditionalWriteStrategy, ObjectStore
from sleeper_spark.storage.retry import FailureKind, StoreRetries

# What a registry reads with a namespace record to replace it by compare-and-swap (an etag, the stored text).
Token = TypeVar("Token")
NamespaceChange = Callable[[Namespace], Namespace]


class TableEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    table_id: str
    root: str  # the table's folder, relative to the warehouse
    created_at: datetime


class TableRegistry(ABC):
    @abstractmethod
    def register(self, entry: TableEntry) -> None:
        """Adds the entry; :class:`TableAlreadyExistsError` if the name is taken."""

    @abstractmethod
    def lookup(self, name: str) -> TableEntry | None:
        """The entry for ``name``, or ``None``."""

    @abstractmethod
    def names(self) -> list[str]:
        """Every registered name, sorted."""

    @abstractmethod
    def unregister(self, name: str) -> None:
        """Removes the entry; no error if it is gone."""

    @abstractmethod
    def register_namespace(self, namespace: Namespace) -> None:
        """Records a created namespace; :class:`NamespaceAlreadyExistsError` if one of its name is recorded."""

    @abstractmethod
    def lookup_namespace(self, name: str) -> Namespace | None:
        """The record of the namespace ``name``, or ``None``."""

    @abstractmethod
    def namespace_names(self) -> list[str]:
        """The name of every recorded namespace, sorted."""

    @abstractmethod
    def update_namespace(self, name: str, change: NamespaceChange) -> Namespace | None:
        """Replaces the record of ``name`` with ``change(record)`` and returns it; ``None`` if there is none.

        A compare-and-swap, tried again on a fresh read while other writers change the record.
        ``change`` must be idempotent (applied to its own result it changes nothing): then a
        write whose answer was lost is recognised on the next read, and not made twice.
        """

    @abstractmethod
    def unregister_namespace(self, name: str) -> None:
        """Removes the record; no error if it is gone."""


def swap_namespace(
    name: str,
    read: Callable[[], tuple[Namespace, Token] | None],
    replace: Callable[[Token, Namespace], bool],
    change: NamespaceChange,
    retry: StoreRetryPolicy,
    sleep: Callable[[float], None],
) -> Namespace | None:
    """The loop of :meth:`TableRegistry.update_namespace`: ``read`` gives the record and what
    ``replace`` needs to write over exactly that record, ``replace`` answers whether it did."""
    what = f"changing the record of namespace {name!r}"
    retries = StoreRetries(retry, what, sleep=sleep)
    for attempt in retries:
        with attempt:
            found = read()
            if found is None:
                return None
            current, token = found
            changed = change(current)
            if changed == current or replace(token, changed):
                return changed
            retries.failed(PreconditionFailedError(f"another writer changed the record of namespace {name!r}"),
                           FailureKind.NOT_APPLIED)
    raise StorageError(f"{what}: other writers kept changing it ({retries.describe()}); nothing was changed, "
                       "try again")


class ObjectStoreTableRegistry(TableRegistry):
    """One small file per table (``_catalog/<name>.json``) and per namespace (``_catalog/_namespaces/<name>.json``)."""

    def __init__(self, store: ObjectStore, conditional: ConditionalWriteStrategy, *,
                 retry: StoreRetryPolicy | None = None, sleep: Callable[[float], None] = time.sleep) -> None:
        self._store = store
        self._conditional = conditional
        self._retry = retry or StoreRetryPolicy()  # of a namespace record's compare-and-swap
        self._sleep = sleep

    def _key(self, name: str) -> str:
        return registry_key(name)

    def register(self, entry: TableEntry) -> None:
        try:
            self._conditional.create_if_absent(self._key(entry.name), entry.model_dump_json().encode())
        except PathExistsError:
            raise TableAlreadyExistsError(f"table {entry.name!r} exists already") from None

    def lookup(self, name: str) -> TableEntry | None:
        key = self._key(name)
        try:
            data = self._store.get(key)
        except FileNotFoundError:
            return None
        try:
            return TableEntry.model_validate(json.loads(data))
        except (ValueError, ValidationError) as error:  # ValueError: JSON and UTF-8 errors
            raise CorruptLogError(
                f"the catalog entry of table {name!r} ({self._store.uri(key)}) cannot be read: "
                f"{str(error).splitlines()[0]}; restore it from a backup (a small JSON file: the table's name, id "
                "and folder)"
            ) from None

    def names(self) -> list[str]:
        prefix = CATALOG_DIR + "/"
        return sorted(
            info.key[len(prefix):-5]
            for info in self._store.list(prefix)
            if info.key.endswith(".json") and "/" not in info.key[len(prefix):]
        )

    def unregister(self, name: str) -> None:
        self._store.delete(self._key(name))

    def register_namespace(self, namespace: Namespace) -> None:
        try:
            self._conditional.create_if_absent(namespace_key(namespace.name), namespace.model_dump_json().encode())
        except PathExistsError:
            raise NamespaceAlreadyExistsError(f"namespace {namespace.name!r} exists already") from None

    def lookup_namespace(self, name: str) -> Namespace | None:
        key = namespace_key(name)
        try:
            return self._decode_namespace(name, key, self._store.get(key))
        except FileNotFoundError:
            return None

    def _decode_namespace(self, name: str, key: str, data: bytes) -> Namespace:
        try:
            return Namespace.model_validate_json(data)
        except (ValueError, ValidationError) as error:  # ValueError: UTF-8 errors
            raise CorruptLogError(
                f"the record of namespace {name!r} ({self._store.uri(key)}) cannot be read: "
                f"{str(error).splitlines()[0]}; restore it from a backup, or delete it to leave the namespace "
                "without comment and properties"
            ) from None

    def namespace_names(self) -> list[str]:
        prefix = NAMESPACES_DIR + "/"
        found = (namespace_of_key(info.key[len(prefix):]) for info in self._store.list(prefix))
        return sorted(name for name in found if name is not None)

    def update_namespace(self, name: str, change: NamespaceChange) -> Namespace | None:
        key = namespace_key(name)

        def read() -> tuple[Namespace, str] | None:
            # The etag first: the record read after it is at least as new, so a replace under
            # that etag can only overwrite the record we read.
            info = self._store.head(key)
            if info is None:
                return None
            try:
                data = self._store.get(key)
            except FileNotFoundError:
                return None  # deleted since
            return self._decode_namespace(name, key, data), info.etag

        def replace(etag: str, changed: Namespace) -> bool:
            try:
                self._conditional.replace_if_match(key, changed.model_dump_json().encode(), etag)
                return True
            except (PreconditionFailedError, PathExistsError, WriteOutcomeUnknownError):
                return False  # changed or deleted meanwhile, or maybe ours: the next read tells

        return swap_namespace(name, read, replace, change, self._retry, self._sleep)

    def unregister_namespace(self, name: str) -> None:
        self._store.delete(namespace_key(name))

"""The catalog's table registry: name -> (table id, location).

Registering is a conditional create, so two processes creating the same table race safely: one
wins, the other gets :class:`TableAlreadyExistsError`. Dropping a table removes its entry; a
table created again under the same name gets a new id, and with it an empty log.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from datetime import datetime

from pydantic import BaseModel, ConfigDict, ValidationError

from sleeper_spark.errors import CorruptLogError, PathExistsError, TableAlreadyExistsError
from sleeper_spark.layout import CATALOG_DIR, registry_key
from sleeper_spark.storage import ConditionalWriteStrategy, ObjectStore


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


class ObjectStoreTableRegistry(TableRegistry):
    """One small file per table at ``_catalog/<name>.json``."""

    def __init__(self, store: ObjectStore, conditional: ConditionalWriteStrategy) -> None:
        self._store = store
        self._conditional = conditional

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

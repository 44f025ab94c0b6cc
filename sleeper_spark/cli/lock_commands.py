"""``lock status`` and ``lock break``: the tables' maintenance locks.

Vacuum and log truncation hold their table's maintenance lock while they delete
(:mod:`sleeper_spark.maintenance.locking`). ``lock status`` lists who holds which; ``lock break
TABLE`` removes a table's lock files once its holder is certainly gone (a crashed job).
:func:`catalog_locks` returns the catalog's :class:`LockView`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Protocol

import typer
from pydantic import BaseModel

from sleeper_spark.cli.context import JsonFlag, open_catalog
from sleeper_spark.cli.output import emit_json, print_table, say
from sleeper_spark.commit import utc_now
from sleeper_spark.maintenance.locking import maintenance_lock_path
from sleeper_spark.storage.locks import break_lock as break_lock_files
from sleeper_spark.storage.locks import lock_status
from sleeper_spark.table import Catalog

NO_LOCKS = "no locks in use by this catalog"

lock_app = typer.Typer(help="Inspect or break the locks of the catalog's conditional writes.",
                       no_args_is_help=True)


class LockView(Protocol):
    """The locks one catalog holds, as a lock implementation exposes them."""

    def held(self) -> list[BaseModel]:
        """Every lock record held now (key, owner, generation, expiry, ...)."""

    def break_lock(self, key: str) -> bool:
        """Releases the lock on ``key`` whoever holds it; ``False`` if none was held."""


class LockRecord(BaseModel):
    table: str
    key: str
    kind: str
    holder: str
    acquired_at: datetime
    expires_at: datetime
    expired: bool


class MaintenanceLocks:
    """The maintenance locks of every table in a catalog."""

    def __init__(self, catalog: Catalog) -> None:
        self._catalog = catalog

    def held(self) -> list[BaseModel]:
        now = utc_now()
        records: list[BaseModel] = []
        for name in self._catalog.tables():
            table = self._catalog.table(name)
            for info in lock_status(table.store, maintenance_lock_path(table)):
                records.append(LockRecord(
                    table=name, key=info.key, kind=info.kind,
                    holder=f"{info.label or '?'} (pid {info.pid} on {info.host})",
                    acquired_at=info.acquired_at, expires_at=info.expires_at, expired=info.expired(now)))
        return records

    def break_lock(self, key: str) -> bool:
        table = self._catalog.table(key)
        # The operator named the table after checking that its holder is gone: break it even
        # if its lease has not run out.
        return bool(break_lock_files(table.store, maintenance_lock_path(table), force=True))


def catalog_locks(catalog: Catalog) -> LockView | None:
    """The catalog's maintenance locks."""
    return MaintenanceLocks(catalog)


@lock_app.command("status")
def status(json_: JsonFlag = False) -> None:
    """List the locks currently held."""
    view = catalog_locks(open_catalog())
    held = view.held() if view is not None else []
    if json_:
        emit_json({"locks": held, "message": NO_LOCKS if view is None else None})
    elif view is None:
        say(NO_LOCKS)
    elif not held:
        say("no locks are held")
    else:
        rows = [tuple(lock.model_dump(mode="json").values()) for lock in held]
        print_table("locks", tuple(type(held[0]).model_fields), rows)


@lock_app.command("break")
def break_lock(key: Annotated[str | None, typer.Argument(help="The table whose maintenance lock to break.")] = None,
               json_: JsonFlag = False) -> None:
    """Release a stale lock (only when its holder is certainly gone)."""
    view = catalog_locks(open_catalog())
    if view is None:
        if json_:
            emit_json({"broken": False, "message": NO_LOCKS})
        else:
            say(NO_LOCKS)
        return
    if key is None:
        raise typer.BadParameter("name the table whose lock to break (see 'lock status')")
    broken = view.break_lock(key)
    if json_:
        emit_json({"broken": broken, "key": key})
    else:
        say(f"maintenance lock of {key} broken" if broken else f"no lock held on {key}")

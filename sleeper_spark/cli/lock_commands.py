"""``lock status`` and ``lock break``: the locks a catalog's conditional writes rely on.

Only the ``dynamodb-lock`` strategy keeps locks, and no catalog can use it yet, so both commands
report that none are in use. :func:`catalog_locks` is where an implementation plugs in: it
returns the catalog's :class:`LockView`, and the commands list or break what it holds.
"""

from __future__ import annotations

from typing import Annotated, Protocol

import typer
from pydantic import BaseModel

from sleeper_spark.cli.context import JsonFlag, open_catalog
from sleeper_spark.cli.output import emit_json, print_table, say
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


def catalog_locks(catalog: Catalog) -> LockView | None:
    """The catalog's locks, or ``None`` when its conditional writes use none."""
    return None


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
def break_lock(key: Annotated[str | None, typer.Argument(help="The locked key.")] = None,
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
        raise typer.BadParameter("name the locked key to break (see 'lock status')")
    broken = view.break_lock(key)
    if json_:
        emit_json({"broken": broken, "key": key})
    else:
        say(f"lock on {key} broken" if broken else f"no lock held on {key}")

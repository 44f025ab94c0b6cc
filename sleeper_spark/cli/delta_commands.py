"""``delta sync``: a table's Delta log, for engines that read Delta (docs/interop.md)."""

from __future__ import annotations

from typing import Annotated

import typer

from sleeper_spark.cli.context import JsonFlag, TableName, open_catalog
from sleeper_spark.cli.output import emit_json, say

delta_app = typer.Typer(help="Publish tables as a Delta log for other engines.", no_args_is_help=True)


@delta_app.command("sync")
def sync(name: TableName, rebuild: Annotated[bool, typer.Option(
        "--rebuild", help="Publish every version still in the log afresh, replacing the Delta log published.")] = False,
         json_: JsonFlag = False) -> None:
    """Publish every version not yet in the table's Delta log (with --rebuild: all of them, afresh)."""
    table = open_catalog().table(name)
    version = table.publish_delta(rebuild=rebuild)
    if json_:
        emit_json({"table": name, "version": version, "location": table.location})
    else:
        say(f"{name}: published up to version {version}; Delta readers open {table.location}")

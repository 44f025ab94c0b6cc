"""``iceberg sync`` and ``iceberg show``: a table's Iceberg metadata, for other engines (docs/interop.md)."""

from __future__ import annotations

from typing import Annotated

import typer

from sleeper_spark.cli.context import JsonFlag, TableName, open_catalog
from sleeper_spark.cli.output import emit_json, say

iceberg_app = typer.Typer(help="Publish tables as Iceberg metadata for other engines.", no_args_is_help=True)


@iceberg_app.command("sync")
def sync(name: TableName, rebuild: Annotated[bool, typer.Option(
        "--rebuild", help="Publish every version still in the log afresh, ignoring what was published.")] = False,
         json_: JsonFlag = False) -> None:
    """Publish every version not yet published (with --rebuild: all of them) and commit the newest to
    the Iceberg catalog the catalog options name, if any."""
    table = open_catalog().table(name)
    version = table.publish_iceberg(rebuild=rebuild)
    location = table.iceberg_metadata(version)
    if json_:
        emit_json({"table": name, "version": version, "metadata": location})
    else:
        say(f"{name}: published up to version {version}; its Iceberg metadata is {location}")


@iceberg_app.command("show")
def show(name: TableName, version: Annotated[int | None, typer.Option(
        "--version", help="A version of the table (default: the newest).")] = None,
         json_: JsonFlag = False) -> None:
    """Print the URI of a version's Iceberg metadata JSON (published first if missing)."""
    location = open_catalog().table(name).iceberg_metadata(version)
    if json_:
        emit_json({"table": name, "version": version, "metadata": location})
    else:
        typer.echo(location)  # one line, unwrapped: scripts read it

"""Commands that look at the catalog and its tables: init, tables, create, describe, history, files, log."""

from __future__ import annotations

from itertools import islice
from typing import Annotated, Any

import typer

from sleeper_spark.cli.context import JsonFlag, TableName, open_catalog, parse_schema, split_names
from sleeper_spark.cli.output import cell, emit_json, human_bytes, print_fields, print_table, say
from sleeper_spark.errors import ConfigError
from sleeper_spark.models import FoldedTransaction, ReplaceFiles
from sleeper_spark.models.schema import describe as describe_type
from sleeper_spark.table import Table

Version = Annotated[int | None, typer.Option("--version", help="A past version (time travel); default: the latest.")]


def init(json_: JsonFlag = False) -> None:
    """Create what the catalog needs (DynamoDB tables, ...); safe to run again."""
    catalog = open_catalog()
    catalog.ensure_infrastructure()
    if json_:
        emit_json({"catalog": catalog.config.catalog, "warehouse": catalog.config.warehouse, "ready": True})
    else:
        say(f"catalog ready: {catalog.config.catalog} at {catalog.config.warehouse}")


def tables(json_: JsonFlag = False) -> None:
    """List the tables of the catalog."""
    names = open_catalog().tables()
    if json_:
        emit_json(names)
    elif not names:
        say("no tables")
    else:
        print_table(None, ("table",), [(name,) for name in names])


def create(
    name: TableName,
    schema: Annotated[str, typer.Option("--schema", help="Columns as 'name:type,...', e.g. 'day:string,n:int64'.",
                                        show_default=False)],
    partition_by: Annotated[list[str] | None, typer.Option(
        "--partition-by", "-p", help="Partition column(s); repeat or comma-separate.")] = None,
    event_time_column: Annotated[str | None, typer.Option("--event-time-column",
                                                          help="A timestamp column tracked per snapshot.")] = None,
    properties: Annotated[list[str] | None, typer.Option("--property", help="A table property key=value.")] = None,
    json_: JsonFlag = False,
) -> None:
    """Create a table."""
    catalog = open_catalog()
    table = catalog.create_table(name, parse_schema(schema), partition_by=split_names(partition_by),
                                 properties=_key_values(properties), event_time_column=event_time_column)
    _show_description(table, json_)


def describe(name: TableName, json_: JsonFlag = False) -> None:
    """Show a table's schema, layout and current version."""
    _show_description(open_catalog().table(name), json_)


def history(name: TableName, json_: JsonFlag = False) -> None:
    """List a table's snapshots, oldest first."""
    snapshots = open_catalog().table(name).history()
    if json_:
        emit_json(snapshots)
        return
    # A group commit's version shows how many writers' appends it holds (--json lists each).
    rows = [(s.version, s.committed_at, s.operation + (f" ({len(s.members)} writers)" if s.members else ""),
             f"+{s.rows_added} -{s.rows_removed}", f"+{s.files_added} -{s.files_removed}",
             human_bytes(s.bytes_added), s.metadata, s.operation_metrics or "") for s in snapshots]
    print_table(f"history of {name}", ("version", "committed at", "operation", "rows", "files", "bytes added",
                                       "metadata", "operation metrics"), rows, no_wrap=("committed at",))


def files(name: TableName, version: Version = None, json_: JsonFlag = False) -> None:
    """List the data files of a table version."""
    table = open_catalog().table(name)
    refs = sorted(table.files(version), key=lambda f: f.path)
    if json_:
        emit_json(refs)
        return
    total = sum(f.size_bytes for f in refs)
    print_table(f"files of {name}" + (f" at version {version}" if version is not None else ""),
                ("path", "partition", "rows", "size"),
                [(f.path, f.partition, f.row_count, human_bytes(f.size_bytes)) for f in refs],
                caption=f"{len(refs)} file(s), {human_bytes(total)}")


def show_log(
    name: TableName,
    start: Annotated[int | None, typer.Option(
        "--from", help="First transaction number; default: the oldest kept.")] = None,
    limit: Annotated[int, typer.Option("--limit", help="At most this many transactions.", min=1)] = 100,
    json_: JsonFlag = False,
) -> None:
    """Show raw transactions of a table's log, decoded."""
    head = open_catalog().table(name).head
    first = head.first_number() or 1
    if start is not None and start < 1:
        raise ConfigError(f"--from must be a transaction number >= 1, not {start}")
    after = max(start or first, first) - 1
    entries = [(entry.number, entry.spilled_body is not None, entry.transaction())
               for entry in islice(head.entries(after=after), limit)]
    if json_:
        emit_json([{"number": number, "spilled": spilled,
                    "transaction": txn.model_dump(mode="json", by_alias=True, exclude_none=True)}
                   for number, spilled, txn in entries])
        return
    print_table(f"log of {name}", ("number", "type", "operation", "committed at", "change", "metadata"),
                [(number, txn.type + (" (spilled)" if spilled else ""), txn.operation, txn.committed_at,
                  _change(txn), txn.metadata) for number, spilled, txn in entries], no_wrap=("committed at",))


def describe_table(table: Table) -> dict[str, Any]:
    """A table's description as plain data (the JSON of ``describe``)."""
    state = table.state()
    files_ = list(state.files.values())
    return {
        "name": table.name,
        "table_id": table.table_id,
        "location": table.location,
        "version": state.version,
        "schema": [{"name": f.name, "type": describe_type(f.type), "nullable": f.nullable}
                   for f in state.schema.fields],
        "partition_by": list(state.partition_by),
        "event_time_column": state.event_time_column,
        "properties": state.properties,
        "files": len(files_),
        "rows": sum(f.row_count for f in files_),
        "bytes": sum(f.size_bytes for f in files_),
        "latest_snapshot": state.latest.model_dump(mode="json") if state.latest else None,
        "state_snapshot": table.head.newest_state_snapshot(),
        "first_transaction": table.head.first_number(),
    }


def _show_description(table: Table, json_: bool) -> None:
    document = describe_table(table)
    if json_:
        emit_json(document)
        return
    latest = document["latest_snapshot"]
    print_fields(f"table {table.name}", [
        ("location", document["location"]), ("table id", document["table_id"]),
        ("version", document["version"]),
        ("latest snapshot", f"{latest['operation']} at {latest['committed_at']}" if latest else None),
        ("partition by", document["partition_by"]), ("event time column", document["event_time_column"]),
        ("properties", document["properties"]),
        ("files", f"{document['files']} ({human_bytes(document['bytes'])}, {document['rows']} rows)"),
        ("state snapshot", document["state_snapshot"]), ("oldest transaction", document["first_transaction"]),
    ])
    print_table("schema", ("column", "type", "nullable"),
                [(c["name"], c["type"], cell(c["nullable"])) for c in document["schema"]])


def _change(txn: FoldedTransaction) -> str:
    added = getattr(txn, "files", None) or getattr(txn, "added", None) or ()
    removed = txn.removed if isinstance(txn, ReplaceFiles) else ()
    rows = sum(f.row_count for f in added)
    return f"files +{len(added)} -{len(removed)}, rows +{rows}" if added or removed else "-"


def _key_values(values: list[str] | None) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for value in values or []:
        key, sep, item = value.partition("=")
        if not sep or not key:
            raise ConfigError(f"a property must be key=value, not {value!r}")
        pairs[key] = item
    return pairs

"""``sleeper-spark``: look after sleeper_spark tables from a shell.

    sleeper-spark [--warehouse URI | --catalog-options FILE] [--debug] COMMAND [--json]

Exit codes: 0 on success; 1 on a user error (bad arguments, any ``SleeperSparkError``, a
failed ``verify``) with a one-line message on stderr; 2 when the warehouse does not exist
(only ``init`` and ``create`` make one) or on an unexpected internal error; 130 when
interrupted. A traceback is printed only with ``--debug``. This module is the only place
that configures logging handlers.
"""

from __future__ import annotations

import logging
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from sleeper_spark.cli import maintenance_commands, table_commands
from sleeper_spark.cli.context import SETTINGS, WAREHOUSE_ENV
from sleeper_spark.cli.delta_commands import delta_app
from sleeper_spark.cli.iceberg_commands import iceberg_app
from sleeper_spark.cli.jars_commands import jars_app
from sleeper_spark.cli.lock_commands import lock_app
from sleeper_spark.errors import SleeperSparkError, WarehouseNotFoundError
from sleeper_spark.version import __version__

PROG = "sleeper-spark"

# Recent Typer versions ship their own copy of click, older ones use click itself: find the
# base class of argument errors through an exception Typer exports, whichever it is.
_ARGUMENT_ERROR: type[Exception] = next(
    c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"
)

app = typer.Typer(
    name=PROG,
    help="Inspect and maintain sleeper_spark tables.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        sys.stdout.write(f"{PROG} {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def root(
    warehouse: Annotated[str | None, typer.Option(
        "--warehouse", envvar=WAREHOUSE_ENV, help="A local path (embedded catalog) or s3://bucket/prefix.")] = None,
    catalog_options: Annotated[Path | None, typer.Option(
        "--catalog-options", help="A JSON file of flat catalog options, as Catalog.options() gives them "
                                "(every option: docs/usage.md#options).")] = None,
    debug: Annotated[bool, typer.Option("--debug", help="Log everything and show tracebacks.")] = False,
    version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """Inspect and maintain sleeper_spark tables."""
    SETTINGS.warehouse = warehouse
    SETTINGS.catalog_options = catalog_options
    SETTINGS.debug = debug
    configure_logging(debug)


app.command("init")(table_commands.init)
app.command("tables")(table_commands.tables)
app.command("create")(table_commands.create)
app.command("describe")(table_commands.describe)
app.command("history")(table_commands.history)
app.command("files")(table_commands.files)
app.command("log")(table_commands.show_log)
app.command("snapshot")(maintenance_commands.snapshot)
app.command("compact")(maintenance_commands.compact)
app.command("vacuum")(maintenance_commands.vacuum)
app.command("verify")(maintenance_commands.verify)
app.command("truncate")(maintenance_commands.truncate)
app.command("repair")(maintenance_commands.repair)
app.add_typer(lock_app, name="lock")
app.add_typer(jars_app, name="jars")
app.add_typer(iceberg_app, name="iceberg")
app.add_typer(delta_app, name="delta")


def configure_logging(debug: bool) -> None:
    """Warnings (e.g. commit retries) on stderr; everything with ``--debug``."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root_logger = logging.getLogger()
    root_logger.handlers[:] = [handler]
    root_logger.setLevel(logging.DEBUG if debug else logging.WARNING)
    if debug:
        # The AWS SDK's own debug logging is enormous and may include request details.
        for noisy in ("botocore", "boto3", "urllib3", "s3transfer"):
            logging.getLogger(noisy).setLevel(logging.INFO)


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line; returns the exit code."""
    command = typer.main.get_command(app)
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        result = command.main(args=args, prog_name=PROG, standalone_mode=False)
    except _ARGUMENT_ERROR as error:  # bad arguments, unknown commands and options
        if type(error).__name__ == "NoArgsIsHelpError":
            return _fail("no command given; see the help above")  # the help was printed already
        return _fail(error.format_message())  # type: ignore[attr-defined]
    except typer.Abort:
        return _fail("aborted")
    except WarehouseNotFoundError as error:
        # Its own code: a script can tell "no such warehouse" (often a typo) from a failed command.
        return _fail(str(error), code=2)
    except SleeperSparkError as error:
        return _fail(str(error))
    except KeyboardInterrupt:
        return _fail("interrupted", code=130)
    except OSError as error:  # the machine's trouble (permissions, disk full), not ours
        return _fail(f"{error.strerror or error} ({getattr(error, 'filename', None) or type(error).__name__})")
    except Exception as error:
        return _fail(f"unexpected {type(error).__name__}: {error} (rerun with --debug for the traceback)", code=2)
    return result if isinstance(result, int) else 0


def _fail(message: str, code: int = 1) -> int:
    if SETTINGS.debug and sys.exc_info()[0] is not None:
        traceback.print_exc(file=sys.stderr)
    one_line = " ".join(message.split())
    sys.stderr.write(f"{PROG}: error: {one_line}\n")
    return code


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

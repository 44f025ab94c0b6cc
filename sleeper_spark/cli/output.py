"""How commands print: rich tables for people, one JSON document for programs, bars on stderr.

Everything meant for a program goes to stdout; progress bars and errors go to stderr, so
``sleeper-spark --json ... | jq`` always reads one clean document.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Collection, Iterable, Sequence
from datetime import datetime, timezone
from types import TracebackType
from typing import Any

from pydantic import BaseModel
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

stdout = Console(highlight=False)
stderr = Console(stderr=True, highlight=False)


def emit_json(document: Any) -> None:
    """Writes one JSON document to stdout (pydantic models and datetimes included)."""
    sys.stdout.write(json.dumps(_plain(document), indent=2, default=str) + "\n")


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def print_table(title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]],
                caption: str | None = None, show_header: bool = True, no_wrap: Collection[str] = ()) -> None:
    """A rich table on stdout; cells go through :func:`cell`.

    Columns named in ``no_wrap`` (timestamps) keep each value on one line on a narrow terminal;
    the other columns fold instead.
    """
    table = Table(title=title, caption=caption, title_justify="left", caption_justify="left",
                  show_header=show_header)
    for column in columns:
        table.add_column(column, overflow="fold", no_wrap=column in no_wrap)
    for row in rows:
        table.add_row(*(cell(value) for value in row))
    stdout.print(table)


def print_fields(title: str, fields: Iterable[tuple[str, Any]]) -> None:
    """A two-column key/value table."""
    print_table(title, ("", ""), [(f"[bold]{key}[/bold]", value) for key, value in fields], show_header=False)


def say(message: str) -> None:
    """One plain line on stdout (no rich markup, so paths with brackets print as they are)."""
    stdout.print(message, markup=False)


def warn(message: str) -> None:
    """One line on stderr, never wrapped, so that it reads whole in a log."""
    sys.stderr.write(f"sleeper-spark: warning: {message}\n")
    sys.stderr.flush()


def cell(value: Any) -> str:
    """How a value reads in a table cell: ``-`` for none, ``k=v`` pairs for mappings."""
    if value is None:
        return "-"
    if isinstance(value, datetime):
        return timestamp(value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items()) or "-"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value) or "-"
    return str(value)


def timestamp(value: datetime) -> str:
    """``2024-05-01 12:00:00Z``: short enough for a table cell at 80 columns, and always UTC."""
    if value.tzinfo is None:
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return value.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")


def human_bytes(size: int) -> str:
    """``1536`` as ``1.5 KiB``."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


class ProgressBars:
    """A :data:`~sleeper_spark.maintenance.Progress` callback drawing one bar per phase.

    Drawn only on an interactive terminal and never with ``--json``: a bar redrawn into a log
    file or a pipe is noise.
    """

    def __init__(self, enabled: bool) -> None:
        self._drawn = enabled and stderr.is_terminal
        self._progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=stderr, transient=True, disable=not self._drawn,
        )
        self._tasks: dict[str, TaskID] = {}

    # Never started unless drawn: before rich 15, stopping even a disabled display wrote a newline.
    def __enter__(self) -> ProgressBars:
        if self._drawn:
            self._progress.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._drawn:
            self._progress.stop()

    def __call__(self, phase: str, done: int, total: int) -> None:
        task = self._tasks.get(phase)
        if task is None:
            # A job moves through its phases in order: a new one means the earlier ones are done.
            for earlier in self._tasks.values():
                state = self._progress.tasks[earlier]
                self._progress.update(earlier, total=state.total or 1, completed=state.total or 1)
            task = self._tasks[phase] = self._progress.add_task(phase, total=total or None)
        self._progress.update(task, completed=done, total=total or None)

    def advance(self, phase: str, total: int) -> Callable[[int], None]:
        """A callback counting single steps, for APIs that report ``progress(1)`` per item."""
        done = 0

        def step(count: int) -> None:
            nonlocal done
            done += count
            self(phase, done, total)

        return step

"""Progress reporting from long maintenance jobs, without tying them to a terminal.

A job calls ``progress(phase, done, total)`` as it advances; ``total`` is 0 while it is not
known yet. The command line turns the calls into progress bars; library callers may log them
or pass nothing.
"""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[str, int, int], None]


def no_progress(phase: str, done: int, total: int) -> None:
    """The default: report nothing."""

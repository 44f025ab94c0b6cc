"""Every version of a table, one state each, for publishers that write one file set a version.

The Iceberg and Delta publishers (``sleeper_spark.iceberg``, ``sleeper_spark.delta``) publish each
version after the last they published, and start from the oldest version the log still
rebuilds when there is nothing to continue from.
"""

from __future__ import annotations

from sleeper_spark.commit.head import TableHead
from sleeper_spark.errors import SnapshotNotFoundError
from sleeper_spark.state import TableState, fold


def states_after(head: TableHead, last: TableState, target: TableState) -> list[TableState] | None:
    """The states of versions ``last.version + 1 .. target.version``, folded from the log; None if
    the log no longer holds them all (it was truncated past ``last``)."""
    if target.version <= last.version:
        return []
    if target.version == last.version + 1:
        return [target]
    states, state = [], last
    for entry in head.entries(after=last.version, up_to=target.version):
        if entry.number != state.version + 1:
            return None
        state = fold([(entry.number, entry.transaction())], state)
        states.append(state)
    return states if states and states[-1].version == target.version else None


def oldest_state(head: TableHead, newest: TableState, first: int) -> TableState | None:
    """The state of the oldest data version at or after ``first - 1`` the log still rebuilds (a
    truncated log starts just after a state snapshot, which rebuilds the version before it)."""
    for snapshot in newest.history:
        if snapshot.version < first - 1:
            continue
        try:
            return head.state_at(snapshot.version)
        except SnapshotNotFoundError:
            continue
    return None

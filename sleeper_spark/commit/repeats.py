"""Idempotent writes: a write tagged ``(app_id, app_version)`` that was committed already."""

from __future__ import annotations

from sleeper_spark.models import Snapshot, Transaction
from sleeper_spark.state import TableState


def repeat_of(txn: Transaction, state: TableState) -> Snapshot | None:
    """For a transaction: the snapshot an earlier commit of the same (app_id, app_version) made."""
    return idempotent_repeat(state, txn.app_id, txn.app_version)


def idempotent_repeat(state: TableState, app_id: str | None, app_version: int | None) -> Snapshot | None:
    """For a write tagged (app_id, app_version) that was committed already: its snapshot."""
    if app_id is None or app_version is None:
        return None
    if app_id not in state.app_versions or state.app_versions[app_id] < app_version:
        return None
    earlier = state.snapshot_for_app(app_id, app_version)
    if earlier is not None:
        return earlier
    # A newer version of this app committed: this one is superseded. Report the newest.
    return state.history.last_with_app(app_id) or state.latest

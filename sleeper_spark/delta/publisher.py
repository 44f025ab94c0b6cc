"""Publishing a table's versions as a Delta log beside it, after its commits.

``<table>/_delta_log/`` holds a commit file ``<v>.json`` for every published version ``v`` (see
:mod:`sleeper_spark.delta.actions` for what each holds), a Parquet checkpoint every
:data:`~sleeper_spark.delta.checkpoint.CHECKPOINT_INTERVAL` versions, and ``_last_checkpoint``
naming the newest. A version's commit file is written whole (a store's put replaces an object
atomically) and only after the one before it, its checkpoint after it, and ``_last_checkpoint``
after that, so a reader never finds a version in part.

A table whose log still holds version 1 is published from Delta version 0; one whose log was
truncated (or vacuum expired the versions) starts with a checkpoint of the oldest version the
log rebuilds. Publishing follows the commit and never fails it: a version not published is
published by the next one's publishing or ``sleeper-spark delta sync``, which continue from the
newest version found in ``_delta_log``. Every file is a function of the log alone, so processes
publishing one version at once write the same bytes.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import threading
from dataclasses import dataclass

from sleeper_spark.commit import TableHead
from sleeper_spark.commit.replay import oldest_state, states_after
from sleeper_spark.delta.actions import SLEEPER_TABLE_ID, created, version, version_lines
from sleeper_spark.delta.checkpoint import (
    CHECKPOINT_INTERVAL,
    Checkpoint,
    checkpoint_bytes,
    checkpoint_of,
    last_checkpoint_json,
    read_checkpoint,
)
from sleeper_spark.errors import DeltaPublishError, SleeperSparkError, SnapshotNotFoundError
from sleeper_spark.layout import DELTA_LAST_CHECKPOINT, DELTA_LOG_DIR, delta_checkpoint_key, delta_commit_key
from sleeper_spark.state import TableState
from sleeper_spark.storage import ObjectStore, join_key

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DeltaTarget:
    """Where a table's Delta log goes, and what its first versions say."""

    name: str
    table_id: str
    store: ObjectStore
    root: str
    created_at: dt.datetime


class DeltaPublisher:
    """Publishes one table's versions to its Delta log, in order, catching up on any it missed. Thread-safe."""

    def __init__(self, target: DeltaTarget, head: TableHead) -> None:
        self.target = target
        self._head = head
        self._lock = threading.Lock()
        self._last: TableState | None = None  # the newest version this publisher published or continued from
        self._owned = False  # whether the _delta_log found here was checked to be this table's
        self._checkpoint_made: Checkpoint | None = None  # the newest this publisher wrote: the next continues it

    def publish(self, state: TableState | None = None) -> int:
        """Publishes every version up to ``state`` (default: the newest); returns the newest published."""
        with self._lock:
            target = state if state is not None else self._head.state()
            last = self._last
            if last is None or target.version > last.version + 1:
                newest = self.newest_published()
                if newest == 0:  # version 1, the creation, is all that is missing from the start
                    last = self._head.state_at(1)
                    self._put(delta_commit_key(1), version_lines(version(last, last, self.target.created_at)))
                elif newest > 0 and (last is None or newest > last.version):
                    last = self._state_at(newest)
                    self._repair_checkpoint(newest)
            if last is None:
                last = self._publish_base(target)
            if last.version < target.version:
                last = self._catch_up(last, target)
            self._last = last
            return last.version

    def rebuild(self) -> int:
        """Publishes every version still in the log afresh: deletes the Delta log this table
        published (never another writer's) and writes it again."""
        with self._lock:
            self._check_owner()
            keys = [info.key for info in self.target.store.list(self._key(DELTA_LOG_DIR) + "/")]
            self.target.store.delete_many(keys)
            self._last = None
            self._checkpoint_made = None
        return self.publish()

    def newest_published(self) -> int:
        """The newest version in the Delta log; -1 if there is none. Refuses a log another writer made."""
        self._check_owner()
        newest = self._last_checkpoint()
        # Commit files past the checkpoint: at most an interval of them, unless checkpoints failed.
        while self.target.store.head(self._key(delta_commit_key(newest + 1))) is not None:
            newest += 1
        return newest

    def expire(self, before: int) -> list[str]:
        """Drops the Delta versions before ``before`` (their files may be gone): writes a checkpoint
        of version ``before`` and deletes the commit files and checkpoints of older versions.
        Returns the deleted keys (relative to the table root)."""
        self.publish()
        with self._lock:
            try:
                state = self._head.state_at(before)
            except SnapshotNotFoundError:
                return []
            self._checkpoint(state, force=True)
            prefix = self._key(DELTA_LOG_DIR) + "/"
            doomed = [info.key for info in self.target.store.list(prefix)
                      if (number := _version_of(info.key[len(prefix):])) is not None and number < before]
            self.target.store.delete_many(doomed)
            root = self.target.root.rstrip("/") + "/"
            return [key.removeprefix(root) for key in doomed]

    # -- steps ---------------------------------------------------------------------------

    def _publish_base(self, newest: TableState) -> TableState:
        first = self._head.first_number() or 1
        if first <= 1:
            base = self._head.state_at(1)
            self._put(delta_commit_key(0), version_lines(created(base, self.target.created_at)))
            self._put(delta_commit_key(1), version_lines(version(base, base, self.target.created_at)))
            return base
        base = self._base_state(newest, first)
        self._checkpoint(base, force=True)
        logger.info("table %s: the log starts after version 1; the Delta log starts with a checkpoint of version %d",
                    self.target.name, base.version)
        return base

    def _catch_up(self, last: TableState, target: TableState) -> TableState:
        states = states_after(self._head, last, target)
        if states is None:
            # Log truncation cut versions not yet published: start again from what the log holds.
            logger.info("table %s: versions after %d were truncated from the log before they were published to "
                        "Delta; publishing from the oldest version it holds", self.target.name, last.version)
            last = self._base_state(target, self._head.first_number() or 1)
            self._checkpoint(last, force=True)
            states = states_after(self._head, last, target) or []
        for state in states:
            self._put(delta_commit_key(state.version), version_lines(version(last, state, self.target.created_at)))
            self._checkpoint(state)
            last = state
        return last

    def _checkpoint(self, state: TableState, force: bool = False) -> None:
        if not force and state.version % CHECKPOINT_INTERVAL:
            return
        made = checkpoint_of(state, self.target.created_at, self._checkpoint_made or self._stored_checkpoint())
        self._put(delta_checkpoint_key(state.version), checkpoint_bytes(made))
        self._checkpoint_made = made
        if state.version > self._last_checkpoint():
            self._put(DELTA_LAST_CHECKPOINT, last_checkpoint_json(state.version, made.size))

    def _stored_checkpoint(self) -> Checkpoint | None:
        """The checkpoint ``_last_checkpoint`` names, to continue from (None if it does not read): a
        process that publishes one version in ten, as a job writing once does, then builds rows
        for the files added since rather than for every file."""
        newest = self._last_checkpoint()
        if newest < 0:
            return None
        try:
            return read_checkpoint(self.target.store.get(self._key(delta_checkpoint_key(newest))))
        except (FileNotFoundError, SleeperSparkError, OSError, ValueError) as error:
            logger.info("table %s: Delta checkpoint %d does not read (%s); building one from the table state",
                        self.target.name, newest, error)
            return None

    def _repair_checkpoint(self, newest: int) -> None:
        """Writes the checkpoint a publisher that stopped after a version's commit file (a failed
        or killed one) left out, so that opening the newest version stays a few files."""
        due = newest - newest % CHECKPOINT_INTERVAL
        if due > 0 and due > self._last_checkpoint() and (state := self._state_at(due)) is not None:
            self._checkpoint(state, force=True)

    def _last_checkpoint(self) -> int:
        """The version ``_last_checkpoint`` names; -1 if there is none (or it does not read)."""
        try:
            return int(json.loads(self.target.store.get(self._key(DELTA_LAST_CHECKPOINT)))["version"])
        except (FileNotFoundError, SleeperSparkError, ValueError, KeyError, TypeError):
            return -1

    def _base_state(self, newest: TableState, first: int) -> TableState:
        base = oldest_state(self._head, newest, first)
        if base is None:
            raise DeltaPublishError(f"table {self.target.name!r} has no version to publish yet; write to it first")
        return base

    def _state_at(self, number: int) -> TableState | None:
        try:
            return self._head.state_at(number)
        except SnapshotNotFoundError:
            return None  # truncated from the log since: the catch-up starts again from what it holds

    def _check_owner(self) -> None:
        """Refuses a ``_delta_log`` this table did not write: the first file a publisher writes there
        (version 0, or the checkpoint a truncated log starts with) must name the table. What is in
        the folder is listed once; a publisher of another process may be writing to it meanwhile."""
        if self._owned:
            return
        prefix = self._key(DELTA_LOG_DIR) + "/"
        names = {info.key[len(prefix):] for info in self.target.store.list(prefix)}
        if not names:
            return  # nothing published yet
        checkpoints = sorted(name for name in names if name.endswith(".checkpoint.parquet")
                             and _version_of(name) is not None)
        first = delta_commit_key(0).rsplit("/", 1)[1]
        if first not in names and not checkpoints:
            raise self._foreign("it has no version 0 and no checkpoint")
        try:
            if first in names:
                actions = [json.loads(line) for line in self.target.store.get(prefix + first).splitlines() if line]
            else:
                actions = read_checkpoint(self.target.store.get(prefix + checkpoints[0])).head
        except (FileNotFoundError, SleeperSparkError, ValueError, KeyError, TypeError) as error:
            raise self._foreign(f"its first version does not read: {error}") from None
        ids = [a["metaData"].get("configuration", {}).get(SLEEPER_TABLE_ID) for a in actions if "metaData" in a]
        if ids != [self.target.table_id]:
            raise self._foreign(f"its metadata names table {ids[0] if ids else None!r}")
        self._owned = True

    def _foreign(self, why: str) -> DeltaPublishError:
        return DeltaPublishError(
            f"table {self.target.name!r}: {self._key(DELTA_LOG_DIR)} was not written for this table ({why}); nothing "
            "was published or overwritten. Move it away, or turn Delta publishing off (delta.publish=false)")

    def _put(self, key: str, data: bytes) -> None:
        self.target.store.put(self._key(key), data)

    def _key(self, key: str) -> str:
        return join_key(self.target.root, key)


def _version_of(name: str) -> int | None:
    """The version of a commit file or checkpoint from its name in ``_delta_log``, else None."""
    stem = name.split(".", 1)[0]
    return int(stem) if "/" not in name and len(stem) == 20 and stem.isdigit() else None

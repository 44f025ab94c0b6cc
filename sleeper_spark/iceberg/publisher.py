"""Publishing a table's versions as Iceberg metadata beside it, after its commits.

``<table>/metadata/`` holds, for every published version ``v``, ``v<v>.metadata.json`` (its
Iceberg table metadata, current snapshot ``v``), ``snap-<v>.avro`` (its manifest list), the
manifests it wrote, and ``version-hint.text`` naming the newest version, for readers that take a
table path (DuckDB, pyiceberg's StaticTable, Hadoop tables). The files of a version are written
before its metadata JSON, and the JSON before the hint, so whatever a reader finds is complete.
A catch-up of more than :data:`EVERY_JSON_UP_TO` versions writes the metadata JSON of its last
only; :meth:`IcebergPublisher.metadata_location` derives another's from the newest when asked.

Publishing follows the commit and never fails it: a version that could not be published is
published by the next commit's publishing (which catches up from the newest published version)
or by ``sleeper-spark iceberg sync``. Publishing is deterministic (snapshot ids are versions,
file names are fixed), so two processes publishing the same version write the same metadata.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime

from pyiceberg.manifest import DataFile, ManifestFile
from pyiceberg.table.metadata import TableMetadataUtil, TableMetadataV2

from sleeper_spark.commit import TableHead
from sleeper_spark.commit.replay import oldest_state, states_after
from sleeper_spark.errors import IcebergPublishError, NoSnapshotsError, SleeperSparkError, SnapshotNotFoundError
from sleeper_spark.iceberg.avro_files import read_data_files, read_manifests
from sleeper_spark.iceberg.expiry import unneeded_files, without_snapshots_before
from sleeper_spark.iceberg.metadata import metadata_at, metadata_json
from sleeper_spark.iceberg.schema import field_ids
from sleeper_spark.iceberg.versions import (
    BASE_VERSION,
    EXPIRED_BEFORE,
    Files,
    Published,
    first_version,
    group_of,
    next_version,
)
from sleeper_spark.layout import ICEBERG_DIR, ICEBERG_HINT, iceberg_metadata_key
from sleeper_spark.state import TableState
from sleeper_spark.storage import ObjectStore, join_key

logger = logging.getLogger(__name__)

# A catch-up of more versions than this writes the metadata JSON of its last version only (each
# JSON lists every snapshot, so writing them all costs the square of the versions); the
# metadata JSON of another is derived from the newest when asked for (``metadata_location``).
EVERY_JSON_UP_TO = 16


@dataclass(frozen=True)
class Target:
    """Where a table's metadata goes: its store and folder, and its URI for the paths inside."""

    name: str
    table_id: str
    store: ObjectStore
    root: str
    location: str


class IcebergPublisher:
    """Publishes one table's versions, in order, catching up on any it missed. Thread-safe."""

    def __init__(self, target: Target, head: TableHead) -> None:
        self.target = target
        self._head = head
        self._lock = threading.Lock()
        self._last: Published | None = None
        # The newest version the hint named when last looked at (or this publisher wrote to it).
        self._hinted = 0

    def publish(self, state: TableState | None = None) -> int:
        """Publishes every version up to ``state`` (default: the newest); returns the newest published."""
        with self._lock:
            target = state if state is not None else self._head.state()
            last = self._last
            self._hinted = self.newest_published()
            if last is None or target.version > last.version + 1:
                # Other processes may have published the versions since: continue from theirs.
                published = self._load_published(self._hinted) if last is None or self._hinted > last.version else None
                last = published if published is not None else last
            if last is not None and last.version >= target.version:
                self._last = last
                return last.version
            self._last = self._catch_up(last if last is not None else self._publish_base(target), target)
            return self._last.version

    def rebuild(self) -> int:
        """Publishes every version still in the log afresh, ignoring what was published before."""
        with self._lock:
            current = self._head.state()
            self._hinted = self.newest_published()
            expired_before = self._expired_before()
            self._last = self._catch_up(self._publish_base(current, expired_before), current)
            return self._last.version

    @property
    def last(self) -> Published | None:
        """The newest version this publisher published or continued from."""
        return self._last

    def metadata_location(self, version: int | None = None) -> str:
        """The URI of the metadata JSON of ``version`` (default: the newest), published first if missing."""
        state = self._head.state() if version is None else self._head.state_at(version)
        if state.latest is None:
            raise NoSnapshotsError(f"table {self.target.name!r} has no data snapshot yet; write to it first")
        if version is None and state.latest.version != state.version:
            state = self._head.state_at(state.latest.version)  # the newest entry made no snapshot (voided)
        if state.latest is None or state.latest.version != state.version:
            raise SnapshotNotFoundError(f"table {self.target.name!r} has no snapshot with version {state.version}")
        key = join_key(self.target.root, iceberg_metadata_key(state.version))
        if self.target.store.head(key) is None:
            self.publish(self._head.state() if version is None or version > self.newest_published() else state)
            if self.target.store.head(key) is None and not self._derive(state.version):
                raise SnapshotNotFoundError(
                    f"table {self.target.name!r}: version {state.version} has no Iceberg metadata: it is older than "
                    "the first version published, or vacuum expired it. `sleeper-spark iceberg sync --rebuild "
                    f"{self.target.name}` publishes every version still in the log and not expired")
        return f"{self.target.location}/{iceberg_metadata_key(state.version)}"

    def _derive(self, version: int) -> bool:
        """Stores the metadata JSON of ``version`` (published without one, by a long catch-up)
        derived from the newest published metadata; False if that has no snapshot ``version``."""
        with self._lock:
            newest = self._last if self._last is not None and self._last.has_json else self._load_published()
            derived = metadata_at(newest.metadata, version) if newest is not None else None
            if derived is None:
                return False
            self.target.store.put(join_key(self.target.root, iceberg_metadata_key(version)), metadata_json(derived))
            return True

    def newest_published(self) -> int:
        """The version ``version-hint.text`` names; 0 if nothing was published."""
        try:
            return int(self.target.store.get(join_key(self.target.root, ICEBERG_HINT)).decode().strip())
        except (FileNotFoundError, SleeperSparkError, ValueError):
            return 0

    def expire(self, before: int, cutoff: datetime | None) -> list[str]:
        """Expires the snapshots of versions before ``before`` from the newest published metadata;
        with a ``cutoff``, also deletes the metadata files only they needed and older than it.
        Returns the deleted keys (relative to the table root)."""
        with self._lock:
            last = self._last if self._last is not None else self._load_published()
            if last is None:
                return []
            expired = without_snapshots_before(last, before)
            if expired is not None:
                key = iceberg_metadata_key(expired.version)
                self.target.store.put(join_key(self.target.root, key), metadata_json(expired.metadata))
                self._last = last = expired
            if cutoff is None:
                return []
            oldest = last.metadata.snapshots[0]
            oldest_list = read_manifests(oldest.manifest_list, self.target.store.get(self._key(oldest.manifest_list)))
            prefix = join_key(self.target.root, ICEBERG_DIR) + "/"
            listing = [replace(info, key=info.key[len(self.target.root.rstrip("/")) + 1:])
                       for info in self.target.store.list(prefix)]
            doomed = unneeded_files(listing, oldest.snapshot_id, oldest_list, self.target.location, cutoff)
            if doomed:
                self.target.store.delete_many([join_key(self.target.root, key) for key in doomed])
            return doomed

    # -- steps ---------------------------------------------------------------------------

    def _catch_up(self, last: Published, target: TableState) -> Published:
        states = states_after(self._head, last.state, target)
        if states is None:
            # Log truncation cut versions this publisher had yet to publish (they are expired with
            # the cut): publish afresh from the oldest version the log still rebuilds.
            logger.info("table %s: versions after %d were truncated from the log before they were published; "
                        "publishing afresh from the oldest version it holds", self.target.name, last.version)
            last = self._publish_base(target, self._expired_before())
            states = states_after(self._head, last.state, target) or []
        # A version an aborted multi-table transaction's entry took makes no snapshot: Iceberg skips it.
        states = [state for state in states if state.latest is not None and state.latest.version == state.version]
        for i, state in enumerate(states):
            files = Files()
            with_json = len(states) <= EVERY_JSON_UP_TO or i == len(states) - 1
            last = self._write(files, next_version(last, state, self.target.table_id, files, self._data_files,
                                                   with_json))
        return last

    def _publish_base(self, newest: TableState, expired_before: int = 0) -> Published:
        files = Files()
        base = self._base_state(newest, expired_before)
        return self._write(files, first_version(base, self.target.location, self.target.table_id, files,
                                                expired_before))

    def _expired_before(self) -> int:
        """The versions vacuum expired, by the newest published metadata: a rebuild leaves them out."""
        try:
            key = join_key(self.target.root, iceberg_metadata_key(self.newest_published()))
            properties = json.loads(self.target.store.get(key)).get("properties", {})
            return int(properties.get(EXPIRED_BEFORE, "0"))
        except (FileNotFoundError, SleeperSparkError, ValueError):
            return 0

    def _write(self, files: Files, published: Published) -> Published:
        for key, data in files.objects.items():
            self.target.store.put(join_key(self.target.root, key), data)
        # The hint names a version whose metadata JSON is there, and never an older one than it did
        # when this publish began (another process may be publishing too).
        if published.has_json and published.version > self._hinted:
            self.target.store.put(join_key(self.target.root, ICEBERG_HINT), str(published.version).encode())
            self._hinted = published.version
        logger.debug("table %s: published version %d as Iceberg metadata (%d files)", self.target.name,
                     published.version, len(files.objects))
        return published

    def _key(self, uri: str) -> str:
        """The store key of a file the metadata names by its URI."""
        return join_key(self.target.root, uri.removeprefix(self.target.location + "/"))

    def _data_files(self, manifest: ManifestFile) -> Mapping[str, DataFile]:
        """The live data files of a stored manifest; none when it cannot be read (they are built again)."""
        try:
            return read_data_files(manifest.manifest_path, self.target.store.get(self._key(manifest.manifest_path)))
        except (FileNotFoundError, SleeperSparkError, ValueError, EOFError) as error:
            logger.debug("table %s: cannot read %s back (%s); building its entries again", self.target.name,
                         manifest.manifest_path, error)
            return {}

    def _base_state(self, newest: TableState, expired_before: int = 0) -> TableState:
        """The oldest version the log can still rebuild and not expired: the first published one when
        starting afresh."""
        first = max(self._head.first_number() or 1, expired_before + 1)
        base = oldest_state(self._head, newest, first)
        if base is None:
            raise IcebergPublishError(f"table {self.target.name!r} has no version to publish yet; write to it first")
        return base

    def _load_published(self, hinted: int | None = None) -> Published | None:
        """What an earlier process published last (the version the hint names, or ``hinted`` when
        the caller just read it), to continue from; None to start afresh."""
        version = self.newest_published() if hinted is None else hinted
        if version == 0:
            return None
        try:
            data = self.target.store.get(join_key(self.target.root, iceberg_metadata_key(version)))
            metadata = TableMetadataUtil.parse_raw(data.decode())
            assert isinstance(metadata, TableMetadataV2)
            state = self._head.state_at(version)
            snapshot = metadata.current_snapshot()
            assert snapshot is not None
            manifests = read_manifests(snapshot.manifest_list, self.target.store.get(self._key(snapshot.manifest_list)))
            base = int(metadata.properties[BASE_VERSION])
            return Published(state, metadata, field_ids(metadata.schema()), {group_of(m): m for m in manifests},
                             base, self.target.location)
        except (FileNotFoundError, SleeperSparkError, ValueError, KeyError, AssertionError) as error:
            logger.warning("table %s: cannot continue from the published Iceberg version %d (%s); publishing afresh",
                           self.target.name, version, error)
            return None


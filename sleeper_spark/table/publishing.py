"""A table's Iceberg metadata and Delta log: published after its commits when turned on, and on request.

Each format is off unless the table's property (``iceberg.publish``, ``delta.publish``) or the
catalog's setting (``iceberg_publish``, ``delta_publish``) turns it on: it writes a few files per
commit beside the table, which a table nobody reads from other engines does not need.
``Table.iceberg_metadata()``, ``Table.publish_iceberg()``, ``Table.delta_location()`` and
``Table.publish_delta()`` publish on request whatever the setting.

After a commit, publishing runs behind it on a thread of the table's own
(:class:`~sleeper_spark.table.behind_commits.BehindCommits`), so that a commit costs what it cost
before: the thread publishes the newest committed state in each format that is on (catching up
on every version since the last it published), then ends once idle. It is not a daemon thread:
at interpreter exit Python waits for it to finish what was committed, and it holds nothing else
up. :meth:`TablePublishing.flush` waits for it. A format that fails logs a warning and leaves
the commit and the other format alone.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime
from typing import TYPE_CHECKING

from sleeper_spark.errors import ConfigError, IcebergPublishError
from sleeper_spark.layout import DELTA_LOG_DIR, ICEBERG_HINT
from sleeper_spark.state import TableState
from sleeper_spark.storage import join_key
from sleeper_spark.table.behind_commits import BehindCommits

if TYPE_CHECKING:
    from sleeper_spark.delta.publisher import DeltaPublisher
    from sleeper_spark.iceberg.catalog_commit import CatalogCommitter
    from sleeper_spark.iceberg.publisher import IcebergPublisher
    from sleeper_spark.table.table import Table

logger = logging.getLogger(__name__)

# The table properties that turn publishing on for one table ("true"/"false"); the catalog's
# ``iceberg_publish`` / ``delta_publish`` setting turns it on for every table that does not say.
PUBLISH_PROPERTY = "iceberg.publish"
DELTA_PUBLISH_PROPERTY = "delta.publish"


def publishing_enabled(state: TableState, catalog_default: bool, prop: str = PUBLISH_PROPERTY) -> bool:
    value = state.properties.get(prop)
    return catalog_default if value is None else value.strip().lower() == "true"


class TablePublishing:
    """The thread that publishes one table's commits in the formats turned on for it."""

    def __init__(self, table: Table) -> None:
        self._table = table
        self.iceberg = IcebergPublishing(table)
        self.delta = DeltaPublishing(table)
        self._behind = BehindCommits(f"sleeper-publish-{table.name}", self._publish)

    def after_commit(self, state: TableState) -> None:
        """Hands ``state`` to the publishing thread if a format is on; returns at once."""
        if self.iceberg.enabled(state) or self.delta.enabled(state):
            self._behind.hand(state)

    def flush(self, timeout: float | None = None) -> bool:
        """Waits until every commit handed to the publishing thread was published (or failed, which
        it logs); False if ``timeout`` seconds passed first."""
        return self._behind.flush(timeout)

    def _publish(self, state: TableState, since: int) -> None:
        # Each format catches up on every version since the last it published itself.
        for format_ in (self.iceberg, self.delta):
            if format_.enabled(state):
                self._publish_one(format_, state)

    def _publish_one(self, format_: IcebergPublishing | DeltaPublishing, state: TableState) -> None:
        try:
            format_.publish(state)
        except Exception as error:  # whatever went wrong, the commit has landed and stands
            logger.warning("table %s: version %d was committed but not published as %s (%s: %s); the next commit "
                           "publishes it, or run `sleeper-spark %s sync %s`. Set the table property %s=false to stop "
                           "publishing.", self._table.name, state.version, format_.title, type(error).__name__, error,
                           format_.command, self._table.name, format_.property)


class IcebergPublishing:
    """The Iceberg publisher of one table, made on first use (pyiceberg is an optional extra)."""

    title, command, property = "Iceberg metadata", "iceberg", PUBLISH_PROPERTY

    def __init__(self, table: Table) -> None:
        self._table = table
        self._publisher: IcebergPublisher | None = None
        self._committer: CatalogCommitter | None = None
        self._making = threading.Lock()

    def enabled(self, state: TableState) -> bool:
        return publishing_enabled(state, self._table.catalog.config.iceberg_publish, PUBLISH_PROPERTY)

    def publish(self, state: TableState | None = None, rebuild: bool = False) -> int:
        """Publishes every version up to ``state`` (default: the newest), then commits the newest
        to the configured Iceberg catalog; returns the newest published version."""
        publisher = self.publisher()
        version = publisher.rebuild() if rebuild else publisher.publish(state)
        self._commit_newest(publisher)
        return version

    def expire(self, before: int, cutoff: datetime | None) -> list[str]:
        """After vacuum (``cutoff``: its own) or log truncation (None): expires the Iceberg snapshots of
        versions before ``before`` if the table was ever published; logs, never raises."""
        if not self._table.store.head(join_key(self._table.root, ICEBERG_HINT)):
            return []
        try:
            publisher = self.publisher()
            deleted = publisher.expire(before, cutoff)
            self._commit_newest(publisher)
            return deleted
        except Exception as error:  # maintenance has done its work; the warning says how to retry
            logger.warning("table %s: could not expire the Iceberg snapshots before version %d (%s: %s); run "
                           "vacuum again to expire them", self._table.name, before, type(error).__name__, error)
            return []

    def _commit_newest(self, publisher: IcebergPublisher) -> None:
        """Commits the newest version ``publisher`` holds to the configured Iceberg catalog, if any."""
        committer, last = self.committer(), publisher.last
        if committer is not None and last is not None:
            committer.commit(self._table.name, last.metadata, publisher.metadata_location(last.version))

    def metadata_location(self, version: int | None) -> str:
        return self.publisher().metadata_location(version)

    def publisher(self) -> IcebergPublisher:
        # One publisher a table (its lock orders the publishing thread and a caller's publish).
        with self._making:
            if self._publisher is None:
                try:
                    from sleeper_spark.iceberg.publisher import IcebergPublisher, Target
                except ImportError as error:
                    raise ConfigError(f"publishing Iceberg metadata needs pyiceberg ({error}); install "
                                      "sleeper-spark[iceberg]") from None
                table = self._table
                self._publisher = IcebergPublisher(
                    Target(table.name, table.table_id, table.store, table.root, location_uri(table.location)),
                    table.head)
            return self._publisher

    def committer(self) -> CatalogCommitter | None:
        config = self._table.catalog.config
        properties = config.iceberg_catalog_properties
        if properties is None:
            return None
        if self._committer is None:
            from sleeper_spark.iceberg.catalog_commit import CatalogCommitter

            self._committer = CatalogCommitter(properties, config.iceberg_namespace)
        return self._committer


def location_uri(location: str) -> str:
    """A table location as the URI Iceberg metadata names files by (a local path gains ``file://``)."""
    if "://" in location:
        return location.rstrip("/")
    if not location.startswith("/"):
        raise IcebergPublishError(f"table location {location!r} is not absolute")
    return "file://" + location.rstrip("/")


class DeltaPublishing:
    """The Delta publisher of one table, made on first use."""

    title, command, property = "a Delta version", "delta", DELTA_PUBLISH_PROPERTY

    def __init__(self, table: Table) -> None:
        self._table = table
        self._publisher: DeltaPublisher | None = None
        self._making = threading.Lock()

    def enabled(self, state: TableState) -> bool:
        return publishing_enabled(state, self._table.catalog.config.delta_publish, DELTA_PUBLISH_PROPERTY)

    def publish(self, state: TableState | None = None, rebuild: bool = False) -> int:
        """Publishes every version up to ``state`` (default: the newest); returns the newest published."""
        publisher = self.publisher()
        return publisher.rebuild() if rebuild else publisher.publish(state)

    def expire(self, before: int) -> list[str]:
        """After vacuum or log truncation: drops the Delta versions before ``before`` if the table was
        ever published; logs, never raises."""
        if next(iter(self._table.store.list(join_key(self._table.root, DELTA_LOG_DIR) + "/")), None) is None:
            return []
        try:
            return self.publisher().expire(before)
        except Exception as error:  # maintenance has done its work; the warning says how to retry
            logger.warning("table %s: could not drop the Delta versions before version %d (%s: %s); run vacuum "
                           "again to drop them", self._table.name, before, type(error).__name__, error)
            return []

    def publisher(self) -> DeltaPublisher:
        # One publisher a table (its lock orders the publishing thread and a caller's publish).
        with self._making:
            if self._publisher is None:
                from sleeper_spark.delta.publisher import DeltaPublisher, DeltaTarget

                table = self._table
                self._publisher = DeltaPublisher(
                    DeltaTarget(table.name, table.table_id, table.store, table.root, table.entry.created_at),
                    table.head)
            return self._publisher

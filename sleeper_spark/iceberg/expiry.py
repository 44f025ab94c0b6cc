"""Expiring the Iceberg snapshots of versions whose files vacuum deletes, and their metadata files.

Vacuum deletes the data files of versions older than its retention floor, and log truncation
makes versions older than its cut unreadable here: their Iceberg snapshots are then removed from
the newest metadata (Iceberg's own ``expire_snapshots``), and vacuum deletes the metadata files
no kept snapshot needs. A manifest written by an expired version is still needed if the oldest
kept snapshot lists it: manifest lists only ever replace a manifest by a newer one, so a manifest
the oldest kept list does not name is named by no kept list.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime

from pyiceberg.manifest import ManifestFile
from pyiceberg.table.metadata import TableMetadataV2

from sleeper_spark.iceberg.versions import EXPIRED_BEFORE, Published
from sleeper_spark.layout import ICEBERG_DIR
from sleeper_spark.storage import ObjectInfo

_VERSIONED = re.compile(rf"^{ICEBERG_DIR}/(?:v(\d+)\.metadata\.json|snap-(\d+)\.avro|manifest-\d+-at-(\d+)\.avro)$")


def without_snapshots_before(published: Published, before: int) -> Published | None:
    """``published`` with the snapshots of versions before ``before`` expired; None if none are."""
    metadata = published.metadata
    kept = [s for s in metadata.snapshots if s.snapshot_id >= before]
    if len(kept) == len(metadata.snapshots) or not kept:
        return None
    expired: TableMetadataV2 = metadata.model_copy(update={
        "snapshots": kept,
        "snapshot_log": [e for e in metadata.snapshot_log if e.snapshot_id >= before],
        "properties": {**metadata.properties, EXPIRED_BEFORE: str(before)},
    })
    return replace(published, metadata=expired)


def unneeded_files(listing: Iterable[ObjectInfo], oldest_kept: int, oldest_list: list[ManifestFile],
                   location: str, cutoff: datetime) -> list[str]:
    """Keys (relative to the table root) of the metadata files only expired snapshots need and
    that are older than ``cutoff`` (a publisher may be writing a young one right now)."""
    named = {m.manifest_path.removeprefix(location + "/") for m in oldest_list}
    doomed = []
    for info in listing:
        found = _VERSIONED.match(info.key)
        if found is None or info.last_modified >= cutoff or info.key in named:
            continue
        version = int(next(g for g in found.groups() if g is not None))
        if version < oldest_kept:
            doomed.append(info.key)
    return doomed

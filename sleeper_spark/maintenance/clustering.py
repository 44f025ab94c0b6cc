"""Which files a clustering compaction rewrites, and in which groups. Pure: no I/O.

A *run* is the set of files one clustering compaction wrote: they share the version that added
them, and that version's snapshot says it clustered by the table's current columns (metadata
``clustering.columns``). Every other live file (appends, files clustered by columns since
changed, files whose version left the history) is *unclustered*.

Per partition, a compaction clusters the unclustered files into one new run, merged with the
existing runs as a size-tiered LSM tree merges: the new run takes in each existing run, smallest
first, while that run holds no more than twice what the new run holds so far. So a compaction
right after an append rewrites about the append (the big run of the table stays), repeated
appends merge into runs that double, a partition keeps about log2(table / append) runs (each
adds about one file to what a narrow range query opens), and a compaction with nothing new to
cluster rewrites nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pyarrow.compute as pc

from sleeper_spark.datafiles.pruning import prune_table
from sleeper_spark.maintenance.planning import FileGroup, PartitionKey, partition_key
from sleeper_spark.models import FileRef
from sleeper_spark.models.clustering import CLUSTERING_COLUMNS, CLUSTERING_CURVE, clustering_value
from sleeper_spark.state import TableState

COMPACT_OPERATION = "compact"
# A run is merged into the new one while it holds at most this many times what the new one holds.
MERGE_RATIO = 2


def clustered_versions(state: TableState, columns: Sequence[str]) -> set[int]:
    """The versions whose snapshot is a clustering compaction by exactly ``columns``."""
    history = state.history.table()
    if not history.num_rows:
        return set()
    compactions = history.filter(pc.equal(history.column("operation"), COMPACT_OPERATION))
    wanted = clustering_value(columns)
    versions = set()
    for version, metadata in zip(compactions.column("version").to_pylist(),
                                 compactions.column("metadata").to_pylist(), strict=True):
        if metadata and json.loads(metadata).get(CLUSTERING_COLUMNS) == wanted:
            versions.add(version)
    return versions


def plan_clustering(state: TableState, columns: Sequence[str], where: pc.Expression | None) -> list[FileGroup]:
    """One group a partition that has unclustered files: those files and the runs they take in."""
    candidates = prune_table(state.files.table(), state.schema, state.partition_by, where)
    if not candidates.num_rows:
        return []
    clustered = clustered_versions(state, columns)
    versions = candidates.column("added_version").to_pylist()
    files = state.layout.file_refs(candidates)
    by_partition: dict[PartitionKey, tuple[list[FileRef], dict[int, list[FileRef]]]] = {}
    for file, version in zip(files, versions, strict=True):
        new, runs = by_partition.setdefault(partition_key(file, state.partition_by), ([], {}))
        if version is not None and version in clustered:
            runs.setdefault(version, []).append(file)
        else:
            new.append(file)
    groups = []
    for key, (new, runs) in by_partition.items():
        if new:
            groups.append(FileGroup(key, tuple(merged_run(new, list(runs.values())))))
    return groups


def merged_run(new: list[FileRef], runs: list[list[FileRef]]) -> list[FileRef]:
    """``new`` and the runs the size-tiered rule merges into it (see the module doc)."""
    merged = list(new)
    size = sum(f.size_bytes for f in new)
    for run in sorted(runs, key=lambda files: (sum(f.size_bytes for f in files), files[0].path)):
        run_size = sum(f.size_bytes for f in run)
        if run_size > MERGE_RATIO * size:
            break
        merged.extend(run)
        size += run_size
    return merged


def clustering_metadata(columns: Sequence[str], curve: str) -> dict[str, str]:
    """What a clustering compaction's snapshot records (read back by :func:`clustered_versions`)."""
    return {CLUSTERING_COLUMNS: clustering_value(columns), CLUSTERING_CURVE: curve}


__all__ = ["clustered_versions", "clustering_metadata", "merged_run", "plan_clustering"]

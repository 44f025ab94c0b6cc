"""Which files a compaction rewrites, and in which groups. Pure: no I/O.

A file is *small* when it is under half the target size. Small files are grouped per
partition and packed next-fit, in commit order, into groups of at most the target's worth of
input bytes; a group of a single file is dropped, since rewriting it alone would not reduce the
file count.

Why half: any two small files fit in one target-sized output, so every group next-fit closes
is more than half full, and a group of n files becomes about one file. Why commit order and not
size order: rows written together stay together, which keeps min/max statistics of time-like
columns tight and pruning effective.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow.compute as pc

from sleeper_spark.datafiles.pruning import prune_table
from sleeper_spark.models import FileRef
from sleeper_spark.state import TableState

PartitionKey = tuple[str | None, ...]


@dataclass(frozen=True)
class FileGroup:
    """Files of one partition that are rewritten together into (about) one file."""

    partition: PartitionKey
    files: tuple[FileRef, ...]

    @property
    def size_bytes(self) -> int:
        return sum(f.size_bytes for f in self.files)


def small_file_limit(target_file_bytes: int) -> int:
    """Files below this size are worth compacting."""
    return target_file_bytes // 2


def plan_groups(state: TableState, where: pc.Expression | None, target_file_bytes: int) -> list[FileGroup]:
    """The groups a compaction of the files ``where`` allows, to ``target_file_bytes`` (see the module doc).

    Files are chosen on the state's files table (pruned, then filtered by size, vectorized);
    FileRefs are built only for the small files.
    """
    limit = small_file_limit(target_file_bytes)
    candidates = prune_table(state.files.table(), state.schema, state.partition_by, where)
    small = state.layout.file_refs(candidates.filter(pc.less(candidates.column("size_bytes"), limit)))
    groups = pack(small, state.partition_by, target_file_bytes)
    return [g for g in groups if len(g.files) > 1]


def pack(files: Sequence[FileRef], partition_by: tuple[str, ...], capacity_bytes: int) -> list[FileGroup]:
    """Next-fit packing per partition, keeping the given order; a group holds at least one file."""
    by_partition: dict[PartitionKey, list[FileRef]] = {}
    for file in files:
        by_partition.setdefault(partition_key(file, partition_by), []).append(file)
    groups: list[FileGroup] = []
    for key, members in by_partition.items():
        current: list[FileRef] = []
        size = 0
        for file in members:
            if current and size + file.size_bytes > capacity_bytes:
                groups.append(FileGroup(key, tuple(current)))
                current, size = [], 0
            current.append(file)
            size += file.size_bytes
        if current:
            groups.append(FileGroup(key, tuple(current)))
    return groups


def partition_key(file: FileRef, partition_by: tuple[str, ...]) -> PartitionKey:
    """The file's partition values in the table's partition-column order."""
    return tuple(file.partition.get(column) for column in partition_by)

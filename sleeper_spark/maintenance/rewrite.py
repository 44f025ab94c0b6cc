"""Rewriting groups of data files: in this process, or in Spark tasks.

Compaction and delete both come down to the same step: read some files of one partition, keep
some of their rows, write what is kept as new files with the shared
:class:`~sleeper_spark.datafiles.writer.DataFileWriter`. A *job* says how (table layout,
target size, which rows to keep); each *group* of files is one unit of work. The result of a
group names the files it replaces and the files it wrote; a file none of whose rows would go
is left out of both, so a delete never rewrites a file it does not change. A compaction keeps
every row, so it reads its small files in batches (:func:`~sleeper_spark.table.reading.read_files`,
the checks of a read of each file at a fraction of its cost) and checks that it read as many rows
as the log records for the files it replaces.

Nothing written here is part of the table until the caller commits it. When a run fails, the
files of the groups that finished are deleted here; files a Spark task wrote before the job
failed may survive as orphans for vacuum (the driver never learns their names).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from sleeper_spark.datafiles.curves import sort_by_curve
from sleeper_spark.datafiles.writer import DataFileWriter
from sleeper_spark.errors import ConfigError, CorruptDataFileError
from sleeper_spark.maintenance.planning import FileGroup
from sleeper_spark.maintenance.progress import Progress, no_progress
from sleeper_spark.models import FileRef, TableSchema
from sleeper_spark.models.clustering import CURVE
from sleeper_spark.process_state import REWRITE_STORES
from sleeper_spark.source_options import DEFAULT_ROW_GROUP_ROWS
from sleeper_spark.storage import ObjectStore, join_key
from sleeper_spark.table.reading import read_file, read_files

log = logging.getLogger(__name__)

# Starting a Spark job costs seconds; below this much input a few driver threads are as quick.
SPARK_MIN_BYTES = 256 * 2**20
LOCAL_THREADS = 4
EXECUTORS = ("auto", "local", "spark")
_WRITE_BATCH_ROWS = 65_536  # rows of small files handed to the writer in one call (a delete)
# A compaction reads its small files this many bytes at a time: thousands of one-row files go to
# the writer in one call, while a group of big small files is never held in memory whole.
_READ_TOGETHER_BYTES = 32 * 2**20


@dataclass(frozen=True)
class RewriteJob:
    """What any process needs to rewrite files of one table. Picklable: holds no clients."""

    catalog_options: Mapping[str, str]
    table_name: str
    table_root: str
    schema: TableSchema
    partition_by: tuple[str, ...]
    target_file_bytes: int
    keep: pc.Expression | None = None  # rows to keep; None keeps every row (compaction)
    # Clustering compaction: a group's rows are written in Hilbert order over these columns.
    cluster_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class RewriteResult:
    """The files a group replaces and the files written in their place."""

    removed: tuple[str, ...] = ()
    added: tuple[FileRef, ...] = field(default=())


def rewrite_group(store: ObjectStore, job: RewriteJob, files: Sequence[FileRef]) -> RewriteResult:
    """Reads ``files``, keeps ``job.keep`` rows of each, writes them out; runs anywhere."""
    if job.cluster_by:
        return _cluster_group(store, job, files)
    if job.keep is None:
        return _compact_group(store, job, files)
    return _delete_group(store, job, files, job.keep)


def _delete_group(store: ObjectStore, job: RewriteJob, files: Sequence[FileRef], keep: pc.Expression) -> RewriteResult:
    """The ``keep`` rows of each file that loses any, written out; a file that loses none stays."""
    writer = DataFileWriter(store, job.table_root, job.schema, job.partition_by, job.table_name,
                            target_file_bytes=job.target_file_bytes)
    arrow_schema = job.schema.to_arrow()
    removed: list[str] = []
    # Small files' rows go to the writer together: each write call splits its rows by partition
    # and conforms them to the schema, which cost more than reading a one-row file.
    pending: list[pa.Table] = []
    pending_rows = 0
    try:
        for file in files:
            data = read_file(store, job.table_root, file, arrow_schema, None, None)
            kept = data.filter(keep)
            if kept.num_rows == data.num_rows:
                continue  # no row of this file goes: leave the file as it is
            removed.append(file.path)
            if kept.num_rows:
                pending.append(kept)
                pending_rows += kept.num_rows
            if pending_rows >= _WRITE_BATCH_ROWS:
                writer.write(pa.concat_tables(pending))
                pending, pending_rows = [], 0
        if pending:
            writer.write(pa.concat_tables(pending))
        added = writer.close()
    except BaseException:
        writer.abort()
        raise
    return RewriteResult(tuple(removed), tuple(added))


def _compact_group(store: ObjectStore, job: RewriteJob, files: Sequence[FileRef]) -> RewriteResult:
    """Every row of ``files``, in their order, cut into files near the target size. The small
    files are read in batches of at most :data:`_READ_TOGETHER_BYTES`
    (:func:`~sleeper_spark.table.reading.read_files`)."""
    writer = DataFileWriter(store, job.table_root, job.schema, job.partition_by, job.table_name,
                            target_file_bytes=job.target_file_bytes)
    arrow_schema = job.schema.to_arrow()
    try:
        for batch in _batches_by_bytes(files, _READ_TOGETHER_BYTES):
            writer.write(_all_rows(store, job, batch, arrow_schema))
        added = writer.close()
    except BaseException:
        writer.abort()
        raise
    return RewriteResult(tuple(f.path for f in files), tuple(added))


def _all_rows(store: ObjectStore, job: RewriteJob, files: Sequence[FileRef], schema: pa.Schema) -> pa.Table:
    """The rows of ``files``, which must be as many as the log records for them: a compaction
    writes exactly the rows it removes, or nothing."""
    data = read_files(store, job.table_root, files, schema)
    recorded = sum(f.row_count for f in files)
    if data.num_rows != recorded:
        raise CorruptDataFileError(
            f"table {job.table_name!r}: {len(files)} data file(s) being compacted (the first {files[0].path}) "
            f"hold {data.num_rows} row(s), the log records {recorded}; nothing was rewritten. "
            "Run table.verify(deep=True) to find the file"
        )
    return data


def _batches_by_bytes(files: Sequence[FileRef], most_bytes: int) -> list[Sequence[FileRef]]:
    """``files`` in order, cut into runs of at most ``most_bytes`` (a bigger file is a run alone)."""
    batches: list[Sequence[FileRef]] = []
    start, size = 0, 0
    for index, file in enumerate(files):
        if index > start and size + file.size_bytes > most_bytes:
            batches.append(files[start:index])
            start, size = index, 0
        size += file.size_bytes
    if start < len(files):
        batches.append(files[start:])
    return batches


def _cluster_group(store: ObjectStore, job: RewriteJob, files: Sequence[FileRef]) -> RewriteResult:
    """Every row of ``files``, sorted along the curve and cut into files in that order: the curve
    order needs all of the group's rows at once, so a group is held in memory whole."""
    arrow_schema = job.schema.to_arrow()
    data = pa.concat_tables([_all_rows(store, job, batch, arrow_schema)
                             for batch in _batches_by_bytes(files, _READ_TOGETHER_BYTES)])
    # A file is cut after the row group that reaches the target: row groups of about a file's
    # rows (estimated from the input's bytes per row) keep small targets from making one big file.
    bytes_per_row = max(1.0, sum(f.size_bytes for f in files) / max(1, sum(f.row_count for f in files)))
    rows_per_file = max(1, int(job.target_file_bytes / bytes_per_row))
    writer = DataFileWriter(store, job.table_root, job.schema, job.partition_by, job.table_name,
                            target_file_bytes=job.target_file_bytes,
                            row_group_rows=min(DEFAULT_ROW_GROUP_ROWS, rows_per_file))
    try:
        writer.write(sort_by_curve(data, job.cluster_by, CURVE))
        added = writer.close()
    except BaseException:
        writer.abort()
        raise
    return RewriteResult(tuple(f.path for f in files), tuple(added))


def run(store: ObjectStore, job: RewriteJob, groups: Sequence[FileGroup], spark: Any,
        executor: str, progress: Progress | None) -> list[RewriteResult]:
    """Rewrites every group, in Spark tasks or driver threads (see :func:`use_spark`)."""
    progress = progress or no_progress
    if use_spark(spark, groups, executor):
        return _run_spark(spark, store, job, groups, progress)
    return _run_local(store, job, groups, progress)


def check_executor(executor: str) -> None:
    """Refuses an unknown ``executor`` before any work is done."""
    if executor not in EXECUTORS:
        raise ConfigError(f"executor must be 'auto', 'local' or 'spark', not {executor!r}")


def use_spark(spark: Any, groups: Sequence[FileGroup], executor: str) -> bool:
    """``executor``: "local" never uses Spark, "spark" always does, "auto" only for big runs."""
    check_executor(executor)
    if spark is None or executor == "local":
        return False
    if executor == "spark":
        return True
    return len(groups) > 1 and sum(g.size_bytes for g in groups) >= SPARK_MIN_BYTES


def delete_written(store: ObjectStore, table_root: str, results: Sequence[RewriteResult]) -> None:
    """Best effort: a file left behind is an orphan that vacuum removes later."""
    keys = [join_key(table_root, f.path) for r in results for f in r.added]
    try:
        store.delete_many(keys)
    except Exception as error:
        log.warning("could not delete %d rewritten file(s): %s; vacuum will remove them", len(keys), error)


def _run_local(store: ObjectStore, job: RewriteJob, groups: Sequence[FileGroup],
               progress: Progress) -> list[RewriteResult]:
    total = len(groups)
    progress("rewriting", 0, total)
    if total == 1:  # a thread of its own would only add its start (an automatic compaction's usual run)
        result = rewrite_group(store, job, groups[0].files)
        progress("rewriting", 1, 1)
        return [result]
    results: list[RewriteResult | None] = [None] * total
    failure: BaseException | None = None
    with ThreadPoolExecutor(max_workers=max(1, min(LOCAL_THREADS, total))) as pool:
        futures: list[Future[RewriteResult]] = [pool.submit(rewrite_group, store, job, g.files) for g in groups]
        for index, future in enumerate(futures):
            try:
                results[index] = future.result()
            except BaseException as error:  # keep collecting, so every finished group is cleaned up
                failure = failure or error
            progress("rewriting", index + 1, total)
    done = [r for r in results if r is not None]
    if failure is not None:
        delete_written(store, job.table_root, done)
        raise failure
    return done


def _run_spark(spark: Any, store: ObjectStore, job: RewriteJob, groups: Sequence[FileGroup],
               progress: Progress) -> list[RewriteResult]:
    try:
        context = spark.sparkContext
    except Exception:
        # Spark Connect sessions have no SparkContext; the driver threads do the work instead.
        log.info("this Spark session cannot run RDD jobs (Spark Connect?); rewriting in this process")
        return _run_local(store, job, groups, progress)
    total = len(groups)
    progress("rewriting (spark)", 0, total)
    items = [(job, tuple(g.files)) for g in groups]
    rdd = context.parallelize(items, numSlices=total)
    rdd.setName(f"sleeper_spark rewrite of {job.table_name}")
    encoded: list[tuple[tuple[str, ...], tuple[str, ...]]] = rdd.map(rewrite_in_worker).collect()
    progress("rewriting (spark)", total, total)
    return [RewriteResult(removed, tuple(FileRef.model_validate_json(f) for f in added))
            for removed, added in encoded]


def rewrite_in_worker(item: tuple[RewriteJob, tuple[FileRef, ...]]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """One Spark task: rebuild the store from the catalog options, rewrite one group.

    Returns plain strings, so that what travels back to the driver does not depend on how the
    worker's pickler treats pydantic models. Stores are cached per worker process (workers
    are reused), never pickled.
    """
    job, files = item
    from sleeper_spark.table.catalog import Catalog

    key = tuple(sorted(job.catalog_options.items()))
    store: ObjectStore = REWRITE_STORES.get_or_create(
        key, lambda: Catalog.from_options(dict(job.catalog_options)).backend.store)
    result = rewrite_group(store, job, files)
    return result.removed, tuple(f.model_dump_json() for f in result.added)

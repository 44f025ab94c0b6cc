"""The files of a TableState: immutable, column-oriented, cheap to extend.

The files are Arrow record batches (:class:`~sleeper_spark.state.runs.Runs`), so a state with a
million files stays a few hundred bytes per file, loads from a state snapshot without parsing
anything per file, and prunes with vectorized compute. The newest few files are kept as a
tuple of FileRefs instead (the *tail*): building Arrow arrays costs tens of microseconds per
column, which a commit of one file should not pay; the tail becomes one batch every
:data:`TAIL_FILES` files.

A commit makes a new FileSet that shares every batch (and the tail's FileRefs) with the old
one; nothing is changed in place, so a state handed to a reader stays exactly as it was while
other threads commit. The one thing a FileSet computes after construction is the Arrow form of
its own tail, which it caches: the same value whoever computes it first.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from sleeper_spark.models import FileRef
from sleeper_spark.state.file_columns import PATH_HASH, FileLayout, path_hash
from sleeper_spark.state.runs import Runs

TAIL_FILES = 256
# For up to this many paths, one equality pass per path beats building a hash set per run.
_EQUALITY_PASSES = 8

Tail = tuple[tuple[FileRef, int | None], ...]  # (file, the version that added it), oldest first


class FileSet:
    """The live files of a state by path, in commit order (read-only, Mapping-like)."""

    __slots__ = ("_runs", "_tail", "_tail_batch", "layout")

    def __init__(self, layout: FileLayout, runs: Runs | None = None, tail: Tail = ()) -> None:
        self.layout = layout
        self._runs = runs if runs is not None else Runs(layout.arrow)
        self._tail = tail
        self._tail_batch: pa.RecordBatch | None = None

    @classmethod
    def of(cls, layout: FileLayout, files: Sequence[FileRef], added_version: int | None) -> FileSet:
        batch = layout.batch(files, [added_version] * len(files))
        return cls(layout, Runs(layout.arrow).append(batch))

    @classmethod
    def of_table(cls, layout: FileLayout, table: pa.Table) -> FileSet:
        return cls(layout, Runs.of_table(table.cast(layout.arrow)))

    # -- reading -------------------------------------------------------------------------

    def table(self) -> pa.Table:
        """Every column, including the internal ``path_hash`` (see :mod:`.file_columns`)."""
        return pa.Table.from_batches(self.batches(), schema=self.layout.arrow)

    def batches(self) -> list[pa.RecordBatch]:
        tail = self._arrow_tail()
        return [*self._runs.batches, tail] if tail is not None else list(self._runs.batches)

    def _arrow_tail(self) -> pa.RecordBatch | None:
        if not self._tail:
            return None
        if self._tail_batch is None:
            self._tail_batch = self.layout.batch([f for f, _ in self._tail], [v for _, v in self._tail])
        return self._tail_batch

    def __len__(self) -> int:
        return self._runs.num_rows + len(self._tail)

    def __iter__(self) -> Iterator[str]:
        for batch in self._runs:
            yield from batch.column("path").to_pylist()
        for file, _ in self._tail:
            yield file.path

    def paths(self) -> list[str]:
        return list(self)

    def values(self) -> list[FileRef]:
        return [*self.layout.file_refs(self._runs.table()), *self.tail_files()]

    def tail_files(self) -> list[FileRef]:
        return [f for f, _ in self._tail]

    def items(self) -> list[tuple[str, FileRef]]:
        return [(f.path, f) for f in self.values()]

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and bool(self.present([path]))

    def __getitem__(self, path: str) -> FileRef:
        for file, _ in self._tail:
            if file.path == path:
                return file
        rows = self._runs.where(lambda batch: self._marks(batch, [path]))
        if rows.num_rows == 0:
            raise KeyError(path)
        return self.layout.file_refs(rows)[0]

    def get(self, path: str) -> FileRef | None:
        try:
            return self[path]
        except KeyError:
            return None

    def present(self, paths: Sequence[str]) -> list[str]:
        """Those of ``paths`` that are live files (vectorized over the batches)."""
        if not paths or not len(self):
            return []
        found = {f.path for f, _ in self._tail}.intersection(paths)
        if self._runs.num_rows:
            # One pass over all batches as a chunked column: the cost per call, not per batch,
            # dominates for the few paths of a commit.
            stored = self._runs.table()
            marks = self._marks(stored, paths)
            if pc.any(marks).as_py():
                found.update(stored.filter(marks).column("path").to_pylist())
        return [p for p in paths if p in found]

    def added_since(self, version: int) -> pa.Table:
        """The rows of the files added after ``version`` (every column, as :meth:`table`).

        Files are kept in commit order, so these are the newest rows: the walk goes back from
        the tail and stops at the first file no newer than ``version``, which costs the files
        added since, not the table. A file whose adding version is unknown (null: from a
        format-1 state snapshot) counts as older than every version that records one.
        """
        newer = [(f, v) for f, v in self._tail if _after(v, version)]
        found = [self.layout.batch([f for f, _ in newer], [v for _, v in newer])] if newer else []
        if len(newer) < len(self._tail):
            return pa.Table.from_batches(found, schema=self.layout.arrow)  # the runs are older still
        at = pa.scalar(version, pa.int64())
        for batch in reversed(self._runs.batches):
            versions = batch.column("added_version")
            if not _after(versions[batch.num_rows - 1].as_py(), version):
                break
            found.insert(0, batch.filter(pc.fill_null(pc.greater(versions, at), False)))
            if not _after(versions[0].as_py(), version):
                break
        return pa.Table.from_batches(found, schema=self.layout.arrow)

    def _marks(self, batch: pa.RecordBatch | pa.Table, paths: Sequence[str]) -> pa.Array:
        """True where the row's path is one of ``paths``: hashes first, then the strings that match."""
        hashes = batch.column(PATH_HASH)
        if len(paths) <= _EQUALITY_PASSES:
            marks = pc.equal(hashes, pa.scalar(path_hash(paths[0]), pa.uint64()))
            for path in paths[1:]:
                marks = pc.or_(marks, pc.equal(hashes, pa.scalar(path_hash(path), pa.uint64())))
        else:
            marks = pc.is_in(hashes, value_set=pa.array([path_hash(p) for p in paths], pa.uint64()))
        if not pc.any(marks).as_py():
            return marks
        # A hash match is almost always the path itself; the strings settle it.
        return pc.and_(marks, pc.is_in(batch.column("path"), value_set=pa.array(list(paths), pa.string())))

    # -- new file sets -------------------------------------------------------------------

    def added(self, files: Sequence[FileRef], added_version: int | None) -> FileSet:
        if not files:
            return self
        tail = self._tail + tuple((f, added_version) for f in files)
        if len(tail) < TAIL_FILES:
            return FileSet(self.layout, self._runs, tail)
        batch = self.layout.batch([f for f, _ in tail], [v for _, v in tail])
        return FileSet(self.layout, self._runs.append(batch))

    def added_rows(self, rows: pa.RecordBatch, added_version: int) -> FileSet:
        """With files given as rows of a files table (``added_version`` is filled in); columns of
        another layout (a schema that changed since the rows were made) are matched by name."""
        if rows.num_rows == 0:
            return self
        rows = self.layout.conformed(rows).set_column(
            self.layout.arrow.get_field_index("added_version"), "added_version",
            pa.array([added_version] * rows.num_rows, pa.int64()))
        runs = self._runs
        tail = self._arrow_tail()
        if tail is not None:
            runs = runs.append(tail)
        return FileSet(self.layout, runs.append(rows))

    def removed(self, paths: Sequence[str]) -> tuple[FileSet, int]:
        """Without ``paths`` (every one must be live), and the row count they held."""
        if not paths:
            return self, 0
        doomed = set(paths)
        rows_removed = sum(f.row_count for f, _ in self._tail if f.path in doomed)
        tail = tuple(entry for entry in self._tail if entry[0].path not in doomed)
        masks: list[pa.BooleanArray | None] = []
        for batch in self._runs:
            marks = self._marks(batch, paths)
            if not pc.any(marks).as_py():
                masks.append(None)
                continue
            rows_removed += pc.sum(pc.filter(batch.column("row_count"), marks)).as_py() or 0
            masks.append(pc.invert(marks))
        runs = self._runs.filter(masks) if any(m is not None for m in masks) else self._runs
        return FileSet(self.layout, runs, tail), rows_removed

    def with_layout(self, layout: FileLayout, added: Sequence[str] = ()) -> FileSet:
        """The same files under an evolved schema (see :mod:`sleeper_spark.models.schema_evolution`).

        Statistics of a widened column are cast, those of a dropped one go. No file here can hold
        a value of a column in ``added`` (new names are never old ones), so each is all null in
        every file: its null count is the file's row count, which lets pruning skip the file for
        any other condition on it.
        """
        runs = self._runs
        tail = self._arrow_tail()
        if tail is not None:
            runs = runs.append(tail)
        return FileSet(layout, runs.with_schema(layout.arrow, all_null=[f"null_count.{name}" for name in added]))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FileSet):
            return NotImplemented
        return self.layout == other.layout and bool(self.table().equals(other.table()))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"FileSet({len(self)} files)"


def _after(added: int | None, version: int) -> bool:
    return added is not None and added > version

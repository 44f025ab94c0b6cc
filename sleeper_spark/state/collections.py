"""The files of a TableState: immutable, column-oriented, cheap to extend.

Both are Arrow record batches held in :class:`~sleeper_spark.state.runs.Runs`, so a state with
a million files stays a few hundred bytes per file, loads from a state snapshot without parsing
anything per file, and prunes with vectorized compute. A commit makes a new collection that
shares every existing batch with the old one; nothing is ever changed in place, so a state
handed to a reader stays exactly as it was while other threads commit.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from sleeper_spark.models import FileRef
from sleeper_spark.state.file_columns import PATH_HASH, FileLayout, path_hash
from sleeper_spark.state.runs import Runs

# For up to this many paths, one equality pass per path beats building a hash set per run.
_EQUALITY_PASSES = 8


class FileSet:
    """The live files of a state by path, in commit order (read-only, Mapping-like)."""

    __slots__ = ("_runs", "layout")

    def __init__(self, layout: FileLayout, runs: Runs | None = None) -> None:
        self.layout = layout
        self._runs = runs if runs is not None else Runs(layout.arrow)

    @classmethod
    def of(cls, layout: FileLayout, files: Sequence[FileRef], added_version: int | None) -> FileSet:
        return cls(layout).added(files, added_version)

    @classmethod
    def of_table(cls, layout: FileLayout, table: pa.Table) -> FileSet:
        return cls(layout, Runs.of_table(table.cast(layout.arrow)))

    # -- reading -------------------------------------------------------------------------

    def table(self) -> pa.Table:
        """Every column, including the internal ``path_hash`` (see :mod:`.file_columns`)."""
        return self._runs.table()

    @property
    def runs(self) -> Runs:
        return self._runs

    def __len__(self) -> int:
        return self._runs.num_rows

    def __iter__(self) -> Iterator[str]:
        for batch in self._runs:
            yield from batch.column("path").to_pylist()

    def paths(self) -> list[str]:
        return list(self)

    def values(self) -> list[FileRef]:
        return self.layout.file_refs(self.table())

    def items(self) -> list[tuple[str, FileRef]]:
        return [(f.path, f) for f in self.values()]

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and bool(self.present([path]))

    def __getitem__(self, path: str) -> FileRef:
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
        """Those of ``paths`` that are live files (vectorized: no per-file Python)."""
        if not paths or not len(self):
            return []
        rows = self._runs.where(lambda batch: self._marks(batch, paths))
        found = set(rows.column("path").to_pylist())
        return [p for p in paths if p in found]

    def _marks(self, batch: pa.RecordBatch, paths: Sequence[str]) -> pa.Array:
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
        return FileSet(self.layout, self._runs.append(self.layout.batch(files, added_version)))

    def removed(self, paths: Sequence[str]) -> tuple[FileSet, int]:
        """Without ``paths`` (every one must be live), and the row count they held."""
        if not paths:
            return self, 0
        masks: list[pa.BooleanArray | None] = []
        rows_removed = 0
        for batch in self._runs:
            marks = self._marks(batch, paths)
            if not pc.any(marks).as_py():
                masks.append(None)
                continue
            rows_removed += pc.sum(pc.filter(batch.column("row_count"), marks)).as_py() or 0
            masks.append(pc.invert(marks))
        return FileSet(self.layout, self._runs.filter(masks)), rows_removed

    def with_layout(self, layout: FileLayout) -> FileSet:
        """The same files under a schema with more columns (their statistics unknown)."""
        return FileSet(layout, self._runs.with_schema(layout.arrow))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FileSet):
            return NotImplemented
        return self.layout == other.layout and bool(self.table().equals(other.table()))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"FileSet({len(self)} files)"


"""Lean containers for the files and history of a TableState.

A table with 100 k files must open in well under a second and hold its state in under 1 KiB
per file. Pydantic objects cost ~2.5 KiB per file and ~25 µs each to build, so the state keeps
every FileRef and Snapshot as its compact JSON text and builds the object only when someone
asks for it. Loading a state snapshot therefore parses no JSON at all; the commit path touches
only the paths and the newest snapshot.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, MutableMapping, Sequence
from typing import overload

from pydantic import ValidationError

from sleeper_spark.errors import CorruptLogError
from sleeper_spark.models import FileRef, Snapshot


def _to_json(model: FileRef | Snapshot) -> str:
    return model.model_dump_json(exclude_none=True)


class FileMap(MutableMapping[str, FileRef]):
    """Active files by path, in commit order; values are stored as JSON text."""

    __slots__ = ("_raw",)

    def __init__(self, raw: dict[str, str] | None = None) -> None:
        self._raw: dict[str, str] = raw if raw is not None else {}

    @classmethod
    def of(cls, files: Iterable[FileRef]) -> FileMap:
        return cls({f.path: _to_json(f) for f in files})

    def __getitem__(self, path: str) -> FileRef:
        text = self._raw[path]
        try:
            return FileRef.model_validate_json(text)
        except ValidationError as error:
            raise CorruptLogError(f"the state's entry for file {path} is damaged: {error.errors()[0]['msg']}") from None

    def __setitem__(self, path: str, file: FileRef) -> None:
        self._raw[path] = _to_json(file)

    def __delitem__(self, path: str) -> None:
        del self._raw[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def __contains__(self, path: object) -> bool:
        return path in self._raw

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FileMap):
            return self._raw == other._raw
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]

    def raw_items(self) -> Iterable[tuple[str, str]]:
        """(path, JSON) pairs, for writing a state snapshot without re-encoding."""
        return self._raw.items()

    def copy(self) -> FileMap:
        return FileMap(dict(self._raw))


class SnapshotLog(Sequence[Snapshot]):
    """The data snapshots of a table, oldest first; stored as JSON text, the newest kept built."""

    __slots__ = ("_last", "_raw")

    def __init__(self, raw: list[str] | None = None) -> None:
        self._raw: list[str] = raw if raw is not None else []
        self._last: Snapshot | None = None

    @classmethod
    def of(cls, snapshots: Iterable[Snapshot]) -> SnapshotLog:
        return cls([_to_json(s) for s in snapshots])

    def append(self, snapshot: Snapshot) -> None:
        self._raw.append(_to_json(snapshot))
        self._last = snapshot

    def _decode(self, index: int) -> Snapshot:
        try:
            return Snapshot.model_validate_json(self._raw[index])
        except ValidationError as error:
            raise CorruptLogError(f"the state's history entry {index} is damaged: {error.errors()[0]['msg']}") from None

    @overload
    def __getitem__(self, index: int) -> Snapshot: ...

    @overload
    def __getitem__(self, index: slice) -> list[Snapshot]: ...

    def __getitem__(self, index: int | slice) -> Snapshot | list[Snapshot]:
        if isinstance(index, slice):
            return [self._decode(i) for i in range(len(self._raw))[index]]
        if index in (-1, len(self._raw) - 1) and self._raw:
            if self._last is None:
                self._last = self._decode(-1)
            return self._last
        return self._decode(index)

    def __len__(self) -> int:
        return len(self._raw)

    def __iter__(self) -> Iterator[Snapshot]:
        for index in range(len(self._raw)):
            yield self._decode(index)

    def __reversed__(self) -> Iterator[Snapshot]:
        for index in range(len(self._raw) - 1, -1, -1):
            yield self._decode(index)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SnapshotLog):
            return self._raw == other._raw
        if isinstance(other, list):
            return list(self) == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def raw(self) -> list[str]:
        return self._raw

    def copy(self) -> SnapshotLog:
        clone = SnapshotLog(list(self._raw))
        clone._last = self._last
        return clone

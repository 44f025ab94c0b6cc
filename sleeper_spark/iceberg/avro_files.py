"""Iceberg's Avro files (manifests and manifest lists) written to and read from bytes.

pyiceberg writes them through its own file IO; publishing goes through the table's
:class:`~sleeper_spark.storage.ObjectStore` instead (one retry policy, one set of credentials,
the same stores the log runs on), so pyiceberg's writers are handed an in-memory file and the
bytes are stored afterwards.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from typing import Literal

from pyiceberg.io import InputFile, InputStream, OutputFile, OutputStream
from pyiceberg.manifest import (
    ManifestEntry,
    ManifestFile,
    read_manifest_list,
    write_manifest,
    write_manifest_list,
)
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema

FORMAT_VERSION: Literal[2] = 2
CODEC: Literal["deflate"] = "deflate"


class _Bytes(io.BytesIO):
    """Keeps its bytes when closed, as pyiceberg's writers close the stream they were given."""

    data = b""

    def close(self) -> None:
        if not self.closed:
            self.data = self.getvalue()
        super().close()


class MemoryOutput(OutputFile):
    """An output file whose bytes stay in memory until the caller stores them at ``location``."""

    def __init__(self, location: str) -> None:
        super().__init__(location)
        self._stream = _Bytes()

    def __len__(self) -> int:
        return len(self.data)

    @property
    def data(self) -> bytes:
        return self._stream.data if self._stream.closed else self._stream.getvalue()

    def exists(self) -> bool:
        return False

    def to_input_file(self) -> InputFile:
        return MemoryInput(self.location, self.data)

    def create(self, overwrite: bool = False) -> OutputStream:
        return self._stream


class MemoryInput(InputFile):
    """Bytes already read, as pyiceberg's readers want them."""

    def __init__(self, location: str, data: bytes) -> None:
        super().__init__(location)
        self._data = data

    def __len__(self) -> int:
        return len(self._data)

    def exists(self) -> bool:
        return True

    def open(self, seekable: bool = True) -> InputStream:
        return io.BytesIO(self._data)


def manifest_bytes(location: str, spec: PartitionSpec, schema: Schema, snapshot_id: int,
                   entries: Iterable[ManifestEntry]) -> tuple[ManifestFile, bytes]:
    """A data manifest of ``entries`` (each with its status set), and its description for a manifest list."""
    output = MemoryOutput(location)
    with write_manifest(FORMAT_VERSION, spec, schema, output, snapshot_id, CODEC) as writer:
        for entry in entries:
            writer.add_entry(entry)
    return writer.to_manifest_file(), output.data


def manifest_list_bytes(location: str, snapshot_id: int, parent_id: int | None, sequence_number: int,
                        manifests: Sequence[ManifestFile]) -> bytes:
    """The manifest list of a snapshot: ``manifests`` made by earlier snapshots keep their sequence
    numbers; those made by this one get ``sequence_number``."""
    output = MemoryOutput(location)
    with write_manifest_list(FORMAT_VERSION, output, snapshot_id, parent_id, sequence_number, CODEC) as writer:
        writer.add_manifests(list(manifests))
    return output.data


def read_manifests(location: str, data: bytes) -> list[ManifestFile]:
    """The manifests a stored manifest list names."""
    return list(read_manifest_list(MemoryInput(location, data)))

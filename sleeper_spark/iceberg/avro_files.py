"""Iceberg's Avro files (manifests and manifest lists) written to and read from bytes.

pyiceberg writes them through its own file IO; publishing goes through the table's
:class:`~sleeper_spark.storage.ObjectStore` instead (one retry policy, one set of credentials,
the same stores the log runs on), so pyiceberg's writers are handed an in-memory file and the
bytes are stored afterwards.
"""

from __future__ import annotations

import functools
import io
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

from pyiceberg.avro.codecs.codec import Codec
from pyiceberg.avro.encoder import BinaryEncoder
from pyiceberg.avro.file import AvroFile
from pyiceberg.avro.writer import Writer
from pyiceberg.io import InputFile, InputStream, OutputFile, OutputStream
from pyiceberg.manifest import (
    DEFAULT_READ_VERSION,
    MANIFEST_ENTRY_SCHEMAS,
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    ManifestWriter,
    read_manifest_list,
    write_manifest,
    write_manifest_list,
)
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.typedef import Record

FORMAT_VERSION: Literal[2] = 2
CODEC: Literal["deflate"] = "deflate"
# Entries per Avro block of a manifest: pyiceberg's writer makes a block (one deflate call, one
# sync marker) of every entry; blocks this long compress and write several times faster.
ENTRIES_PER_BLOCK = 1000


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


class StoredEntry(NamedTuple):
    """A live entry as a manifest holds it: its data file's Avro record (the rest of an entry is
    its status, snapshot and sequence numbers), and what a manifest's description counts of it."""

    path: str
    data_file: bytes
    record_count: int
    partition: Record
    origin: int  # the snapshot that added the file: an EXISTING entry's snapshot and sequence number


def manifest_bytes(location: str, spec: PartitionSpec, schema: Schema, snapshot_id: int,
                   entries: Iterable[ManifestEntry]) -> tuple[ManifestFile, bytes, list[StoredEntry] | None]:
    """A data manifest of ``entries`` (each with its status set), its description for a manifest
    list, and its live entries as stored (None if their records do not start as expected).

    pyiceberg's ManifestWriter describes it (``add_entry`` keeps the counts, partition summaries
    and minimum sequence number, ``to_manifest_file`` reports them), but is never opened: the
    Avro file is written here, its header once per schema and spec (:func:`_manifest_format`), its
    entries :data:`ENTRIES_PER_BLOCK` to a block where pyiceberg writes a block of each. This sets
    the writer's private ``_writer`` (its Avro file) to a :class:`_Block`; the tests in
    tests/iceberg/test_publishing_costs.py fail if pyiceberg stops writing through it."""
    writer, records = _described(location, spec, schema, snapshot_id, entries)
    form = _manifest_format(spec, schema)
    buffer = io.BytesIO()
    encoder = BinaryEncoder(buffer)
    encoded: list[bytes] = []
    stored: list[StoredEntry] = []
    as_expected = True
    for record in records:
        buffer.seek(0)
        buffer.truncate()
        form.writer.write(encoder, record)
        encoded.append(buffer.getvalue())
        status = record.status
        if as_expected and status != ManifestEntryStatus.DELETED:
            prefix = _entry_prefix(status, record.snapshot_id, record.sequence_number, record.file_sequence_number)
            origin = record.snapshot_id if status == ManifestEntryStatus.ADDED else record.sequence_number
            as_expected = encoded[-1].startswith(prefix) and origin is not None
            stored.append(StoredEntry(record.data_file.file_path, encoded[-1][len(prefix):],
                                      record.data_file.record_count, record.data_file.partition, origin or 0))
    manifest, data = _manifest_file(location, writer, form, encoded)
    return manifest, data, stored if as_expected else None


def existing_manifest_bytes(location: str, spec: PartitionSpec, schema: Schema, snapshot_id: int,
                            stored: Sequence[StoredEntry]) -> tuple[ManifestFile, bytes]:
    """A data manifest of ``stored`` entries as ``EXISTING`` (each keeping its origin), from their
    data files' records as they are: a merge of manifests decodes and encodes no data file."""
    light = [ManifestEntry.from_args(status=ManifestEntryStatus.EXISTING, snapshot_id=s.origin,
                                     sequence_number=s.origin, file_sequence_number=s.origin,
                                     data_file=DataFile.from_args(record_count=s.record_count, partition=s.partition))
             for s in stored]
    writer, _ = _described(location, spec, schema, snapshot_id, light)
    encoded = [_entry_prefix(ManifestEntryStatus.EXISTING, s.origin, s.origin, s.origin) + s.data_file for s in stored]
    return _manifest_file(location, writer, _manifest_format(spec, schema), encoded)


def _described(location: str, spec: PartitionSpec, schema: Schema, snapshot_id: int,
               entries: Iterable[ManifestEntry]) -> tuple[ManifestWriter, list[ManifestEntry]]:
    """pyiceberg's writer, given every entry (its description counts them), and the entries as it
    prepared them for writing."""
    writer = write_manifest(FORMAT_VERSION, spec, schema, MemoryOutput(location), snapshot_id, CODEC)
    block = _Block()
    writer._writer = block  # type: ignore[assignment]
    added = 0
    for entry in entries:
        writer.add_entry(entry)
        added += 1
    if added == 0 or len(block.records) != added:  # another pyiceberg would silently lose entries
        raise RuntimeError(f"pyiceberg's ManifestWriter.add_entry wrote {len(block.records)} of {added} entries "
                           "through its _writer; this pyiceberg version is not supported")
    return writer, block.records


def _manifest_file(location: str, writer: ManifestWriter, form: _ManifestFormat, encoded: list[bytes]
                   ) -> tuple[ManifestFile, bytes]:
    sync = os.urandom(len(_NO_SYNC))
    parts = [form.header, sync]
    for start in range(0, len(encoded), ENTRIES_PER_BLOCK):
        chunk = encoded[start:start + ENTRIES_PER_BLOCK]
        parts.append(_block(form.codec, len(chunk), b"".join(chunk), sync))
    data = b"".join(parts)
    assert isinstance(writer._writer, _Block)
    writer._writer.output_file = MemoryInput(location, data)  # what to_manifest_file takes the length of
    return writer.to_manifest_file(), data


@functools.lru_cache(maxsize=4096)  # a manifest's entries share a few prefixes
def _entry_prefix(status: ManifestEntryStatus, snapshot_id: int | None, sequence_number: int | None,
                  file_sequence_number: int | None) -> bytes:
    """An entry's Avro record before its data file: the status, then three optional longs."""
    buffer = io.BytesIO()
    encoder = BinaryEncoder(buffer)
    encoder.write_int(status.value)
    for value in (snapshot_id, sequence_number, file_sequence_number):
        encoder.write_int(0 if value is None else 1)  # the union's branch: null first
        if value is not None:
            encoder.write_int(value)
    return buffer.getvalue()


class _Block:
    """Stands in for a manifest writer's Avro file: keeps the entries ``add_entry`` writes."""

    def __init__(self) -> None:
        self.records: list[ManifestEntry] = []
        self.output_file: InputFile | None = None

    def write_block(self, records: list[ManifestEntry]) -> None:
        self.records.extend(records)


@dataclass(frozen=True)
class _ManifestFormat:
    """What pyiceberg's writer makes of a schema and spec on opening every manifest: its Avro
    header (without the sync marker that ends it), its entry encoder and its codec."""

    header: bytes
    writer: Writer
    codec: type[Codec] | None


_FORMATS: dict[tuple[str, str], _ManifestFormat] = {}
_FORMATS_KEPT = 16
_NO_SYNC = bytes(16)


def _manifest_format(spec: PartitionSpec, schema: Schema) -> _ManifestFormat:
    key = (schema.model_dump_json(), spec.model_dump_json())
    found = _FORMATS.get(key)
    if found is None:
        probe = write_manifest(FORMAT_VERSION, spec, schema, MemoryOutput("header"), 0, CODEC).new_writer()
        probe.sync_bytes = _NO_SYNC  # the header ends with it: each manifest gets its own
        with probe:
            pass
        header = probe.output_file.to_input_file().open().read()
        assert header.endswith(_NO_SYNC)
        found = _ManifestFormat(header[:-len(_NO_SYNC)], probe.writer, probe.compression_codec())
        if len(_FORMATS) >= _FORMATS_KEPT:
            _FORMATS.clear()
        _FORMATS[key] = found
    return found


def _block(codec: type[Codec] | None, count: int, content: bytes, sync: bytes) -> bytes:
    """An Avro block of ``count`` records already encoded, as ``AvroOutputFile.write_block`` writes it."""
    if codec is not None:
        content, _ = codec.compress(content)
    head = io.BytesIO()
    encoder = BinaryEncoder(head)
    encoder.write_int(count)
    encoder.write_int(len(content))
    return head.getvalue() + content + sync


def manifest_list_bytes(location: str, snapshot_id: int, parent_id: int | None, sequence_number: int,
                        manifests: Sequence[ManifestFile], encoded: dict[str, bytes]) -> bytes:
    """The manifest list of a snapshot: ``manifests`` made by earlier snapshots keep their sequence
    numbers; those made by this one get ``sequence_number``. ``encoded`` holds each manifest's Avro
    record by path (a manifest's record never changes once listed), and gains the new ones: a list
    repeats most of the previous one's records, and encoding them again would cost the most."""
    output = MemoryOutput(location)
    with write_manifest_list(FORMAT_VERSION, output, snapshot_id, parent_id, sequence_number, CODEC) as writer:
        avro = writer._writer  # pyiceberg's Avro file; pinned by tests/iceberg/test_publishing_costs.py
        records = []
        for manifest in manifests:
            record = encoded.get(manifest.manifest_path)
            if record is None:
                buffer = io.BytesIO()
                avro.writer.write(BinaryEncoder(buffer), writer.prepare_manifest(manifest))
                record = encoded[manifest.manifest_path] = buffer.getvalue()
            records.append(record)
        avro.encoder.write(_block(avro.compression_codec(), len(records), b"".join(records), avro.sync_bytes))
    return output.data


def read_manifests(location: str, data: bytes) -> list[ManifestFile]:
    """The manifests a stored manifest list names."""
    return list(read_manifest_list(MemoryInput(location, data)))


def read_data_files(location: str, data: bytes) -> dict[str, DataFile]:
    """The data files a stored manifest lists as live (``ADDED`` or ``EXISTING``), by path: decoding
    them is several times quicker than building them again from the files table."""
    with AvroFile[ManifestEntry](MemoryInput(location, data), MANIFEST_ENTRY_SCHEMAS[DEFAULT_READ_VERSION],
                                 read_types={-1: ManifestEntry, 2: DataFile},
                                 read_enums={0: ManifestEntryStatus, 101: FileFormat, 134: DataFileContent}) as reader:
        return {entry.data_file.file_path: entry.data_file for entry in reader
                if entry.status != ManifestEntryStatus.DELETED}

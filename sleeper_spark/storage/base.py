"""The object store contract.

Keys are ``/``-separated and relative to the store's root (the warehouse). Rules every backend
keeps:

* ``put`` / ``create_if_absent`` / ``replace_if_match`` make the whole object visible at once,
  or not at all; a reader never sees a partial object.
* ``create_if_absent`` has exactly one winner among racing writers of one key;
  ``replace_if_match`` succeeds only while the stored object still has the given etag. A store
  that cannot do this itself gets it from a strategy in :mod:`sleeper_spark.storage.conditional`.
* ``get`` after a successful write sees that write (read-after-write consistency).
"""

from __future__ import annotations

import builtins
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import BinaryIO, cast

import pyarrow as pa

from sleeper_spark.errors import PathExistsError
from sleeper_spark.storage.arrow_buffers import arrow_reader

SPOOL_IN_MEMORY_BYTES = 16 * 2**20  # a spooled new object spills to a temporary file beyond this


@dataclass(frozen=True)
class ObjectInfo:
    key: str
    size: int
    last_modified: datetime
    etag: str


class NewObject(ABC):
    """A file being written that becomes visible, create-if-absent, only on :meth:`publish`."""

    @abstractmethod
    def file(self) -> BinaryIO:
        """Where to write the bytes."""

    @abstractmethod
    def publish(self) -> None:
        """Makes the object visible; :class:`PathExistsError` if the key exists already."""

    @abstractmethod
    def discard(self) -> None:
        """Drops what was written; nothing becomes visible."""


class SpooledNewObject(NewObject):
    """Bytes spooled in memory (then in a temporary file), handed to ``publish`` as one file.

    ``publish`` writes the spool (rewound) create-if-absent to ``uri``; its
    :class:`PathExistsError` says that data files are never overwritten.
    """

    def __init__(
        self, uri: str, publish: Callable[[BinaryIO], object], max_in_memory: int = SPOOL_IN_MEMORY_BYTES
    ) -> None:
        self._uri = uri
        self._publish = publish
        self._spool = tempfile.SpooledTemporaryFile(max_size=max_in_memory)  # noqa: SIM115

    def file(self) -> BinaryIO:
        return cast(BinaryIO, self._spool)

    def publish(self) -> None:
        try:
            self._spool.seek(0)
            self._publish(self.file())
        except PathExistsError:
            raise PathExistsError(f"{self._uri} exists already; data files are never overwritten") from None
        finally:
            self._spool.close()

    def discard(self) -> None:
        self._spool.close()


class ObjectStore(ABC):
    """One bucket prefix or local directory holding the warehouse."""

    @property
    @abstractmethod
    def root_uri(self) -> str:
        """The URI of the store's root, e.g. ``s3://bucket/prefix`` or ``/data/warehouse``."""

    @abstractmethod
    def get(self, key: str) -> bytes:
        """The object's bytes; :class:`FileNotFoundError` if it does not exist."""

    @abstractmethod
    def head(self, key: str) -> ObjectInfo | None:
        """The object's size, etag and time, or ``None`` if it does not exist."""

    @abstractmethod
    def put(self, key: str, data: bytes) -> str:
        """Writes unconditionally; returns the new etag."""

    @abstractmethod
    def create_if_absent(self, key: str, data: bytes) -> str:
        """Writes only if no object has this key; :class:`PathExistsError` otherwise.

        :class:`WriteOutcomeUnknownError` if the store could not learn whether it landed.
        """

    @abstractmethod
    def replace_if_match(self, key: str, data: bytes, etag: str) -> str:
        """Writes only if the stored object has ``etag``; :class:`PreconditionFailedError` otherwise.

        :class:`WriteOutcomeUnknownError` if the store could not learn whether it landed.
        """

    @abstractmethod
    def delete(self, key: str) -> None:
        """Removes the object; no error if it is already gone."""

    @abstractmethod
    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        """Every object whose key starts with ``prefix``, in key order."""

    @abstractmethod
    def new_object(self, key: str) -> NewObject:
        """Starts writing an object that will be published create-if-absent."""

    def open_input(self, key: str) -> pa.NativeFile:
        """A random-access file for Parquet readers."""
        return arrow_reader(self.get(key))

    def delete_many(self, keys: builtins.list[str]) -> None:
        for key in keys:
            self.delete(key)

    def uri(self, key: str) -> str:
        return f"{self.root_uri.rstrip('/')}/{key}"

    def root_exists(self) -> bool:
        """Whether the warehouse is there. A bucket prefix always is (object stores have no
        folders; a missing bucket fails the first request), a local directory may not be."""
        return True

    def create_root(self) -> None:
        """Creates the warehouse where it can be missing; only table creation and ``init`` call it."""


def join_key(*parts: str) -> str:
    return "/".join(part.strip("/") for part in parts if part.strip("/"))

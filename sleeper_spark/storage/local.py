"""The local disk as an object store: the embedded default, no AWS needed.

create-if-absent publishes a fully written temporary file with ``os.link``, which fails if the
target exists — atomic on every POSIX file system, so exactly one racing writer wins.
replace-if-match holds an ``flock`` on a sidecar lock file while it compares the etag and
renames the new content into place; readers never take the lock, and ``os.replace`` keeps them
from seeing a partial object.
"""

from __future__ import annotations

import fcntl
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from stat import S_ISREG
from typing import BinaryIO

import pyarrow as pa

from sleeper_spark.errors import PathExistsError, PreconditionFailedError, StorageError
from sleeper_spark.storage.base import NewObject, ObjectInfo, ObjectStore

_TEMP_MARK = ".tmp-"
_LOCK_SUFFIX = ".cas-lock"


@contextmanager
def _storage_errors(what: str) -> Iterator[None]:
    """Maps the file system's failures (disk full, permissions) to StorageError, once, here."""
    try:
        yield
    except (FileNotFoundError, FileExistsError):
        raise
    except OSError as error:
        raise StorageError(f"{what}: {error.strerror or error}") from error


class LocalObjectStore(ObjectStore):
    def __init__(self, root: str | os.PathLike[str]) -> None:
        # The folder is not created here: opening a catalog to read must not turn a mistyped
        # path into an empty warehouse. Writes create the folders they need.
        self._root = Path(root).expanduser().resolve()

    @property
    def root_uri(self) -> str:
        return str(self._root)

    def root_exists(self) -> bool:
        return self._root.is_dir()

    def create_root(self) -> None:
        with _storage_errors(f"creating the warehouse {self._root}"):
            self._root.mkdir(parents=True, exist_ok=True)

    def path(self, key: str) -> Path:
        # Keys are built from escaped names, but a store is the last line of defence. A lexical
        # check is enough (no key segment may climb out) and spares a realpath() per request.
        if key.startswith("/") or ".." in key.split("/") or "\0" in key:
            raise StorageError(f"key {key!r} points outside the warehouse {self._root}")
        return self._root / key if key else self._root

    def get(self, key: str) -> bytes:
        try:
            return self.path(key).read_bytes()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):  # a folder is no object
            raise FileNotFoundError(key) from None

    def head(self, key: str) -> ObjectInfo | None:
        try:
            stat = self.path(key).stat()
        except (FileNotFoundError, NotADirectoryError):
            return None
        return _info(key, stat) if S_ISREG(stat.st_mode) else None  # a folder is no object

    def put(self, key: str, data: bytes) -> str:
        target = self.path(key)
        with _storage_errors(f"writing {self.uri(key)}"):
            temp = self._write_temp(target, data)
            os.replace(temp, target)
            return _etag(target.stat())

    def create_if_absent(self, key: str, data: bytes) -> str:
        target = self.path(key)
        with _storage_errors(f"writing {self.uri(key)}"):
            temp = self._write_temp(target, data)
            try:
                os.link(temp, target)
            except FileExistsError:
                raise PathExistsError(f"{self.uri(key)} exists already") from None
            finally:
                temp.unlink(missing_ok=True)
            return _etag(target.stat())

    def replace_if_match(self, key: str, data: bytes, etag: str) -> str:
        with _storage_errors(f"writing {self.uri(key)}"):
            return self._replace_if_match(self.path(key), key, data, etag)

    def _replace_if_match(self, target: Path, key: str, data: bytes, etag: str) -> str:
        temp = self._write_temp(target, data)
        try:
            with _locked(target.with_name(target.name + _LOCK_SUFFIX)):
                try:
                    current = _etag(target.stat())
                except FileNotFoundError:
                    raise PreconditionFailedError(f"{self.uri(key)} does not exist") from None
                if current != etag:
                    raise PreconditionFailedError(f"{self.uri(key)} changed since it was read")
                os.replace(temp, target)
                return _etag(target.stat())
        finally:
            temp.unlink(missing_ok=True)

    def delete(self, key: str) -> None:
        target = self.path(key)
        with _storage_errors(f"deleting {self.uri(key)}"):
            target.unlink(missing_ok=True)
            target.with_name(target.name + _LOCK_SUFFIX).unlink(missing_ok=True)

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        yield from self._walk(prefix, published=True)

    def abandoned(self, prefix: str) -> Iterator[ObjectInfo]:
        """Temporary files under ``prefix`` that writers left behind, in key order.

        A process that dies between writing a temporary file and publishing (or removing) it
        leaves the file where it was; :meth:`get` and :meth:`list` never show it, so nothing
        else would ever find it. Vacuum deletes the ones older than its cutoff: a young one may
        belong to a writer that is still running.
        """
        yield from self._walk(prefix, published=False)

    def _walk(self, prefix: str, *, published: bool) -> Iterator[ObjectInfo]:
        """Published objects (or, with ``published=False``, temporary files) under ``prefix``."""
        # Walk only the deepest directory the prefix names, so listing one table's log does
        # not stat the whole warehouse.
        directory = prefix.rsplit("/", 1)[0] if "/" in prefix else ""
        start = self.path(directory) if directory else self._root
        if not start.is_dir():
            return
        found: list[ObjectInfo] = []
        for dirpath, _dirs, names in os.walk(start):
            for name in names:
                temporary = _TEMP_MARK in name
                if temporary == published or (published and name.endswith(_LOCK_SUFFIX)):
                    continue
                full = Path(dirpath) / name
                key = full.relative_to(self._root).as_posix()
                if key.startswith(prefix):
                    try:
                        found.append(_info(key, full.stat()))
                    except FileNotFoundError:
                        continue  # published, removed or deleted while listing
        yield from sorted(found, key=lambda info: info.key)

    def new_object(self, key: str) -> NewObject:
        return _LocalNewObject(self.path(key), self.uri(key))

    def open_input(self, key: str) -> pa.NativeFile:
        try:
            return pa.OSFile(str(self.path(key)), mode="r")
        except FileNotFoundError:
            raise FileNotFoundError(key) from None

    def _write_temp(self, target: Path, data: bytes) -> Path:
        target.parent.mkdir(parents=True, exist_ok=True)
        temp = target.with_name(f"{target.name}{_TEMP_MARK}{uuid.uuid4().hex}")
        with open(temp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        return temp


class _LocalNewObject(NewObject):
    def __init__(self, target: Path, uri: str) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        self._target = target
        self._uri = uri
        self._temp = target.with_name(f"{target.name}{_TEMP_MARK}{uuid.uuid4().hex}")
        self._handle: BinaryIO = open(self._temp, "wb")  # noqa: SIM115 - closed in publish/discard

    def file(self) -> BinaryIO:
        return self._handle

    def publish(self) -> None:
        with _storage_errors(f"writing {self._uri}"):
            self._publish()

    def _publish(self) -> None:
        self._handle.flush()
        os.fsync(self._handle.fileno())
        self._handle.close()
        try:
            os.link(self._temp, self._target)
        except FileExistsError:
            raise PathExistsError(f"{self._uri} exists already; data files are never overwritten") from None
        finally:
            self._temp.unlink(missing_ok=True)

    def discard(self) -> None:
        self._handle.close()
        self._temp.unlink(missing_ok=True)


class _locked:
    """An exclusive ``flock`` on a sidecar file, held across processes on this machine."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._fd = -1

    def __enter__(self) -> None:
        self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self._fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)


def _etag(stat: os.stat_result) -> str:
    # A new inode on every replace makes the etag change even when size and time do not.
    return f"{stat.st_ino:x}-{stat.st_mtime_ns:x}-{stat.st_size:x}"


def _info(key: str, stat: os.stat_result) -> ObjectInfo:
    modified = datetime.fromtimestamp(stat.st_mtime, tz=timezone.utc)
    return ObjectInfo(key=key, size=stat.st_size, last_modified=modified, etag=_etag(stat))

"""Stores for the conditional-write tests.

* :class:`PlainStore` wraps a real store and refuses its conditional methods, so that a
  strategy that should only GET, HEAD, PUT, DELETE and LIST is caught if it does more; it is
  how "native switched off" is tested on SeaweedFS and on the local disk.
* :class:`MemoryStore` is a strongly consistent store in a dict, for fast unit tests.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

from sleeper_spark.storage import NewObject, ObjectInfo, ObjectStore


class ConditionalMethodUsedError(AssertionError):
    """A strategy called the store's own create-if-absent or replace-if-match."""


class PlainStore(ObjectStore):
    """A store without conditional writes: GET, HEAD, PUT, DELETE and LIST only."""

    def __init__(self, inner: ObjectStore) -> None:
        self.inner = inner

    @property
    def root_uri(self) -> str:
        return self.inner.root_uri

    def get(self, key: str) -> bytes:
        return self.inner.get(key)

    def head(self, key: str) -> ObjectInfo | None:
        return self.inner.head(key)

    def put(self, key: str, data: bytes) -> str:
        return self.inner.put(key, data)

    def delete(self, key: str) -> None:
        self.inner.delete(key)

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        return self.inner.list(prefix)

    def create_if_absent(self, key: str, data: bytes) -> str:
        raise ConditionalMethodUsedError(f"create_if_absent({key!r}) reached a store without conditional writes")

    def replace_if_match(self, key: str, data: bytes, etag: str) -> str:
        raise ConditionalMethodUsedError(f"replace_if_match({key!r}) reached a store without conditional writes")

    def new_object(self, key: str) -> NewObject:
        raise ConditionalMethodUsedError(f"new_object({key!r}) reached a store without conditional writes")


EPOCH = datetime(2024, 1, 1, tzinfo=timezone.utc)


class MemoryStore(ObjectStore):
    """Objects in a dict behind a lock: every operation is atomic and strongly consistent.

    Etags are ``<n>`` from one counter, so every write gets a new one. ``now`` sets the
    timestamp of writes (tests move it to age intents and locks).
    """

    def __init__(self) -> None:
        self.objects: dict[str, tuple[bytes, ObjectInfo]] = {}
        self.now = EPOCH
        self.requests: list[tuple[str, str]] = []
        self._counter = 0
        self._lock = threading.Lock()

    @property
    def root_uri(self) -> str:
        return "memory://"

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)

    def get(self, key: str) -> bytes:
        with self._lock:
            self.requests.append(("get", key))
            if key not in self.objects:
                raise FileNotFoundError(key)
            return self.objects[key][0]

    def head(self, key: str) -> ObjectInfo | None:
        with self._lock:
            self.requests.append(("head", key))
            found = self.objects.get(key)
            return found[1] if found else None

    def put(self, key: str, data: bytes) -> str:
        with self._lock:
            self.requests.append(("put", key))
            self._counter += 1
            info = ObjectInfo(key, len(data), self.now, f'"{self._counter}"')
            self.objects[key] = (data, info)
            return info.etag

    def delete(self, key: str) -> None:
        with self._lock:
            self.requests.append(("delete", key))
            self.objects.pop(key, None)

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        with self._lock:
            self.requests.append(("list", prefix))
            found = sorted((info for _, info in self.objects.values() if info.key.startswith(prefix)),
                           key=lambda info: info.key)
        return iter(found)

    def create_if_absent(self, key: str, data: bytes) -> str:
        raise ConditionalMethodUsedError("MemoryStore has no conditional writes")

    def replace_if_match(self, key: str, data: bytes, etag: str) -> str:
        raise ConditionalMethodUsedError("MemoryStore has no conditional writes")

    def new_object(self, key: str) -> NewObject:
        raise ConditionalMethodUsedError("MemoryStore has no conditional writes")

    def delete_many(self, keys: builtins.list[str]) -> None:
        for key in keys:
            self.delete(key)

"""Conditional-write strategies: create-if-absent and replace-if-match, whatever the store.

The object-store transaction log and the state-snapshot pointer need both operations to be
atomic. ``native`` uses the store's own support (S3 ``If-None-Match``/``If-Match``, the local
disk's ``link``/``flock``); stores without it get the same guarantees from a DynamoDB lock or
from put-and-verify intent files.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from sleeper_spark.storage.base import ObjectStore


class ConditionalWriteStrategy(ABC):
    """The two conditional operations the log and the pointer are built on."""

    @abstractmethod
    def create_if_absent(self, key: str, data: bytes) -> str:
        """Writes only if ``key`` does not exist; :class:`PathExistsError` otherwise. Returns the etag."""

    @abstractmethod
    def replace_if_match(self, key: str, data: bytes, etag: str) -> str:
        """Writes only while ``key`` has ``etag``; :class:`PreconditionFailedError` otherwise."""

    def ensure_infrastructure(self) -> None:
        """Creates what the strategy needs outside the store (the DynamoDB lock table); idempotent."""


class NativeConditionalWrites(ConditionalWriteStrategy):
    """The store's own conditional requests."""

    def __init__(self, store: ObjectStore) -> None:
        self._store = store

    def create_if_absent(self, key: str, data: bytes) -> str:
        return self._store.create_if_absent(key, data)

    def replace_if_match(self, key: str, data: bytes, etag: str) -> str:
        return self._store.replace_if_match(key, data, etag)

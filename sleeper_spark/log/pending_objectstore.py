"""Pending appends as objects on the store: ``<table>/_log/pending/<key>.json``, one per record.

A put is a plain PUT: the key is the writer's own, so there is nothing to race for, and a
repeated put stores the same bytes again. A listing is one LIST of the folder, then a GET of
each object (in parallel: the committer that lists is the one every waiting writer waits for).
An object deleted between the LIST and its GET was committed meanwhile and is left out, as
the contract allows. Stores with read-after-write consistency and strongly consistent listings
(S3, the local disk) give the "every acknowledged put is listed" rule.

Vacuum leaves these objects alone (:func:`sleeper_spark.layout.kind_of` calls them ``OTHER``):
a record is removed by whoever commits its appends, and dropping the table removes the folder.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

from sleeper_spark.layout import pending_key, pending_prefix, pending_record_key
from sleeper_spark.log.pending import PendingAppends, PendingRecord
from sleeper_spark.storage import ObjectStore

GET_THREADS = 16  # GETs of one listing in flight at once


class ObjectStorePendingAppends(PendingAppends):
    """The pending appends of the table at ``table_root`` on ``store``."""

    def __init__(self, store: ObjectStore, table_root: str) -> None:
        self._store = store
        self._root = table_root

    def put(self, key: str, body: bytes) -> None:
        self._store.put(pending_key(self._root, key), body)

    def list(self) -> list[PendingRecord]:
        prefix = pending_prefix(self._root)
        keys = [key for info in self._store.list(prefix) if (key := pending_record_key(info.key[len(prefix):]))]
        if len(keys) <= 1:
            found = [self._get(key) for key in keys]
        else:
            with ThreadPoolExecutor(min(GET_THREADS, len(keys)), thread_name_prefix="pending-get") as pool:
                found = list(pool.map(self._get, keys))
        return [record for record in found if record is not None]

    def _get(self, key: str) -> PendingRecord | None:
        try:
            return PendingRecord(key, self._store.get(pending_key(self._root, key)))
        except FileNotFoundError:
            return None  # committed and deleted since the LIST

    def delete(self, key: str) -> None:
        self._store.delete(pending_key(self._root, key))

    def delete_many(self, keys: Iterable[str]) -> None:
        self._store.delete_many([pending_key(self._root, key) for key in keys])

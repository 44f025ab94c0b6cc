"""Transactions to log bytes and back, spilling big bodies to the object store.

A body of ``SPILL_THRESHOLD`` bytes or more (DynamoDB items stop at 400 KB) is written to
``<table>/_log/bodies/<sha256>.json`` and the log entry holds only its key, its checksum and
the fields a rebase changes (``parent_id``, ``committed_at``). The key is the body's hash, so a
retried commit writes the body once, and a body whose entry never landed is garbage for vacuum.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone

from pydantic import ValidationError

from sleeper_spark.errors import CorruptLogError, PathExistsError
from sleeper_spark.layout import body_key
from sleeper_spark.models import Transaction, decode_transaction, encode_transaction
from sleeper_spark.models.spill import SpillPointer
from sleeper_spark.models.transactions import KNOWN_TYPES
from sleeper_spark.storage import ObjectStore, join_key

SPILL_THRESHOLD = 200 * 1024
_STABLE_TIME = datetime(1970, 1, 1, tzinfo=timezone.utc)


class TransactionCodec:
    def __init__(self, store: ObjectStore, table_root: str, table_name: str,
                 spill_threshold: int = SPILL_THRESHOLD) -> None:
        self._store = store
        self._root = table_root
        self._name = table_name
        self._threshold = spill_threshold

    def encode(self, txn: Transaction) -> bytes:
        body = encode_transaction(txn)
        if len(body) < self._threshold:
            return body
        # The fields a rebase changes live in the entry, so every attempt of a commit writes
        # the same body bytes: one object, however many retries.
        stable = encode_transaction(txn.model_copy(update={"parent_id": None, "committed_at": _STABLE_TIME}))
        digest = hashlib.sha256(stable).hexdigest()
        key = body_key(self._root, digest)
        try:
            self._store.create_if_absent(key, stable)
        except PathExistsError:
            pass  # an earlier attempt of this same commit wrote it
        return SpillPointer(body=key.removeprefix(self._root + "/"), checksum=f"sha256:{digest}",
                            parent_id=txn.parent_id, committed_at=txn.committed_at).encode()

    def decode(self, number: int, data: bytes) -> Transaction:
        try:
            if SpillPointer.is_pointer(data):
                return self._load_spilled(number, SpillPointer.decode(data))
            return decode_transaction(data)
        except (ValidationError, ValueError, KeyError) as error:
            newer = _unknown_type(data)
            if newer is not None:
                raise CorruptLogError(
                    f"table {self._name!r}: transaction {number} is of type {newer!r}, which this version of "
                    "sleeper_spark does not know: a newer version wrote it. Upgrade sleeper_spark to read and write "
                    "this table (the entry is not damaged; do not repair it)"
                ) from None
            raise self._damaged(number, _first_line(error)) from None

    def _damaged(self, number: int, why: str) -> CorruptLogError:
        return CorruptLogError(
            f"table {self._name!r}: transaction {number} cannot be decoded ({why}). Versions before {number} "
            f"still read (time travel). To read and write past it, restore the entry from a backup, or record "
            f"it as lost with table.record_lost_transaction({number}) or `sleeper-spark repair {self._name} "
            f"{number}` (what it did is then gone from the table)"
        )

    def spilled_key(self, data: bytes) -> str | None:
        """The table-relative body key an entry points to, if it was spilled."""
        return SpillPointer.decode(data).body if SpillPointer.is_pointer(data) else None

    def _load_spilled(self, number: int, pointer: SpillPointer) -> Transaction:
        key = join_key(self._root, pointer.body)
        try:
            body = self._store.get(key)
        except FileNotFoundError:
            raise self._damaged(number, f"its body {key} is missing") from None
        if f"sha256:{hashlib.sha256(body).hexdigest()}" != pointer.checksum:
            raise self._damaged(number, f"its body {key} is damaged")
        txn = decode_transaction(body)
        return txn.model_copy(update={"parent_id": pointer.parent_id, "committed_at": pointer.committed_at})


def _unknown_type(data: bytes) -> str | None:
    """The ``type`` of an entry that is well-formed JSON of a transaction type this version lacks."""
    try:
        decoded = json.loads(data)
    except ValueError:
        return None
    kind = decoded.get("type") if isinstance(decoded, dict) else None
    return kind if isinstance(kind, str) and kind not in KNOWN_TYPES else None


def _first_line(error: Exception) -> str:
    if isinstance(error, ValidationError):
        return str(error.errors()[0]["msg"])
    return str(error).splitlines()[0]

"""Golden files pin what the table format writes besides transactions and state snapshots.

Lock files, intents and namespace records on the object store, and every item kind in DynamoDB
(transaction log, pending appends, state pointer, catalog registry and namespace records, the lock
table of the ``dynamodb-lock`` strategy): tables written by a released version must still read. Each test builds the stored form through the
code that writes it and compares it byte for byte with its file in ``tests/golden/``;
``SLEEPER_UPDATE_GOLDEN=1`` rewrites them (review the diff: that is a format change).
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import socket
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from sleeper_spark.log.aws.dynamodb_log import DynamoDBTransactionLog
from sleeper_spark.log.aws.dynamodb_registry import DynamoDBTableRegistry
from sleeper_spark.log.aws.dynamodb_snapshots_table import DynamoDBStatePointer
from sleeper_spark.log.aws.pending_dynamodb import DynamoDBPendingAppends
from sleeper_spark.log.registry import TableEntry
from sleeper_spark.models import Namespace
from sleeper_spark.models.dynamodb_items import (
    CatalogEntryItem,
    DynamoDBItem,
    LockRecordItem,
    NamespaceItem,
    PendingItem,
    StatePointerItem,
    TransactionItem,
)
from sleeper_spark.models.lock_files import IntentBody, LockFileBody
from sleeper_spark.models.spill import SpillPointer
from sleeper_spark.storage.dynamodb_lock import DynamoDBLockConditionalWrites
from sleeper_spark.storage.local import LocalObjectStore
from sleeper_spark.storage.locks import LockInfo, _decode, _encode
from sleeper_spark.storage.put_and_verify import _intent_body
from tests.models.golden import GOLDEN, check_golden

AT = datetime(2024, 5, 17, 12, 30, 0, tzinfo=timezone.utc)
WRITTEN_AT = "2024-05-17T12:30:00+00:00"  # stands in for the clock's time of each put
SALES_EU = Namespace(name="sales.eu", comment="Orders of the EU shops", properties={"owner": "finance"},
                     created_at=AT)


@pytest.fixture
def fixed_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """Host, pid and random tokens that stored bodies carry, fixed so that their bytes are."""
    monkeypatch.setattr(socket, "gethostname", lambda: "worker-1")
    monkeypatch.setattr(os, "getpid", lambda: 4242)
    monkeypatch.setattr(secrets, "token_hex", lambda n=16: "ab" * n)


# -- object store bodies ---------------------------------------------------------------------


def test_the_lock_file_body_keeps_its_stored_form() -> None:
    # Given a lock as a holder records it
    info = LockInfo("locks/compaction.WRIT", "write", "worker-1", 4242, "nightly compaction", AT,
                    AT + timedelta(hours=1), "0123456789abcdef")
    # When it is encoded, Then its bytes are the released ones
    stored = _encode(info)
    check_golden("lock_file.json", stored.decode() + "\n")
    # And they read back as the same lock
    assert _decode(info.key, (GOLDEN / "lock_file.json").read_bytes(), AT, 600.0) == info


def test_the_intent_file_body_keeps_its_stored_form(fixed_host: None) -> None:
    # Given a put-and-verify writer's intent
    stored = _intent_body("_log/00000000000000000002.json", AT)
    # Then its bytes are the released ones
    check_golden("intent_file.json", stored.decode() + "\n")
    # And lock_status reads it as an intent of that writer
    info = _decode("_log/00000000000000000002.json.INTENT.1", (GOLDEN / "intent_file.json").read_bytes(), AT, 600.0)
    assert (info.kind, info.host, info.pid, info.acquired_at) == ("intent", "worker-1", 4242, AT)


def test_the_object_store_catalog_entry_and_state_pointer_keep_their_stored_form(tmp_path: Path) -> None:
    # Given a table's registry entry and its state pointer on an object store
    from sleeper_spark.log.registry import ObjectStoreTableRegistry
    from sleeper_spark.log.state_snapshots import ObjectStoreStatePointer
    from sleeper_spark.storage.conditional import NativeConditionalWrites

    store = LocalObjectStore(str(tmp_path))
    conditional = NativeConditionalWrites(store)
    ObjectStoreTableRegistry(store, conditional).register(TableEntry(name="events", table_id="3f2c",
                                                                     root="events", created_at=AT))
    ObjectStoreStatePointer(store, conditional, "events").advance(120)
    # Then both files hold the released bytes
    stored = {info.key: store.get(info.key).decode() for info in store.list("")}
    check_golden("object_store_files.json", json.dumps(stored, indent=2, sort_keys=True) + "\n")


def test_the_object_store_namespace_record_keeps_its_stored_form(tmp_path: Path) -> None:
    # Given a created namespace recorded on an object store
    from sleeper_spark.log.registry import ObjectStoreTableRegistry
    from sleeper_spark.storage.conditional import NativeConditionalWrites

    store = LocalObjectStore(str(tmp_path))
    ObjectStoreTableRegistry(store, NativeConditionalWrites(store)).register_namespace(SALES_EU)
    # Then its file has the released key and bytes
    stored = {info.key: store.get(info.key).decode() for info in store.list("")}
    check_golden("object_store_namespace_files.json", json.dumps(stored, indent=2, sort_keys=True) + "\n")
    # And they read back as the same namespace
    (record,) = json.loads((GOLDEN / "object_store_namespace_files.json").read_text()).values()
    assert Namespace.model_validate_json(record) == SALES_EU


# -- DynamoDB items --------------------------------------------------------------------------


class _RecordingClient:
    """A DynamoDB client that records each item put and answers every put with success."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def put_item(self, **request: Any) -> dict[str, Any]:
        self.items.append(request["Item"])
        return {}


def _as_json(item: dict[str, Any]) -> str:
    """A low-level DynamoDB item as JSON: binary values in base64, the put's clock time fixed."""

    def plain(value: Any) -> Any:
        if isinstance(value, (bytes, bytearray)):
            return base64.b64encode(bytes(value)).decode()
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        return value

    fixed = dict(item)
    if "written_at" in fixed:
        datetime.fromisoformat(fixed["written_at"]["S"])  # an ISO time, whatever the clock said
        fixed["written_at"] = {"S": WRITTEN_AT}
    return json.dumps({name: plain(value) for name, value in fixed.items()}, indent=2) + "\n"


def test_the_transaction_log_items_keep_their_stored_form() -> None:
    # Given a transaction and a spilled transaction appended to the DynamoDB log
    client = _RecordingClient()
    log = DynamoDBTransactionLog(client, "transactions", "3f2c")  # type: ignore[arg-type]
    body = b'{"type": "add_files", "snapshot_id": "s2"}'  # the log stores a body as opaque bytes
    spilled = SpillPointer(body="_log/bodies/ab12.json", checksum="sha256:ab12", parent_id="s2", committed_at=AT)
    log.append(2, body)
    log.append(3, spilled.encode())
    # Then both items have the released attributes and values
    assert [bytes(i["body"]["B"]) for i in client.items] == [body, spilled.encode()]
    check_golden("dynamodb_transaction_item.json", _as_json(client.items[0]))
    check_golden("dynamodb_spilled_transaction_item.json", _as_json(client.items[1]))


def test_the_pending_append_item_keeps_its_stored_form() -> None:
    # Given a pending append put at a known time
    client = _RecordingClient()
    pending = DynamoDBPendingAppends(client, "transactions", "3f2c", now=lambda: AT)  # type: ignore[arg-type]
    pending.put("0123456789abcdef0123456789abcdef", b'{"after": 7, "members": []}')
    # Then its item has the released attributes and values, and expires a week after the put
    item = client.items[0]
    assert int(item["expires_at"]["N"]) == int((AT + timedelta(days=7)).timestamp())
    check_golden("dynamodb_pending_item.json", _as_json(item))


def test_the_state_pointer_item_keeps_its_stored_form() -> None:
    client = _RecordingClient()
    DynamoDBStatePointer(client, "snapshots", "3f2c").advance(120)  # type: ignore[arg-type]
    check_golden("dynamodb_state_pointer_item.json", _as_json(client.items[0]))


def test_the_catalog_entry_item_keeps_its_stored_form() -> None:
    client = _RecordingClient()
    registry = DynamoDBTableRegistry(client, "snapshots", warehouse="s3://bucket/warehouse")  # type: ignore[arg-type]
    registry.register(TableEntry(name="events", table_id="3f2c", root="events", created_at=AT))
    check_golden("dynamodb_catalog_entry_item.json", _as_json(client.items[0]))


def test_the_namespace_item_keeps_its_stored_form() -> None:
    client = _RecordingClient()
    registry = DynamoDBTableRegistry(client, "snapshots", warehouse="s3://bucket/warehouse")  # type: ignore[arg-type]
    registry.register_namespace(SALES_EU)
    check_golden("dynamodb_namespace_item.json", _as_json(client.items[0]))
    assert Namespace.model_validate_json(NamespaceItem.from_item(client.items[0]).entry) == SALES_EU


def test_the_lock_table_item_keeps_its_stored_form(tmp_path: Path, fixed_host: None) -> None:
    # Given a dynamodb-lock write of a new object
    client = _RecordingClient()
    store = LocalObjectStore(str(tmp_path))
    writes = DynamoDBLockConditionalWrites(store, "locks", client=client,  # type: ignore[arg-type]
                                           wall_clock=lambda: AT.timestamp())
    client.delete_item = lambda **request: {}  # type: ignore[attr-defined]
    writes.create_if_absent("_log/00000000000000000002.json", b"{}")
    # Then its lock record has the released attributes and values
    item = client.items[0]
    item["path"] = {"S": item["path"]["S"].replace(store.uri(""), "<root>/")}
    check_golden("dynamodb_lock_item.json", _as_json(item))


# -- the models read what released writers stored --------------------------------------------


def _golden_item(name: str) -> dict[str, Any]:
    """A golden item file back as the low-level item the DynamoDB client returns."""
    stored = json.loads((GOLDEN / name).read_text())
    return {attr: {kind: base64.b64decode(v) if kind == "B" else v for kind, v in value.items()}
            for attr, value in stored.items()}


@pytest.mark.parametrize(("name", "model"), [
    ("dynamodb_transaction_item.json", TransactionItem),
    ("dynamodb_spilled_transaction_item.json", TransactionItem),
    ("dynamodb_pending_item.json", PendingItem),
    ("dynamodb_state_pointer_item.json", StatePointerItem),
    ("dynamodb_catalog_entry_item.json", CatalogEntryItem),
    ("dynamodb_namespace_item.json", NamespaceItem),
    ("dynamodb_lock_item.json", LockRecordItem),
])
def test_each_dynamodb_item_kind_reads_back_as_stored(name: str, model: type[DynamoDBItem]) -> None:
    # Given an item as a released writer stored it
    item = _golden_item(name)
    # When its model reads it and writes it again, Then not an attribute has changed
    assert model.from_item(item).to_item() == item


def test_the_lock_file_models_read_back_as_stored() -> None:
    for name, model in (("lock_file.json", LockFileBody), ("intent_file.json", IntentBody)):
        stored = (GOLDEN / name).read_bytes().rstrip(b"\n")
        assert model.decode(stored).encode() == stored

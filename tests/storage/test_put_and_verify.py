"""Put-and-verify on a strongly consistent in-memory store: requests, failures, stale intents."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from sleeper_spark.errors import (
    LockHeldError,
    PathExistsError,
    PreconditionFailedError,
    StaleIntentError,
    StorageError,
    WriteOutcomeUnknownError,
)
from sleeper_spark.storage.put_and_verify import (
    PutAndVerifySettings,
    intent_key,
    is_intent_of,
    normal_etag,
)
from sleeper_spark.storage.put_and_verify_writes import PutAndVerifyConditionalWrites
from tests.storage.stores import MemoryStore

KEY = "t/_log/00000000000000000001.json"


def writes(store: MemoryStore, **settings: float) -> tuple[PutAndVerifyConditionalWrites, list[float]]:
    sleeps: list[float] = []
    conditional = PutAndVerifyConditionalWrites(
        store, PutAndVerifySettings(**settings), sleep=sleeps.append, now=lambda: store.now  # type: ignore[arg-type]
    )
    return conditional, sleeps


def kinds(store: MemoryStore) -> list[str]:
    return [f"{kind} {'intent' if '.INTENT.' in key else key}" for kind, key in store.requests]


def test_an_uncontended_create_is_five_requests() -> None:
    store = MemoryStore()
    conditional, sleeps = writes(store)
    etag = conditional.create_if_absent(KEY, b"x")
    assert kinds(store) == ["put intent", f"list {KEY}", f"head {KEY}", f"put {KEY}", "delete intent"]
    assert store.objects[KEY][1].etag == etag and list(store.objects) == [KEY] and not sleeps


def test_a_create_of_an_existing_key_fails_after_one_look() -> None:
    store = MemoryStore()
    store.put(KEY, b"there")
    store.requests.clear()
    conditional, _ = writes(store)
    with pytest.raises(PathExistsError):
        conditional.create_if_absent(KEY, b"x")
    assert kinds(store) == ["put intent", f"list {KEY}", "delete intent"]
    assert list(store.objects) == [KEY]


def test_replace_compares_etags_without_quotes() -> None:
    store = MemoryStore()
    conditional, _ = writes(store)
    first = conditional.create_if_absent(KEY, b"1")
    second = conditional.replace_if_match(KEY, b"2", first.strip('"'))
    with pytest.raises(PreconditionFailedError):
        conditional.replace_if_match(KEY, b"3", first)
    assert normal_etag(second) != normal_etag(first) and store.get(KEY) == b"2"
    assert normal_etag('W/"abc"') == "abc"


def test_a_writer_in_flight_makes_others_back_off_then_give_up() -> None:
    store = MemoryStore()
    store.put(intent_key(KEY, "other"), b"{}")  # fresh: another writer is between its steps
    conditional, sleeps = writes(store, max_attempts=3, base_delay_s=0.1, max_delay_s=0.3)
    with pytest.raises(LockHeldError, match="other writers kept intent files") as raised:
        conditional.create_if_absent(KEY, b"x")
    assert not isinstance(raised.value, StaleIntentError)
    assert len(sleeps) == 3 and all(0 <= s <= 0.3 for s in sleeps)
    assert [i.key for i in conditional.intents(KEY)] == [intent_key(KEY, "other")]  # ours are gone
    # Only the first attempt wrote an intent: later ones looked first and held back.
    assert [k for k in kinds(store) if k == "put intent"] == ["put intent"] * 2


def test_the_target_appearing_while_backing_off_is_a_definitive_answer() -> None:
    store = MemoryStore()
    store.put(intent_key(KEY, "other"), b"{}")
    sleeps: list[float] = []

    def other_finishes(seconds: float) -> None:
        sleeps.append(seconds)
        store.put(KEY, b"theirs")
        store.delete(intent_key(KEY, "other"))

    conditional = PutAndVerifyConditionalWrites(store, sleep=other_finishes, now=lambda: store.now)
    with pytest.raises(PathExistsError):
        conditional.create_if_absent(KEY, b"ours")
    assert store.get(KEY) == b"theirs" and len(sleeps) == 1


def test_a_stale_intent_fails_at_once_naming_it_and_can_be_broken() -> None:
    store = MemoryStore()
    store.put(intent_key(KEY, "crashed"), b"{}")
    store.advance(700)
    conditional, sleeps = writes(store, stale_after_s=600)
    with pytest.raises(StaleIntentError, match=r"crashed.*break_stale_intents"):
        conditional.create_if_absent(KEY, b"x")
    assert not sleeps
    assert conditional.break_stale_intents(KEY, older_than_s=10**9) == []
    store.put(intent_key(KEY, "young"), b"{}")
    assert conditional.break_stale_intents(KEY, older_than_s=60) == [intent_key(KEY, "crashed")]
    assert [i.key for i in conditional.intents(KEY)] == [intent_key(KEY, "young")]


def test_a_failed_target_put_keeps_the_intent_and_reports_an_unknown_outcome() -> None:
    class LosesTargetPuts(MemoryStore):
        def put(self, key: str, data: bytes) -> str:
            if key == KEY:
                raise StorageError("read timeout")
            return super().put(key, data)

    store = LosesTargetPuts()
    conditional, _ = writes(store)
    with pytest.raises(WriteOutcomeUnknownError, match="may have landed"):
        conditional.create_if_absent(KEY, b"x")
    assert len(conditional.intents(KEY)) == 1  # holds off the others until someone looks


def test_a_failed_intent_removal_after_the_write_still_reports_success(caplog: pytest.LogCaptureFixture) -> None:
    class CannotDelete(MemoryStore):
        def delete(self, key: str) -> None:
            raise StorageError("access denied")

    store = CannotDelete()
    conditional, _ = writes(store)
    with caplog.at_level(logging.WARNING):
        assert conditional.create_if_absent(KEY, b"x")
    assert store.get(KEY) == b"x" and "could not remove its intent" in caplog.text


def test_a_failed_listing_removes_the_intent_and_raises() -> None:
    class CannotList(MemoryStore):
        def list(self, prefix: str):  # type: ignore[no-untyped-def]
            raise StorageError("list failed")

    store = CannotList()
    conditional, _ = writes(store)
    with pytest.raises(StorageError, match="list failed"):
        conditional.create_if_absent(KEY, b"x")
    assert store.objects == {}


def test_intent_names() -> None:
    assert is_intent_of(intent_key(KEY, "ab12"), KEY)
    assert not is_intent_of(KEY, KEY)
    assert not is_intent_of(KEY + ".json", KEY)
    assert not is_intent_of(f"{KEY}.INTENT.x/y", KEY)
    assert timedelta(seconds=PutAndVerifySettings().stale_after_s) == timedelta(minutes=10)

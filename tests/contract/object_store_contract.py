"""The object store contract (see sleeper_spark/storage/base.py), as a suite every store subclasses.

A subclass provides ``store``: an empty store. Races between writers of one key are the
conditional-write strategies' contract (tests/storage/test_contract.py), not repeated here.
"""

from __future__ import annotations

import pickle
import threading
from datetime import datetime, timedelta, timezone

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sleeper_spark.errors import PathExistsError, PreconditionFailedError
from sleeper_spark.storage import ObjectStore

CLOCK_TOLERANCE = timedelta(minutes=5)


def _etag(etag: str) -> str:
    """An etag without the quotes S3 puts around it, for comparing."""
    return etag.strip('"')


def _keys(store: ObjectStore, prefix: str) -> list[str]:
    return [info.key for info in store.list(prefix)]


class ObjectStoreContract:
    @pytest.fixture
    def store(self) -> ObjectStore:
        raise NotImplementedError

    # -- put, get, head --------------------------------------------------------------------

    def test_put_then_get_returns_the_bytes(self, store: ObjectStore) -> None:
        # Given an object put once, When it is put again with other bytes
        first = store.put("t/a.bin", b"hello")
        assert store.get("t/a.bin") == b"hello"
        second = store.put("t/a.bin", b"bye")
        # Then a put overwrites: the new bytes are read, under a new etag
        assert store.get("t/a.bin") == b"bye"
        assert _etag(second) != _etag(first)

    def test_an_empty_object_is_an_object(self, store: ObjectStore) -> None:
        # Given an object with no bytes, When it is read and looked at, Then it exists with size 0
        store.put("t/empty", b"")
        assert store.get("t/empty") == b""
        info = store.head("t/empty")
        assert info is not None and info.size == 0

    def test_get_of_a_missing_key_raises_file_not_found(self, store: ObjectStore) -> None:
        # Given a store holding one object, When keys it does not hold are read
        store.put("t/present", b"x")
        # Then each read raises FileNotFoundError, also under a folder that does not exist
        for missing in ("t/absent", "t/present/below", "nowhere/at/all"):
            with pytest.raises(FileNotFoundError):
                store.get(missing)

    def test_head_reports_size_etag_and_time(self, store: ObjectStore) -> None:
        # Given an object just written
        before = datetime.now(timezone.utc)
        etag = store.put("t/h.bin", b"12345")
        # When it is looked at
        info = store.head("t/h.bin")
        # Then HEAD names its key, size and etag (the one the put returned) and a recent UTC-aware time
        assert info is not None
        assert (info.key, info.size, _etag(info.etag)) == ("t/h.bin", 5, _etag(etag))
        assert info.last_modified.tzinfo is not None
        assert before - CLOCK_TOLERANCE <= info.last_modified <= datetime.now(timezone.utc) + CLOCK_TOLERANCE

    def test_head_of_a_missing_key_is_none(self, store: ObjectStore) -> None:
        # Given an object at "t/h", When neighbouring keys are looked at, Then none of them exists
        store.put("t/h", b"x")
        assert store.head("t/missing") is None
        assert store.head("t/h/below") is None

    def test_a_folder_of_keys_is_not_an_object(self, store: ObjectStore) -> None:
        # Given objects under "t/folder/"
        store.put("t/folder/a", b"x")
        # When the folder itself is read or looked at, Then it does not exist as an object
        for folder in ("t/folder", "t"):
            assert store.head(folder) is None
            with pytest.raises(FileNotFoundError):
                store.get(folder)

    def test_a_pickled_copy_sees_writes_at_once_both_ways(self, store: ObjectStore) -> None:
        # Given a copy of the store as a Spark worker receives it (pickled)
        copy = pickle.loads(pickle.dumps(store))
        # When each writes, Then the other reads the write straight away
        store.put("t/from-original", b"1")
        assert copy.get("t/from-original") == b"1"
        copy.put("t/from-copy", b"2")
        assert store.get("t/from-copy") == b"2"
        assert copy.root_uri == store.root_uri

    def test_a_reader_never_sees_a_partial_object(self, store: ObjectStore) -> None:
        # Given an object rewritten over and over with one of two big payloads
        payloads = (b"a" * 2**20, b"b" * 2**20)
        store.put("t/big", payloads[0])
        stop = threading.Event()
        torn: list[str] = []
        reads = [0]

        def read_while_written() -> None:
            while not stop.is_set():
                reads[0] += 1
                try:
                    data = store.get("t/big")
                except Exception as error:  # a read that fails midway is as wrong as a torn one
                    torn.append(repr(error))
                    continue
                if data not in payloads:
                    torn.append(f"{len(data)} bytes of neither payload")

        reader = threading.Thread(target=read_while_written)
        reader.start()
        # When a reader reads it all the while (at least 20 writes and 5 reads)
        try:
            round_ = 0
            while round_ < 20 or reads[0] < 5:
                store.put("t/big", payloads[round_ % 2])
                round_ += 1
        finally:
            stop.set()
            reader.join()
        # Then every read saw one whole payload
        assert torn == []

    def test_keys_with_spaces_unicode_and_symbols_round_trip(self, store: ObjectStore) -> None:
        # Given a key with characters that URLs and shells treat specially
        key = "t/day=2024-01-01/ünï cödé 100% +x=&#,;.bin"
        # When it is written, listed and read, Then the key comes back exactly
        store.put(key, b"u")
        assert store.get(key) == b"u"
        assert _keys(store, "t/day=2024-01-01/") == [key]
        head = store.head(key)
        assert head is not None and head.key == key

    # -- conditional writes ----------------------------------------------------------------

    def test_create_if_absent_writes_once_and_keeps_the_first_bytes(self, store: ObjectStore) -> None:
        # Given an object created if absent
        etag = store.create_if_absent("t/_log/1.json", b"first")
        # When it is created again
        with pytest.raises(PathExistsError):
            store.create_if_absent("t/_log/1.json", b"second")
        # Then the second write is refused and the first bytes and etag stay
        assert store.get("t/_log/1.json") == b"first"
        head = store.head("t/_log/1.json")
        assert head is not None and _etag(head.etag) == _etag(etag)

    def test_create_if_absent_refuses_a_key_written_by_put(self, store: ObjectStore) -> None:
        # Given an object written unconditionally, When it is created if absent, Then it is refused
        store.put("t/plain", b"put")
        with pytest.raises(PathExistsError):
            store.create_if_absent("t/plain", b"created")
        assert store.get("t/plain") == b"put"

    def test_create_if_absent_after_a_delete_writes_again(self, store: ObjectStore) -> None:
        # Given an object created and then deleted, When it is created again, Then it is written
        store.create_if_absent("t/again", b"one")
        store.delete("t/again")
        store.create_if_absent("t/again", b"two")
        assert store.get("t/again") == b"two"

    def test_replace_if_match_with_the_current_etag_replaces(self, store: ObjectStore) -> None:
        # Given an object and its current etag
        first = store.create_if_absent("t/_state/latest", b"1")
        # When it is replaced naming that etag
        second = store.replace_if_match("t/_state/latest", b"2", first)
        # Then the new bytes are stored under a new etag, which HEAD reports
        assert store.get("t/_state/latest") == b"2"
        assert _etag(second) != _etag(first)
        head = store.head("t/_state/latest")
        assert head is not None and _etag(head.etag) == _etag(second)

    def test_replace_if_match_takes_the_etags_head_and_list_report(self, store: ObjectStore) -> None:
        # Given an object written by a plain put
        store.put("t/_state/latest", b"1")
        # When it is replaced with the etag HEAD reports, then with the one LIST reports
        head = store.head("t/_state/latest")
        assert head is not None
        store.replace_if_match("t/_state/latest", b"2", head.etag)
        [listed] = store.list("t/_state/latest")
        store.replace_if_match("t/_state/latest", b"3", listed.etag)
        # Then both replacements landed
        assert store.get("t/_state/latest") == b"3"

    def test_replace_if_match_with_a_stale_etag_is_refused(self, store: ObjectStore) -> None:
        # Given an object replaced once, so that its first etag is stale
        first = store.create_if_absent("t/_state/latest", b"1")
        store.replace_if_match("t/_state/latest", b"2", first)
        # When it is replaced naming the stale etag
        with pytest.raises(PreconditionFailedError):
            store.replace_if_match("t/_state/latest", b"stale", first)
        # Then the refused bytes were never stored
        assert store.get("t/_state/latest") == b"2"

    def test_replace_if_match_of_a_missing_key_is_refused(self, store: ObjectStore) -> None:
        # Given an etag of an object that was deleted
        etag = store.put("t/gone", b"1")
        store.delete("t/gone")
        # When the deleted key, or one never written, is replaced
        with pytest.raises(PreconditionFailedError):
            store.replace_if_match("t/gone", b"2", etag)
        with pytest.raises(PreconditionFailedError):
            store.replace_if_match("t/never", b"2", etag)
        # Then neither object is created
        assert store.head("t/gone") is None and store.head("t/never") is None

    # -- delete ----------------------------------------------------------------------------

    def test_delete_is_idempotent(self, store: ObjectStore) -> None:
        # Given one object beside another
        store.put("t/doomed", b"x")
        store.put("t/kept", b"y")
        # When it is deleted twice, and a key never written is deleted
        store.delete("t/doomed")
        store.delete("t/doomed")
        store.delete("t/never-written")
        # Then it is gone and its neighbour is not
        assert store.head("t/doomed") is None
        assert _keys(store, "t/") == ["t/kept"]

    def test_delete_many_removes_exactly_the_given_keys(self, store: ObjectStore) -> None:
        # Given several objects
        keys = [f"t/many/{i:03d}" for i in range(7)]
        for key in keys:
            store.put(key, key.encode())
        # When some of them, and a key never written, are deleted at once
        store.delete_many([*keys[:5], "t/many/never-written"])
        # Then exactly the others remain, and an empty batch changes nothing
        assert _keys(store, "t/many/") == keys[5:]
        store.delete_many([])
        assert _keys(store, "t/many/") == keys[5:]

    # -- list ------------------------------------------------------------------------------

    def test_list_is_in_key_order_and_only_under_the_prefix(self, store: ObjectStore) -> None:
        # Given keys that share a start but are not all under "a/b/"
        keys = ["a/bc", "a/b/x", "a/b/y/z", "a/b.json", "a/b0/w", "a/a", "b/b/x", "ab/c"]
        for key in keys:
            store.put(key, key.encode())
        # When prefixes are listed
        # Then a folder prefix lists only what is below it, and a bare one every key that starts with it
        assert _keys(store, "a/b/") == ["a/b/x", "a/b/y/z"]
        assert _keys(store, "a/b") == ["a/b.json", "a/b/x", "a/b/y/z", "a/b0/w", "a/bc"]
        assert _keys(store, "a/") == sorted(k for k in keys if k.startswith("a/"))
        # And the empty prefix lists the whole store, in key order
        assert _keys(store, "") == sorted(keys)

    def test_list_reports_each_objects_size_and_etag(self, store: ObjectStore) -> None:
        # Given two objects, When their folder is listed
        etags = {"t/l/one": store.put("t/l/one", b"1"), "t/l/three": store.put("t/l/three", b"333")}
        listed = {info.key: info for info in store.list("t/l/")}
        # Then each entry carries what HEAD would say
        assert {key: info.size for key, info in listed.items()} == {"t/l/one": 1, "t/l/three": 3}
        assert {key: _etag(info.etag) for key, info in listed.items()} == {k: _etag(e) for k, e in etags.items()}

    def test_list_of_a_prefix_with_nothing_under_it_is_empty(self, store: ObjectStore) -> None:
        # Given one object, When prefixes that match nothing are listed, Then nothing is listed
        store.put("t/x", b"1")
        assert _keys(store, "nothing/") == []
        assert _keys(store, "t/x/") == []
        assert _keys(store, "t/y") == []

    def test_list_no_longer_shows_a_deleted_object(self, store: ObjectStore) -> None:
        # Given two listed objects, When one is deleted, Then the listing drops it at once
        store.put("t/d/1", b"1")
        store.put("t/d/2", b"2")
        store.delete("t/d/1")
        assert _keys(store, "t/d/") == ["t/d/2"]

    # -- new objects -----------------------------------------------------------------------

    def test_a_new_object_is_invisible_until_published(self, store: ObjectStore) -> None:
        # Given a new object being written
        new = store.new_object("t/data/part-0.bin")
        new.file().write(b"abc")
        # When it is not yet published, Then nothing is visible under its key
        assert store.head("t/data/part-0.bin") is None
        assert _keys(store, "t/data/") == []
        # When it is published, Then its bytes are
        new.publish()
        assert store.get("t/data/part-0.bin") == b"abc"

    def test_a_discarded_new_object_leaves_nothing(self, store: ObjectStore) -> None:
        # Given a new object written and then discarded
        dropped = store.new_object("t/data/part-1.bin")
        dropped.file().write(b"never")
        dropped.discard()
        # Then nothing is visible, under its key or its folder
        assert store.head("t/data/part-1.bin") is None
        assert _keys(store, "t/data/") == []

    def test_publishing_over_an_existing_key_is_refused(self, store: ObjectStore) -> None:
        # Given an object at a key
        store.put("t/data/part-0.bin", b"abc")
        # When a new object with that key is published
        again = store.new_object("t/data/part-0.bin")
        again.file().write(b"other")
        with pytest.raises(PathExistsError):
            again.publish()
        # Then the stored object is untouched: publishing is create-if-absent
        assert store.get("t/data/part-0.bin") == b"abc"
        assert _keys(store, "t/data/") == ["t/data/part-0.bin"]

    # -- reading for Parquet, uris ---------------------------------------------------------

    def test_open_input_reads_the_object(self, store: ObjectStore) -> None:
        # Given a Parquet file published through a new object
        table = pa.table({"x": list(range(500)), "s": [str(i) for i in range(500)]})
        new = store.new_object("t/data/f.parquet")
        pq.write_table(table, new.file())
        new.publish()
        # When it is opened for reading, Then Parquet reads the table back, and raw reads see the bytes
        assert pq.read_table(store.open_input("t/data/f.parquet")).equals(table)
        store.put("t/raw", b"0123456789")
        source = store.open_input("t/raw")
        source.seek(4)
        assert source.read(3) == b"456"

    def test_uri_joins_the_root_and_the_key(self, store: ObjectStore) -> None:
        # Given the store's root, When a key's URI is asked for, Then it is the root, one slash, the key
        root = store.root_uri.rstrip("/")
        assert store.uri("t/_log/1.json") == f"{root}/t/_log/1.json"
        assert store.uri("x") == f"{root}/x"

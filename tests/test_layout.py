"""Stored names are part of the format: a change here must be deliberate."""

from __future__ import annotations

import pytest

from sleeper_spark import layout
from sleeper_spark.layout import Kind, kind_of


def test_every_stored_name_is_where_released_tables_expect_it() -> None:
    assert layout.registry_key("events") == "_catalog/events.json"
    assert layout.namespace_key("sales.eu") == "_catalog/_namespaces/sales.eu.json"
    assert layout.log_entry_key("events", 7) == "events/_log/00000000000000000007.json"
    assert layout.body_key("events", "ab12") == "events/_log/bodies/ab12.json"
    assert layout.pending_key("events", "0f" * 16) == f"events/_log/pending/{'0f' * 16}.json"
    assert layout.pending_prefix("events") == "events/_log/pending/"
    assert layout.state_snapshot_key("events", 7) == "events/_state/00000000000000000007.parquet"
    assert layout.state_pointer_key("events") == "events/_state/latest"
    assert layout.maintenance_lock_key("events") == "events/_lock/maintenance"
    assert layout.table_metadata_prefixes("events") == ["events/_log/", "events/_state/"]


def test_numbers_are_read_back_only_from_names_of_their_kind() -> None:
    assert layout.log_entry_number("00000000000000000007.json") == 7
    assert layout.log_entry_number("bodies/ab.json") is None
    assert layout.log_entry_number("7.json.tmp-1") is None
    assert layout.state_snapshot_number("00000000000000000007.parquet") == 7
    assert layout.state_snapshot_number("latest") is None
    assert layout.log_entry_number(f"pending/{'0f' * 16}.json") is None
    assert layout.pending_record_key(f"{'0f' * 16}.json") == "0f" * 16
    assert layout.pending_record_key(f"{'0f' * 16}.json.tmp-1") is None
    assert layout.pending_record_key(f"{'0f' * 16}.json.INTENT.abc") is None
    assert layout.pending_record_key(f"{'0F' * 16}.json") is None
    assert layout.pending_record_key("0f.json") is None
    assert layout.namespace_of_key("sales.eu.json") == "sales.eu"
    assert layout.namespace_of_key("sales.json.INTENT.abc") is None
    assert layout.namespace_of_key("sales.json.tmp-1") is None


def test_a_pending_key_must_be_32_lowercase_hex_digits() -> None:
    # Given keys that are not a uuid4 in hex, When one names an object, Then it is refused
    for bad in ("", "0f" * 15, "0F" * 16, "../" + "0f" * 15, "0f" * 16 + "/x"):
        with pytest.raises(ValueError, match="pending append key"):
            layout.pending_key("events", bad)


def test_objects_of_a_table_folder_are_told_apart_by_key() -> None:
    assert kind_of("data/day=2024-01-01/x.parquet") is Kind.DATA
    assert kind_of("data/x.json") is Kind.OTHER
    assert kind_of("_log/bodies/ab.json") is Kind.BODY
    assert kind_of("_log/00000000000000000007.json") is Kind.OTHER
    assert kind_of(f"_log/pending/{'0f' * 16}.json") is Kind.OTHER  # committers delete them, never vacuum
    assert kind_of("_state/00000000000000000007.parquet") is Kind.STATE_SNAPSHOT
    assert kind_of("_state/nested/00000000000000000007.parquet") is Kind.OTHER
    assert kind_of("_state/latest") is Kind.OTHER
    assert layout.intent_target("data/x.parquet.INTENT.abc") == "data/x.parquet"
    assert layout.intent_target("data/x.parquet") is None

"""Scan records are plain JSON in a folder only the current user can write."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import json
import logging
import math
import os
import pickle
import tempfile
import uuid
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    In,
    IsNotNull,
    IsNull,
    LessThanOrEqual,
    Not,
    StringStartsWith,
)

from sleeper_spark.process_state import OnceSet
from sleeper_spark.spark.source import scans
from sleeper_spark.spark.source.filter_json import FilterCodingError, dumps_scans, loads_scans

UTC = dt.timezone.utc
EVERY_KIND: list[Filter] = [
    EqualTo(("id",), 7), EqualNullSafe(("id",), None), GreaterThan(("score",), math.inf),
    LessThanOrEqual(("score",), -0.0), EqualTo(("flag",), True), IsNull(("part",)), IsNotNull(("part",)),
    In(("part",), ("a", "c")), Not(In(("id",), (1, 2))), StringStartsWith(("name",), "n1\u00e9"),
    EqualTo(("day",), dt.date(2024, 1, 5)), GreaterThan(("at",), dt.datetime(2024, 1, 2, 3, tzinfo=UTC)),
    LessThanOrEqual(("local_at",), dt.datetime(2024, 1, 1, 4)), EqualTo(("amount",), decimal.Decimal("2.50")),
    EqualTo(("big",), 2**70), EqualTo(("nested", "field"), "x"),
]


@dataclasses.dataclass(frozen=True)
class _OtherFilter(Filter):
    attribute: tuple[str, ...]
    value: Any


class _PlantedPayload:
    """What a hostile user could leave behind: unpickling it creates ``marker``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return Path.touch, (self.marker,)


@pytest.fixture
def temp_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A system temporary folder of the test's own, so no real scan record is touched."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    monkeypatch.setattr(scans, "SAID_ONCE", OnceSet())  # as in a new process
    return root


def records_folder_in(root: Path) -> Path:
    return root / f"sleeper-spark-scans-{os.getuid()}"


def test_every_filter_kind_survives_json_exactly() -> None:
    scans_in = [EVERY_KIND, [], [EqualTo(("score",), math.nan)]]
    decoded = loads_scans(dumps_scans(scans_in))
    assert decoded[:2] == scans_in[:2]
    nan_filter = decoded[2][0]
    assert isinstance(nan_filter, EqualTo) and math.isnan(nan_filter.value)
    assert decoded[0][11].value.tzinfo is not None and decoded[0][12].value.tzinfo is None
    assert type(decoded[0][4].value) is bool and type(decoded[0][0].value) is int


def test_filters_and_literals_without_a_json_form_are_refused() -> None:
    with pytest.raises(FilterCodingError):
        dumps_scans([[_OtherFilter(("a",), 1)]])
    with pytest.raises(FilterCodingError):
        dumps_scans([[EqualTo(("a",), b"bytes")]])
    for record in (b"\x80\x04N.", b"{}", b'[[{"filter": "Exec", "attribute": ["a"]}]]',
                   b'[[{"filter": "EqualTo", "attribute": ["a"], "value": ["pickle", "x"]}]]',
                   b'[[{"filter": "EqualTo", "attribute": "a", "value": ["int", "1"]}]]'):
        with pytest.raises(FilterCodingError):
            loads_scans(record)


def test_scans_of_a_relation_are_recorded_as_json_in_a_private_folder(temp_root: Path) -> None:
    # Given no records folder yet
    relation = uuid.uuid4().hex
    # When two scans of one relation are recorded
    first = scans.record_scan(relation, [EqualTo(("part",), "a")])
    both = scans.record_scan(relation, [GreaterThan(("id",), 3)])
    # Then both are returned, the record is plain JSON, and the folder is the user's alone
    assert first == [[EqualTo(("part",), "a")]]
    assert both == [[EqualTo(("part",), "a")], [GreaterThan(("id",), 3)]]
    folder = records_folder_in(temp_root)
    assert json.loads((folder / relation).read_bytes())[1][0]["filter"] == "GreaterThan"
    assert (folder.stat().st_mode & 0o777) == 0o700 and folder.stat().st_uid == os.getuid()
    assert (folder / relation).stat().st_mode & 0o077 == 0


def test_a_folder_open_to_others_is_refused_and_nothing_in_it_is_read(
    temp_root: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Given another user made the records folder first, open to all, and planted a record
    folder = records_folder_in(temp_root)
    folder.mkdir()
    folder.chmod(0o777)
    relation = uuid.uuid4().hex
    marker = tmp_path / "planted-code-ran"
    (folder / relation).write_bytes(pickle.dumps([_PlantedPayload(marker)]))
    # When a scan of that relation is recorded
    with caplog.at_level(logging.WARNING, logger=scans.__name__):
        recorded = scans.record_scan(relation, [EqualTo(("part",), "a")])
    # Then the folder is refused: the scan reads every file, the planted bytes never ran
    assert recorded is None
    assert not marker.exists()
    assert any("can be opened by other users" in message and str(folder) in message for message in caplog.messages)


@pytest.mark.skipif(os.getuid() != 0, reason="making a folder of another user needs root")
def test_a_folder_owned_by_another_user_is_refused(temp_root: Path) -> None:
    folder = records_folder_in(temp_root)
    folder.mkdir(mode=0o700)
    os.chown(folder, 4242, 4242)
    assert scans.records_folder() is None
    assert scans.record_scan(uuid.uuid4().hex, [IsNull(("part",))]) is None


def test_a_link_in_place_of_the_folder_is_refused(temp_root: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    records_folder_in(temp_root).symlink_to(elsewhere, target_is_directory=True)
    assert scans.records_folder() is None
    assert list(elsewhere.iterdir()) == []


def test_a_record_that_is_not_json_reads_every_file_without_running_it(temp_root: Path, tmp_path: Path) -> None:
    # Given a private folder holding a pickle where a record should be (an old version's, say)
    folder = records_folder_in(temp_root)
    folder.mkdir(mode=0o700)
    relation = uuid.uuid4().hex
    marker = tmp_path / "planted-code-ran"
    (folder / relation).write_bytes(pickle.dumps([_PlantedPayload(marker)]))
    # Then it is not loaded: no pruning, no code run
    assert scans.record_scan(relation, [IsNotNull(("part",))]) is None
    assert not marker.exists()

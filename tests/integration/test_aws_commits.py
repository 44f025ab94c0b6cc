"""Commits on the AWS catalog (DynamoDB Local + SeaweedFS): races, big bodies, request budget, lost answers."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from botocore.exceptions import ReadTimeoutError

import sleeper_spark as ss
from sleeper_spark.commit.group import BACK_TO_BACK_S
from sleeper_spark.storage.aws import make_client
from tests.fixtures.aws_requests import RequestCounter, counting_requests
from tests.fixtures.catalogs import EVENTS_SCHEMA, events, make_catalog
from tests.fixtures.processes import released_together
from tests.invariants import WriteOutcome, check_table_invariants
from tests.reliability.budget import LONG_RUN, long_run_only

pytestmark = pytest.mark.integration

WRITERS = 6
APPENDS = 8


@pytest.fixture(params=["aws", "object_store"])
def catalog(request: pytest.FixtureRequest, tmp_path: Path) -> ss.Catalog:
    return make_catalog(str(request.param), request, tmp_path)


def append_many(options: dict[str, str], writer: int, start: Any) -> list[WriteOutcome]:
    table = ss.Catalog.from_options(options).table("events")
    start.wait()
    outcomes = []
    for seq in range(APPENDS):
        try:
            table.write(events(writer, seq), metadata={"writer": str(writer), "seq": str(seq)})
            outcomes.append(WriteOutcome(writer, seq, 3, committed=True))
        except ss.SleeperSparkError:
            outcomes.append(WriteOutcome(writer, seq, 3, committed=False))
    return outcomes


# The strategies for stores without conditional writes race in the contract suites of every run
# (tests/storage/test_contract.py, tests/contract/test_log_strategies.py); six whole writers on
# them in a long run.
@pytest.fixture(params=["aws", "object_store", *[pytest.param(kind, marks=long_run_only) for kind in
                                                  ("object_store_put_and_verify", "object_store_dynamodb_lock")]])
def racing_catalog(request: pytest.FixtureRequest, tmp_path: Path) -> ss.Catalog:
    return make_catalog(str(request.param), request, tmp_path)


def test_six_racing_processes_lose_nothing(racing_catalog: ss.Catalog) -> None:
    catalog = racing_catalog
    # Given a table on the test servers
    catalog.create_table("events", EVENTS_SCHEMA, partition_by=["day"])
    # When 6 processes append 8 times each, all released at once
    outcomes = released_together(append_many, catalog.options(), WRITERS)
    # Then no commit failed and every invariant holds
    assert [o for o in outcomes if not o.committed] == []
    check_table_invariants(ss.Catalog(catalog.config).table("events"), outcomes)


@pytest.mark.slow
def test_a_commit_too_big_for_a_dynamodb_item_spills_its_body_and_reads_back(catalog: ss.Catalog) -> None:
    if catalog.config.catalog != "aws" and not LONG_RUN:
        # DynamoDB's item limit is what makes a body spill; tests/reliability/test_hostile_input.py
        # spills a body on every backend (a 250 KB metadata value), so the object store's uploads
        # add little but time.
        pytest.skip("on the AWS catalog only, but in a long run: SLEEPER_LONG_RUN=1 (docs/reliability.md)")
    # 300 files whose partition values are 200 characters long: each file's entry holds its value
    # four times (partition, path, minimum, maximum), so the body passes the spill threshold as
    # 2,000 files with short values would, at a seventh of the uploads.
    files = 300
    table = catalog.create_table("events", EVENTS_SCHEMA, partition_by=["day"])
    days = [f"day-{i:04d}-" + "x" * 191 for i in range(files)]
    data = pa.table({"day": days, "writer": [0] * files, "seq": [0] * files, "value": [1.0] * files},
                    schema=EVENTS_SCHEMA)
    snapshot = table.write(data)
    assert snapshot.files_added == files
    assert len(list(catalog.backend.store.list("events/_log/bodies/"))) == 1
    fresh = ss.Catalog(catalog.config).table("events")
    assert len(fresh.files()) == files and fresh.latest() == snapshot
    assert sorted(fresh.scan().column("day").to_pylist()) == days


@pytest.fixture
def requests(catalog: ss.Catalog) -> Iterator[RequestCounter]:
    with counting_requests(catalog.config) as counter:
        yield counter


def test_a_warm_append_makes_one_log_put_and_no_read_or_list(catalog: ss.Catalog,
                                                                     requests: RequestCounter) -> None:
    # Given a writer that holds the table's state
    table = catalog.create_table("events", EVENTS_SCHEMA)
    table.write(events(0, 0))
    requests.calls.clear()
    # When it appends one file
    table.write(events(0, 1))
    # Then: the data file's PUT and one conditional log put; a warm writer appends optimistically,
    # so there is no tail read (Lode's bound allows one) and no LIST
    calls = dict(requests.calls)
    if catalog.config.catalog == "aws":
        assert calls == {"PutObject": 1, "PutItem": 1}
    else:
        assert calls == {"PutObject": 2}  # the data file and the log entry


def test_group_commit_costs_a_writer_without_rivals_nothing_more(catalog: ss.Catalog,
                                                                requests: RequestCounter) -> None:
    # Given a warm writer with group commit on
    group = ss.Catalog(catalog.config.model_copy(update={"group_commit": True}))
    table = group.create_table("events", EVENTS_SCHEMA)
    table.write(events(0, 0))
    requests.calls.clear()
    # When it appends alone, it pays what it pays without group commit: no record, no read (a
    # writer that appends back to back also lists the pending records once a second: this one
    # pauses first, as long as that takes, whatever the load)
    time.sleep(BACK_TO_BACK_S)
    table.write(events(0, 1))
    calls = dict(requests.calls)
    assert calls == ({"PutObject": 1, "PutItem": 1} if catalog.config.catalog == "aws" else {"PutObject": 2})
    # When it loses one race, it reads the tail and wins alone, as without group commit: a record
    # (a put, a listing, a delete) is only worth it once most of its solo puts lose
    ss.Catalog(catalog.config).table("events").write(events(1, 0))
    requests.calls.clear()
    time.sleep(BACK_TO_BACK_S)
    snapshot = table.write(events(0, 2))
    calls = dict(requests.calls)
    assert snapshot.version == 5 and snapshot.members == ()
    if catalog.config.catalog == "aws":
        assert calls == {"PutObject": 1, "PutItem": 2, "Query": 1}, calls
    else:
        assert calls == {"PutObject": 3, "GetObject": 2}, calls


def test_a_writer_that_lost_the_race_reads_only_the_tail(catalog: ss.Catalog, requests: RequestCounter) -> None:
    # Given a writer whose cached state is one commit behind
    table = catalog.create_table("events", EVENTS_SCHEMA)
    table.write(events(0, 0))
    ss.Catalog(catalog.config).table("events").write(events(1, 0))
    requests.calls.clear()
    # When it appends
    snapshot = table.write(events(0, 1))
    # Then it lost one put, read the tail once, and won the next number; still no LIST
    assert snapshot.version == 4
    calls = dict(requests.calls)
    if catalog.config.catalog == "aws":
        assert calls == {"PutObject": 1, "PutItem": 2, "Query": 1}
    else:
        # the object-store log reads the tail entry by entry: the new one, then the missing next
        assert calls == {"PutObject": 3, "GetObject": 2}, calls


def test_a_lost_put_response_neither_loses_nor_duplicates_the_commit(request: pytest.FixtureRequest,
                                                                      tmp_path: Path) -> None:
    # (the object store's lost answers are covered in test_s3_store.py)
    catalog = make_catalog("aws", request, tmp_path)
    # Given a DynamoDB client that drops the answer to the next PutItem after the server applied it
    table = catalog.create_table("events", EVENTS_SCHEMA)
    table.write(events(0, 0))
    client = make_client("dynamodb", catalog.config, retries=False)
    dropped: list[str] = []

    def drop_answer(**kwargs: Any) -> None:
        if not dropped:
            dropped.append("PutItem")
            raise ReadTimeoutError(endpoint_url="dynamodb")

    client.meta.events.register("after-call.dynamodb.PutItem", drop_answer)
    try:
        # When writing through it
        snapshot = table.write(events(1, 0), metadata={"writer": "1", "seq": "0"})
    finally:
        client.meta.events.unregister("after-call.dynamodb.PutItem", drop_answer)
    # Then the answer was dropped, and the write is in the log exactly once
    assert dropped == ["PutItem"]
    history = ss.Catalog(catalog.config).table("events").history()
    assert [s.version for s in history] == [2, 3]
    assert history[-1].snapshot_id == snapshot.snapshot_id

"""Credentials never leak: not into log records, error messages, reprs, options or pickles.

The config has no secret fields: credentials come from boto3's chain (here, the environment).
So the test puts a recognisable secret key and session token in the environment, turns DEBUG
logging on for ``sleeper_spark`` and ``botocore``, and runs writes, reads, maintenance and a few
failures on every AWS-backed catalog kind. Records of ``sleeper_spark`` loggers and every error
message (with its causes) must not contain either value. botocore's own DEBUG records are not
ours to police (they are counted, for the report).
"""

from __future__ import annotations

import logging
import pickle
import traceback
import uuid
from collections.abc import Iterator
from datetime import timedelta

import pytest

import sleeper_spark as ss
from sleeper_spark.storage.aws import clear_client_cache
from tests.fixtures.catalogs import EVENTS_SCHEMA, events, make_catalog
from tests.fixtures.servers import TEST_CREDENTIALS, free_port

pytestmark = pytest.mark.reliability

SECRET = f"sEcReT{uuid.uuid4().hex}"
TOKEN = f"tOkEn{uuid.uuid4().hex}"


@pytest.fixture
def aws_env() -> Iterator[dict[str, str]]:
    """The servers' credentials, with a recognisable secret key and session token (overrides the plugin's)."""
    clear_client_cache()  # clients built earlier hold other credentials
    yield {**TEST_CREDENTIALS, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_SESSION_TOKEN": TOKEN}
    clear_client_cache()  # and these must not serve later tests


def messages(error: BaseException) -> str:
    """Everything a traceback of the error shows: its message and those it was raised from.

    Python shows a context suppressed with ``raise ... from None`` nowhere (not in tracebacks,
    not through logging), so neither is it searched here.
    """
    return repr(error) + "\n" + "".join(traceback.format_exception(error))


def leaks(text: str) -> bool:
    return SECRET in text or TOKEN in text


@pytest.mark.integration
@pytest.mark.parametrize("kind", ["aws", "object_store", "object_store_dynamodb_lock"])
def test_credentials_appear_in_no_log_record_error_repr_or_option(kind: str, request: pytest.FixtureRequest,
                                                                  tmp_path: pytest.TempPathFactory,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="sleeper_spark")
    caplog.set_level(logging.DEBUG, logger="botocore")
    catalog = make_catalog(kind, request, tmp_path)  # type: ignore[arg-type]
    errors: list[BaseException] = []

    def expect_failure(action: object) -> None:
        try:
            action()  # type: ignore[operator]
        except ss.SleeperSparkError as error:
            errors.append(error)
        else:
            raise AssertionError(f"{action} should have failed")

    # Ordinary work, with DEBUG logging on
    table = catalog.create_table("events", EVENTS_SCHEMA, partition_by=["day"])
    for seq in range(4):
        table.write(events(0, seq, day=f"d{seq % 2}"), metadata={"seq": str(seq)})
    table.write(events(1, 0), mode="overwrite")
    table.write(events(1, 1, day="d1"))
    table.compact()
    table.create_state_snapshot()
    table.vacuum(older_than=timedelta(0))
    assert ss.Catalog.from_options(catalog.options()).table("events").scan().num_rows == 6
    assert table.verify().ok
    # Failures, each of which builds a message from what it knows
    expect_failure(lambda: catalog.table("missing"))
    expect_failure(lambda: catalog.create_table("events", EVENTS_SCHEMA))
    expect_failure(lambda: table.write(events(0, 0).drop_columns(["value"])))
    expect_failure(lambda: ss.Catalog.object_store(
        f"s3://no-such-bucket-{uuid.uuid4().hex[:8]}/w", endpoint_url=catalog.config.s3_endpoint,
        region="us-east-1").create_table("events", EVENTS_SCHEMA))
    unreachable = f"http://127.0.0.1:{free_port()}"
    expect_failure(lambda: ss.Catalog.aws(
        warehouse=catalog.config.warehouse, transactions_table="tx-x", snapshots_table="snap-x", region="us-east-1",
        s3_endpoint_url=catalog.config.s3_endpoint, dynamodb_endpoint_url=unreachable,
        retry={"max_attempts": 1}).table("events"))
    expect_failure(lambda: ss.Catalog.from_options({**catalog.options(), "aws_secret_access_key": SECRET}))
    expect_failure(lambda: ss.Catalog.from_options({**catalog.options(), "retry.max_attempts": SECRET}))
    expect_failure(lambda: ss.Catalog.from_options({**catalog.options(), "conditional_writes": TOKEN}))
    assert len(errors) == 8

    ours = [r for r in caplog.records if r.name.startswith("sleeper_spark")]
    leaked = [r for r in ours if leaks(r.getMessage()) or leaks(r.exc_text or "")]
    assert not leaked, [f"{r.name}: {r.getMessage()[:200]}" for r in leaked]
    leaked_errors = [messages(e) for e in errors if leaks(messages(e))]
    assert not leaked_errors, leaked_errors
    for text in (repr(catalog), repr(table), repr(catalog.config), str(catalog.options()),
                 catalog.config.model_dump_json(), repr(catalog.backend)):
        assert not leaks(text), text
    assert not leaks(pickle.dumps(catalog.config).decode("latin-1"))
    assert not leaks(pickle.dumps(catalog.options()).decode("latin-1"))
    botocore_records = [r for r in caplog.records if r.name.startswith("botocore")]
    summary = (f"{kind}: {len(ours)} sleeper_spark records and {len(errors)} errors checked; botocore logged "
               f"{len(botocore_records)} DEBUG records, {sum(1 for r in botocore_records if leaks(r.getMessage()))} "
               "of them with the session token or secret")
    request.node.user_properties.append(("secrets", summary))
    print(summary)
    # The credentials were really in use: botocore's DEBUG dump of request headers shows the token.
    assert any(TOKEN in r.getMessage() for r in botocore_records)

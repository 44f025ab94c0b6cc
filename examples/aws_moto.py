"""The AWS backend (DynamoDB log + S3 data) against moto's in-process server: no AWS account needed.

    bash scripts/examples.sh aws_moto

Starts moto on a free loopback port, creates a bucket, builds ``Catalog.aws`` pointed at it,
creates the DynamoDB tables with ``ensure_infrastructure()``, writes twice with pyarrow, reads
back, counts the requests of a warm append and of an append that lost a race, and prints the
history. Against real AWS, drop ``endpoint_url`` and the dummy credentials: boto3's standard
credential chain (environment, profile, instance role) is used instead.
"""

from __future__ import annotations

import os

# moto signs nothing but boto3 refuses to send a request without some credentials. These dummy
# values are set in this process only, before boto3 is imported, so that a real profile or
# instance role on this machine is never used against the fake endpoint (or vice versa).
os.environ["AWS_ACCESS_KEY_ID"] = "testing"
os.environ["AWS_SECRET_ACCESS_KEY"] = "testing"
os.environ["AWS_SESSION_TOKEN"] = "testing"
os.environ["AWS_DEFAULT_REGION"] = "us-east-1"
for variable in ("AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
    os.environ.pop(variable, None)

import logging  # noqa: E402
from collections import Counter  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

import boto3  # noqa: E402
import pyarrow as pa  # noqa: E402
from moto.server import ThreadedMotoServer  # noqa: E402

import sleeper_spark as ss  # noqa: E402
from sleeper_spark.storage.aws import make_client  # noqa: E402  the one place clients are built

BUCKET = "sleeper-example"
REGION = "us-east-1"


def main() -> None:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's server logs every request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        run(f"http://{host}:{port}")
    finally:
        server.stop()


def run(endpoint: str) -> None:
    # The bucket is the one thing ensure_infrastructure() does not create: it only checks it,
    # since buckets usually carry their own policies, encryption and lifecycle rules.
    boto3.client("s3", endpoint_url=endpoint, region_name=REGION).create_bucket(Bucket=BUCKET)

    catalog = ss.Catalog.aws(
        warehouse=f"s3://{BUCKET}/warehouse",
        transactions_table="sleeper-transactions",
        snapshots_table="sleeper-snapshots",
        region=REGION,
        endpoint_url=endpoint,  # one endpoint for S3 and DynamoDB
    )
    catalog.ensure_infrastructure()  # creates both DynamoDB tables (on-demand, TTL on); idempotent
    print(f"catalog: {catalog}")

    schema = pa.schema([("day", pa.string()), ("user", pa.string()), ("clicks", pa.int64())])
    events = catalog.create_table("events", schema, partition_by=["day"])

    first = events.write(pa.table({"day": ["2024-05-01", "2024-05-01"], "user": ["ann", "bob"], "clicks": [3, 5]}),
                         metadata={"job": "ingest", "batch": "1"})
    events.write(pa.table({"day": ["2024-05-02"], "user": ["cat"], "clicks": [7]}),
                 metadata={"job": "ingest", "batch": "2"})

    # A second catalog object starts cold, as another process would: it finds the table in the
    # DynamoDB registry and folds the log from DynamoDB.
    reopened = ss.Catalog.aws(warehouse=f"s3://{BUCKET}/warehouse", region=REGION, endpoint_url=endpoint)
    table = reopened.table("events")
    rows = table.scan().sort_by([("day", "ascending"), ("user", "ascending")])
    print(f"rows: {rows.to_pylist()}")
    print(f"at version {first.version}: {table.scan(version=first.version).num_rows} rows")

    # What a commit costs, counted on the clients: a warm append puts its data file and one
    # DynamoDB item, and reads nothing. The second catalog's state is now one commit behind, so
    # its append loses the race for the number, reads the log's tail (one Query) and retries.
    count = request_counter(catalog)
    batch = pa.table({"day": ["2024-05-03"], "user": ["dan"], "clicks": [1]})
    print(f"warm append: {count(lambda: events.write(batch))}")
    print(f"append that lost a race: {count(lambda: table.write(batch))}")

    print("history:")
    for snapshot in table.history():
        print(f"  v{snapshot.version}  {snapshot.operation:<7}  +{snapshot.rows_added} rows  "
              f"{snapshot.files_added} file(s)  {snapshot.metadata}")

    keys = boto3.client("s3", endpoint_url=endpoint, region_name=REGION).list_objects_v2(Bucket=BUCKET)
    print("objects in the bucket:")
    for item in keys.get("Contents", []):
        print(f"  {item['Key']}")
    print(f"verify: {'ok' if table.verify().ok else 'problems'}")


def request_counter(catalog: ss.Catalog) -> Callable[[Callable[[], object]], dict[str, int]]:
    """Runs an action and returns the S3 and DynamoDB requests it made, by API operation."""
    calls: Counter[str] = Counter()

    def record(model: Any, **_: Any) -> None:
        calls[model.name] += 1

    for service in ("s3", "dynamodb"):
        for retries in (True, False):  # conditional writes use a client without automatic retries
            make_client(service, catalog.config, retries=retries).meta.events.register("before-call", record)

    def count(action: Callable[[], object]) -> dict[str, int]:
        calls.clear()
        action()
        return dict(sorted(calls.items()))

    return count


if __name__ == "__main__":
    main()

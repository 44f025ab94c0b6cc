"""What a trial does after a process died: the operator's clean-up, and the checks.

A SIGKILLed writer can leave behind what only an operator may remove, because only an operator
knows that its holder is gone: the table's maintenance lock (a vacuum was killed), put-and-verify
intents on log and pointer keys, and DynamoDB lock records of the ``dynamodb-lock`` strategy
(which later writers would also take over by themselves, after ``timeout * skew`` = 60 s).
:func:`recover_after_crash` removes exactly those, as ``sleeper-spark lock break`` and
``break_stale_intents`` do; it never touches data files, log entries or state snapshots.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import boto3

import sleeper_spark as ss
from sleeper_spark.layout import INTENT_MARK
from sleeper_spark.maintenance.locking import maintenance_lock_path
from sleeper_spark.storage.locks import break_lock
from tests.invariants import InvariantViolation, WriteOutcome, check_table_invariants


@dataclass
class Recovered:
    maintenance_locks: int = 0
    intents: list[str] = field(default_factory=list)
    lock_records: list[str] = field(default_factory=list)


def recover_after_crash(catalog: ss.Catalog, name: str) -> Recovered:
    """Removes the locks and intents a dead process left (see the module doc)."""
    store = catalog.backend.store
    table = catalog.table(name)
    found = Recovered()
    found.maintenance_locks = len(break_lock(store, maintenance_lock_path(table), force=True))
    if catalog.config.conditional_writes == "put-and-verify":
        for prefix in (f"{table.root}/_log/", f"{table.root}/_state/"):
            for info in store.list(prefix):
                if INTENT_MARK in info.key and not info.key.startswith(f"{table.root}/_log/bodies/"):
                    store.delete(info.key)
                    found.intents.append(info.key)
    if catalog.config.conditional_writes == "dynamodb-lock":
        found.lock_records = delete_lock_records(catalog, [table.location + "/_log/", table.location + "/_state/"])
    return found


def delete_lock_records(catalog: ss.Catalog, prefixes: Iterable[str]) -> list[str]:
    config = catalog.config
    client = boto3.client("dynamodb", endpoint_url=config.dynamodb_endpoint, region_name=config.region or "us-east-1")
    deleted = []
    for page in client.get_paginator("scan").paginate(TableName=str(config.lock_table), ConsistentRead=True):
        for item in page["Items"]:
            path = item["path"]["S"]
            if any(path.startswith(prefix) for prefix in prefixes) and "/_log/bodies/" not in path:
                client.delete_item(TableName=str(config.lock_table), Key={"path": item["path"], "etag": item["etag"]})
                deleted.append(path)
    return deleted


def data_listing(catalog: ss.Catalog, name: str) -> set[str]:
    """Everything under the table's ``data/``, relative to the table, as the storage holds it.

    On the local disk this walks the directory itself, so that temporary files the store's
    listing hides are seen too.
    """
    table = catalog.table(name)
    prefix = f"{table.root}/data/"
    if catalog.config.catalog == "local":
        root = Path(catalog.backend.store.root_uri) / table.root
        return {(Path(d) / f).relative_to(root).as_posix()
                for d, _, files in os.walk(root / "data") for f in files}
    return {info.key[len(table.root) + 1:] for info in catalog.backend.store.list(prefix)}


def check_after_crash(catalog: ss.Catalog, name: str, outcomes: list[WriteOutcome]) -> int:
    """Invariants, a cold open, and a vacuum that leaves exactly the referenced data files.

    Returns how many data files the vacuum deleted.
    """
    table = ss.Catalog(catalog.config).table(name)  # a cold open, like any new process
    check_table_invariants(table, outcomes)
    report = table.vacuum(older_than=timedelta(0))
    referenced = {f.path for f in table.files()}
    listed = data_listing(catalog, name)
    if listed != referenced:
        raise InvariantViolation(
            f"after vacuum(older_than=0), data/ holds {sorted(listed - referenced)[:5]} that no version references, "
            f"and lacks {sorted(referenced - listed)[:5]}"
        )
    check_table_invariants(table, outcomes)
    return report.data_files_deleted

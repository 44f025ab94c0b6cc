"""The processes of the multi-table transaction races and kill trials.

    SLEEPER_CATALOG_OPTIONS='{"catalog": "local", ...}' \\
        python -m tests.transactions.txn_worker ROLE WRITER COUNT JOURNAL

The catalog comes from its flat string options, as a Spark executor builds it. Roles:

* ``transact``: ``COUNT`` transactions (0: until killed), each appending ``events(WRITER, seq)`` to
  table ``a`` and to table ``b`` (``SLEEPER_TXN_LEASE`` seconds of lease, default 30);
* ``append``: ``COUNT`` plain appends to ``a``, tagged ``(WRITER, seq)``;
* ``read``: for ``COUNT`` seconds, reads ``a`` then ``b`` and counts the transactions ``a``
  shows that ``b`` does not (torn reads; 0 allowed), and checks ``catalog.read_consistent``
  both ways round.

The journal (fsynced lines ``start <seq>``, ``done <seq>``, ``failed <seq> <error>``, and for a
reader one ``reads <n> torn <n> inconsistent <n>``) says what each process saw.
"""

from __future__ import annotations

import json
import os
import sys
import time

import sleeper_spark as ss
from sleeper_spark.commit import TRANSACTION_KEY
from tests.fixtures.catalogs import events

OPTIONS_VARIABLE = "SLEEPER_CATALOG_OPTIONS"
LEASE_VARIABLE = "SLEEPER_TXN_LEASE"
ROWS = 2


def journal(handle: int, line: str) -> None:
    os.write(handle, f"{line}\n".encode())
    os.fsync(handle)


def open_catalog() -> ss.Catalog:
    return ss.Catalog.from_options(dict(json.loads(os.environ[OPTIONS_VARIABLE])))


def transactions_in(table: ss.Table) -> set[str]:
    return {s.metadata[TRANSACTION_KEY] for s in table.history() if TRANSACTION_KEY in s.metadata}


def transact(catalog: ss.Catalog, writer: int, count: int, handle: int) -> None:
    lease = float(os.environ.get(LEASE_VARIABLE, "30"))
    seq = 0
    while count == 0 or seq < count:
        tags = {"writer": str(writer), "seq": str(seq)}
        journal(handle, f"start {seq}")
        try:
            with catalog.transaction(lease_s=lease) as tx:
                tx.write("a", events(writer, seq, rows=ROWS), metadata=tags)
                tx.write("b", events(writer, seq, rows=ROWS), metadata=tags)
        except ss.CommitStateUnknownError as error:
            journal(handle, f"unknown {seq} {type(error).__name__}")
        except ss.SleeperSparkError as error:
            journal(handle, f"failed {seq} {type(error).__name__}: {str(error)[:200]}")
        else:
            journal(handle, f"done {seq}")
        seq += 1


def append(catalog: ss.Catalog, writer: int, count: int, handle: int) -> None:
    table = catalog.table("a")
    for seq in range(count):
        journal(handle, f"start {seq}")
        table.write(events(writer, seq, rows=ROWS), metadata={"writer": str(writer), "seq": str(seq)})
        journal(handle, f"done {seq}")


def read(catalog: ss.Catalog, seconds: int, handle: int) -> None:
    a, b = catalog.table("a"), catalog.table("b")
    reads = torn = inconsistent = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        a.state()
        in_a = transactions_in(a)
        b.state()
        torn += len(in_a - transactions_in(b))
        versions = catalog.read_consistent(["b", "a"] if reads % 2 else ["a", "b"])
        at_a = {s.metadata[TRANSACTION_KEY] for s in a.history() if TRANSACTION_KEY in s.metadata
                and s.version <= versions["a"]}
        at_b = {s.metadata[TRANSACTION_KEY] for s in b.history() if TRANSACTION_KEY in s.metadata
                and s.version <= versions["b"]}
        inconsistent += at_a != at_b
        reads += 1
    journal(handle, f"reads {reads} torn {torn} inconsistent {inconsistent}")


def main(role: str, writer: int, count: int, journal_path: str) -> None:
    catalog = open_catalog()
    handle = os.open(journal_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    if role == "transact":
        transact(catalog, writer, count, handle)
    elif role == "append":
        append(catalog, writer, count, handle)
    elif role == "read":
        read(catalog, count, handle)
    else:
        raise SystemExit(f"unknown role {role!r}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])

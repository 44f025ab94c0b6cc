"""The processes that race merges: plain appends of fresh keys, and compactions (no Spark in either)."""

from __future__ import annotations

import time

import pyarrow as pa

import sleeper_spark as ss

SCHEMA = pa.schema([("id", pa.int64()), ("count", pa.int64())])


def append_fresh_keys(options: dict[str, str], writer: int, first_id: int, appends: int) -> None:
    """``appends`` appends of one new key each, tagged ``writer`` / ``seq`` for the invariant checker."""
    table = ss.Catalog.from_options(options).table("t")
    for seq in range(appends):
        table.write(pa.table({"id": [first_id + seq], "count": [0]}, schema=SCHEMA),
                    metadata={"writer": str(writer), "seq": str(seq)})
        time.sleep(0.05)


def compact_repeatedly(options: dict[str, str], rounds: int) -> None:
    """Compacts the table again and again; a round that loses to a concurrent change is skipped."""
    table = ss.Catalog.from_options(options).table("t")
    for _ in range(rounds):
        try:
            table.compact(target_file_bytes=1 << 20)
        except ss.CommitConflictError:
            pass
        time.sleep(0.2)

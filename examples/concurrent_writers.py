"""Several processes append to one table at the same moment; every commit lands, none twice.

    bash scripts/examples.sh concurrent_writers [WAREHOUSE_DIR] [--writers 4] [--appends 5]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import multiprocessing
import tempfile
from collections import Counter

import pyarrow as pa

import sleeper_spark as ss

SCHEMA = pa.schema([("writer", pa.int64()), ("seq", pa.int64()), ("payload", pa.string())])


def writer(warehouse: str, writer_id: int, appends: int, start: multiprocessing.synchronize.Event) -> list[int]:  # type: ignore[name-defined]
    table = ss.Catalog.local(warehouse).table("shared")
    start.wait()
    versions = []
    for seq in range(appends):
        data = pa.table({"writer": [writer_id], "seq": [seq], "payload": [f"hello from {writer_id}"]}, schema=SCHEMA)
        snapshot = table.write(data, metadata={"writer": str(writer_id), "seq": str(seq)})
        versions.append(snapshot.version)
    return versions


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("warehouse", nargs="?", default=None)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--appends", type=int, default=5)
    args = parser.parse_args()
    warehouse = args.warehouse or tempfile.mkdtemp(prefix="sleeper-concurrent-")

    catalog = ss.Catalog.local(warehouse)
    with contextlib.suppress(ss.TableNotFoundError):  # start afresh on every run
        catalog.drop_table("shared", purge=True)
    catalog.create_table("shared", SCHEMA)

    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager:
        start = manager.Event()
        with context.Pool(args.writers) as pool:
            pending = [pool.apply_async(writer, (warehouse, w, args.appends, start)) for w in range(args.writers)]
            start.set()
            for index, result in enumerate(pending):
                print(f"writer {index} committed versions {result.get(timeout=300)}")

    table = catalog.table("shared")
    history = table.history()
    print(f"\n{len(history)} snapshots, versions {history[0].version}..{history[-1].version}, "
          f"{table.scan().num_rows} rows")
    per_writer = Counter(s.metadata["writer"] for s in history)
    print("commits per writer:", dict(sorted(per_writer.items())))
    linear = all(b.parent_id == a.snapshot_id for a, b in itertools.pairwise(history))
    print("history is linear:", linear)


if __name__ == "__main__":
    main()

"""The group-commit example of docs/usage.md ("Group commit"), on the warehouse named by argv[1].

Eight threads append at once, then the main thread reads the table and its history and the
script ends: the shape that once ended in "terminate called without an active exception".
"""

import sys
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

import sleeper_spark as ss

catalog = ss.Catalog.local(sys.argv[1], group_commit=True)
clicks = catalog.create_table("clicks", pa.schema([("user", pa.string()), ("n", pa.int64())]))


def append(i: int) -> ss.Snapshot:
    return clicks.write(pa.table({"user": [f"u{i}"], "n": [i]}), metadata={"batch": str(i)})


with ThreadPoolExecutor(8) as pool:
    snapshots = list(pool.map(append, range(32)))
print(clicks.scan().num_rows)                  # 32: every append exactly once
print(len(clicks.history()) <= 32)             # True: waiting appends shared versions
grouped = [s for s in clicks.history() if s.members]
print(all(len(s.members) > 1 for s in grouped))   # True

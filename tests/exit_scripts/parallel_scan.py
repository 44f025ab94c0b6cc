"""Several threads scan one table of many files at once, and the script ends right after.

Each scan decodes its files on Arrow's thread pool; the last one finishes moments before the
interpreter does (the warehouse is argv[1]).
"""

import sys
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

import sleeper_spark as ss

FILES = 40
ROWS = 50

catalog = ss.Catalog.local(sys.argv[1])
table = catalog.create_table("events", pa.schema([("k", pa.int64()), ("v", pa.string())]))
for i in range(FILES):
    table.write(pa.table({"k": list(range(i * ROWS, (i + 1) * ROWS)), "v": [str(i)] * ROWS}))


def scan(_: int) -> int:
    return table.scan().num_rows


with ThreadPoolExecutor(6) as pool:
    print(sum(pool.map(scan, range(12))))   # 24000: twelve scans of 2,000 rows

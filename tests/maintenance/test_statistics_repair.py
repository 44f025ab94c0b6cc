"""verify(deep=True) finds a file whose recorded statistics leave out its values; repair_statistics rewrites it."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

import sleeper_spark as ss
from sleeper_spark.table.writes import new_write_id


def test_a_file_with_too_narrow_bounds_is_found_and_rewritten(local_catalog: ss.Catalog) -> None:
    # Given a file whose recorded min leaves out a value it holds, so a scan misses it
    table = local_catalog.create_table("t", pa.schema([("id", pa.int64()), ("x", pa.int64())]))
    (file,) = table.data_file_writer().write_all([pa.table({"id": [1, 2, 3], "x": [5, 50, 500]})])
    table.commit_files([file.model_copy(update={"column_stats": {
        **file.column_stats, "x": ss.ColumnStats(min=50, max=500, null_count=0)}})], "append", {}, new_write_id())
    assert table.scan(filter=pc.field("x") < 10).num_rows == 0 and table.verify().ok

    # When a deep verify looks, and the repair runs
    (problem,) = table.verify(deep=True).problems
    repaired = table.repair_statistics()

    # Then the file was reported, rewritten in one compact snapshot, and the scan finds the row
    assert problem.problem == "stats" and problem.path == file.path
    assert repaired is not None and repaired.operation == "compact" and repaired.metadata == {"repair": "statistics"}
    assert table.scan(filter=pc.field("x") < 10).num_rows == 1
    assert table.verify(deep=True).ok and table.repair_statistics() is None

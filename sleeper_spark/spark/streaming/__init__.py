"""``spark.readStream`` and ``df.writeStream`` with ``format("sleeper")``: the rows each new version
appends, each version's changes, and the streaming sink.

Imports ``common``, ``conditions`` and ``source``; never ``native`` (the room beside it).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from pyspark.sql.types import StructType

from sleeper_spark.spark.common.options import open_catalog, parse_stream_read
from sleeper_spark.spark.source.reader import ReadTarget
from sleeper_spark.spark.streaming.stream_changes import ChangesStreamReader
from sleeper_spark.spark.streaming.stream_reader import SleeperStreamReader


def plan_stream_read(options: Mapping[str, str], requested: StructType,
                     default_parallelism: int) -> SleeperStreamReader:
    """Resolves the table and checks the requested columns against it."""
    settings = parse_stream_read(options)
    table = open_catalog(options).table(settings.table)
    state = table.state()
    target = ReadTarget(
        options=tuple(sorted(options.items())), table=table.name, table_id=table.table_id, root=table.root,
        version=state.version, schema=state.schema,
        parallelism=settings.parallelism or default_parallelism,
        max_partition_bytes=settings.max_partition_bytes, relation=uuid.uuid4().hex, guarded=False,
    )
    if settings.read_changes:
        return ChangesStreamReader(target, requested, settings)
    return SleeperStreamReader(target, requested, settings)

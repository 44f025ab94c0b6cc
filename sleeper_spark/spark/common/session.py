"""What the driver knows of its Spark session: its ``spark.sleeper.*`` settings, its parallelism, and
whether the jar answers ``format("sleeper")`` there (learnt when the source is registered)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sleeper_spark.process_state import REGISTERED_SOURCES
from sleeper_spark.spark.common.jvm import jar_entry
from sleeper_spark.spark.common.options import session_options


def current_session_options(spark: Any) -> dict[str, str]:
    """The session's ``spark.sleeper.*`` settings as they are now."""
    return session_options(_session_conf(spark))


def _session_conf(spark: Any) -> Mapping[str, str]:
    """The session conf, or where the session has the jar its ``spark.sleeper.*`` entries only (one
    py4j call instead of a round trip per entry)."""
    entry = jar_entry(spark)
    if entry is not None:
        settings: dict[str, str] = json.loads(str(entry.sessionConf(spark._jsparkSession)))
        return settings
    conf = spark.conf.getAll
    return dict(conf() if callable(conf) else conf)


def session_parallelism(spark: Any) -> int:
    """The session's default parallelism, or 0 where the client cannot know it (Spark Connect)."""
    try:
        return int(spark.sparkContext.defaultParallelism)
    except Exception:  # Spark Connect has no SparkContext on the client
        return 0


def has_jar_source(spark: Any) -> bool:
    """Whether the jar answers ``format("sleeper")`` in ``spark``, as learnt by
    :func:`~sleeper_spark.spark.bridge.datasource.register_source` (which is how a Spark Connect
    client learns that its server has the jar)."""
    registered = REGISTERED_SOURCES.get(spark)
    return isinstance(registered, tuple) and bool(registered[1])

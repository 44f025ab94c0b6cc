"""The options of the ``sleeper`` data source, parsed once into typed values.

Spark hands a Python data source its options with every key lowercased (``metadata.JobName``
arrives as ``metadata.jobname``), so every key here is lowercase and matched as such. Options
split into two groups: the catalog's own settings (given to :meth:`Catalog.from_options`) and
the per-read or per-write ones defined here. Nothing in this module imports pyspark.

Catalogs are cached per process, keyed by their options: Spark reuses its Python workers, so a
worker that commits or reads many times opens the catalog (and its clients) once, and nothing
that holds a client is ever pickled.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone

from sleeper_spark.config import CatalogConfig
from sleeper_spark.errors import ConfigError
from sleeper_spark.table import Catalog

SESSION_PREFIX = "spark.sleeper."

# Options that are not catalog settings. Keys are lowercase, as Spark delivers them.
TABLE = "table"
PATH = "path"  # what save(name) / load(name) set
PARTITION_BY = "partition_by"
EVENT_TIME_COLUMN = "event_time_column"
APP_ID = "app_id"
APP_VERSION = "app_version"
WRITE_ID = "write_id"
METADATA_PREFIX = "metadata."
# Spark lowercases option keys, which would change the keys of ``metadata.<key>``; the helper
# API sends the metadata as one JSON object instead, which keeps them exactly.
METADATA_JSON = "metadata_json"
TARGET_FILE_BYTES = "target_file_bytes"
ROW_GROUP_ROWS = "row_group_rows"
VERSION_AS_OF = "versionasof"
TIMESTAMP_AS_OF = "timestampasof"
PARALLELISM = "parallelism"
MAX_PARTITION_BYTES = "max_partition_bytes"
# Set by the helper API: adds the hidden column that lets scans be pruned (sleeper_spark.spark.scans).
SCAN_GUARD = "scan_guard"
GUARD_COLUMN = "_sleeper_scan"
# Streaming: Spark passes the sink its checkpoint location among the options; the source's own.
CHECKPOINT_LOCATION = "checkpointlocation"
STARTING_VERSION = "startingversion"
IGNORE_CHANGES = "ignorechanges"
MAX_FILES_PER_TRIGGER = "maxfilespertrigger"

SOURCE_KEYS = frozenset({
    TABLE, PATH, PARTITION_BY, EVENT_TIME_COLUMN, APP_ID, APP_VERSION, WRITE_ID, METADATA_JSON,
    TARGET_FILE_BYTES, ROW_GROUP_ROWS, VERSION_AS_OF, TIMESTAMP_AS_OF, PARALLELISM, MAX_PARTITION_BYTES,
    SCAN_GUARD, CHECKPOINT_LOCATION, STARTING_VERSION, IGNORE_CHANGES, MAX_FILES_PER_TRIGGER,
})


def lowered(options: Mapping[str, str]) -> dict[str, str]:
    return {str(key).lower(): str(value) for key, value in options.items()}


def session_options(conf: Mapping[str, str]) -> dict[str, str]:
    """The ``spark.sleeper.<option>`` entries of a session conf, as data source options."""
    return {key[len(SESSION_PREFIX):].lower(): value for key, value in conf.items()
            if key.lower().startswith(SESSION_PREFIX) and len(key) > len(SESSION_PREFIX)}


def merge(*layers: Mapping[str, str]) -> dict[str, str]:
    """Later layers win; keys are compared without case, as Spark compares them."""
    merged: dict[str, str] = {}
    for layer in layers:
        merged.update(lowered(layer))
    return merged


def catalog_options(options: Mapping[str, str]) -> dict[str, str]:
    """Only the catalog's settings, so that :meth:`Catalog.from_options` still refuses typos."""
    return {key: value for key, value in lowered(options).items()
            if key not in SOURCE_KEYS and not key.startswith(METADATA_PREFIX)}


_catalogs: dict[CatalogConfig, Catalog] = {}
_catalogs_lock = threading.Lock()


def open_catalog(options: Mapping[str, str]) -> Catalog:
    """The catalog these options name, opened once per process.

    Keyed by the parsed config, whose warehouse is canonical: ``s3a://b/w`` and ``s3://b/w/``
    are one warehouse, and so one catalog with one cached state per table.
    """
    config = CatalogConfig.from_options(catalog_options(options))
    with _catalogs_lock:
        catalog = _catalogs.get(config)
        if catalog is None:
            catalog = _catalogs[config] = Catalog(config)
        return catalog


@dataclass(frozen=True)
class WriteOptions:
    """The per-write options of a ``save``."""

    table: str
    partition_by: tuple[str, ...] | None
    event_time_column: str | None
    metadata: dict[str, str] = field(default_factory=dict)
    app_id: str | None = None
    app_version: int | None = None
    write_id: str = ""
    target_file_bytes: int | None = None
    row_group_rows: int | None = None


@dataclass(frozen=True)
class ReadOptions:
    """The per-read options of a ``load``."""

    table: str
    version: int | None
    timestamp: datetime | None
    parallelism: int | None
    max_partition_bytes: int
    guarded: bool


@dataclass(frozen=True)
class StreamReadOptions:
    """The options of a ``readStream.load``."""

    table: str
    starting_version: int | None  # None: from the table's first version
    starting_latest: bool  # startingVersion=latest: only versions committed after the query starts
    ignore_changes: bool
    max_files_per_trigger: int | None
    parallelism: int | None
    max_partition_bytes: int


DEFAULT_MAX_PARTITION_BYTES = 128 * 2**20  # as Spark's spark.sql.files.maxPartitionBytes


def table_name(options: Mapping[str, str]) -> str:
    name = options.get(TABLE) or options.get(PATH)
    if not name:
        raise ConfigError("name the table: .save('events') / .load('events') or .option('table', 'events')")
    return name


def parse_write(options: Mapping[str, str]) -> WriteOptions:
    options = lowered(options)
    partition_by = None
    if PARTITION_BY in options:
        partition_by = tuple(part.strip() for part in options[PARTITION_BY].split(",") if part.strip())
    return WriteOptions(
        table=table_name(options),
        partition_by=partition_by,
        event_time_column=options.get(EVENT_TIME_COLUMN) or None,
        metadata=_metadata(options),
        app_id=options.get(APP_ID),
        app_version=_integer(options, APP_VERSION),
        write_id=options.get(WRITE_ID) or uuid.uuid4().hex,
        target_file_bytes=_integer(options, TARGET_FILE_BYTES),
        row_group_rows=_integer(options, ROW_GROUP_ROWS),
    )


def parse_read(options: Mapping[str, str]) -> ReadOptions:
    options = lowered(options)
    timestamp = None
    if options.get(TIMESTAMP_AS_OF):
        timestamp = parse_timestamp(options[TIMESTAMP_AS_OF])
    return ReadOptions(
        table=table_name(options),
        version=_integer(options, VERSION_AS_OF),
        timestamp=timestamp,
        parallelism=_integer(options, PARALLELISM),
        max_partition_bytes=_integer(options, MAX_PARTITION_BYTES) or DEFAULT_MAX_PARTITION_BYTES,
        guarded=options.get(SCAN_GUARD, "false").strip().lower() == "true",
    )


def parse_stream_read(options: Mapping[str, str]) -> StreamReadOptions:
    """The options of a streaming read; time travel options are refused (they mean nothing here)."""
    options = lowered(options)
    if options.get(VERSION_AS_OF) or options.get(TIMESTAMP_AS_OF):
        raise ConfigError("a streaming read takes startingVersion (a version or 'latest'), not versionAsOf "
                          "or timestampAsOf")
    starting = options.get(STARTING_VERSION, "").strip().lower()
    latest = starting == "latest"
    version = None
    if starting and not latest:
        version = int(starting) if starting.isdigit() else 0
        if version < 1:
            raise ConfigError(f"startingVersion must be a table version (1 or more) or 'latest', "
                              f"not {options[STARTING_VERSION]!r}")
    max_files = _integer(options, MAX_FILES_PER_TRIGGER)
    if max_files is not None and max_files < 1:
        raise ConfigError(f"maxFilesPerTrigger must be 1 or more, not {max_files}")
    return StreamReadOptions(
        table=table_name(options),
        starting_version=version,
        starting_latest=latest,
        ignore_changes=_boolean(options, IGNORE_CHANGES),
        max_files_per_trigger=max_files,
        parallelism=_integer(options, PARALLELISM),
        max_partition_bytes=_integer(options, MAX_PARTITION_BYTES) or DEFAULT_MAX_PARTITION_BYTES,
    )


def metadata_option(metadata: Mapping[str, str]) -> dict[str, str]:
    """How the helper API passes metadata: one JSON option, so key case survives Spark."""
    return {METADATA_JSON: json.dumps(dict(metadata), sort_keys=True)} if metadata else {}


def parse_timestamp(text: str) -> datetime:
    """An ISO-8601 time (``2024-05-01T12:00:00Z``, ``2024-05-01 12:00``); without a zone it is UTC."""
    try:
        parsed = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(
            f"timestampAsOf must be an ISO-8601 time such as 2024-05-01T12:00:00Z, not {text!r}"
        ) from None
    return parsed.replace(tzinfo=timezone.utc) if parsed.tzinfo is None else parsed


def _metadata(options: Mapping[str, str]) -> dict[str, str]:
    metadata = {key[len(METADATA_PREFIX):]: value for key, value in options.items()
                if key.startswith(METADATA_PREFIX) and len(key) > len(METADATA_PREFIX)}
    if options.get(METADATA_JSON):
        try:
            decoded = json.loads(options[METADATA_JSON])
        except ValueError:
            decoded = None
        if not isinstance(decoded, dict) or not all(isinstance(v, str) for v in decoded.values()):
            raise ConfigError("the metadata_json option must be a JSON object of strings")
        metadata.update(decoded)
    return metadata


def _integer(options: Mapping[str, str], key: str) -> int | None:
    text = options.get(key)
    if text is None or text == "":
        return None
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"option {key!r} must be an integer, not {text!r}") from None


def _boolean(options: Mapping[str, str], key: str) -> bool:
    text = options.get(key, "false").strip().lower()
    if text not in ("true", "false"):
        raise ConfigError(f"option {key!r} must be true or false, not {text!r}")
    return text == "true"

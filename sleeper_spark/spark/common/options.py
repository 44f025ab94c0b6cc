"""The options of the ``sleeper`` data source, parsed once into typed values.

Every option is declared in the registry :data:`sleeper_spark.config.OPTIONS`: the catalog's
settings (given to :meth:`Catalog.from_options`) and the per-read, per-write and streaming ones
of :mod:`sleeper_spark.source_options`, which this module validates through their pydantic
models. Spark hands a Python data source its options with every key lowercased (``metadata.JobName``
arrives as ``metadata.jobname``); the registry matches keys without case. Nothing in this module
imports pyspark.

Catalogs are cached per process, keyed by their options: Spark reuses its Python workers, so a
worker that commits or reads many times opens the catalog (and its clients) once, and nothing
that holds a client is ever pickled. The cache keeps the 16 catalogs used last.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TypeVar

from pydantic import ValidationError

from sleeper_spark.config import OPTIONS, CatalogConfig
from sleeper_spark.errors import ConfigError
from sleeper_spark.option_specs import Scope, describe
from sleeper_spark.process_state import CATALOGS
from sleeper_spark.source_options import (
    ReadOptions,
    SourceOptions,
    StreamReadOptions,
    StreamWriteOptions,
    WriteOptions,
)
from sleeper_spark.table import Catalog

__all__ = ["ReadOptions", "StreamReadOptions", "StreamWriteOptions", "WriteOptions"]

SESSION_PREFIX = "spark.sleeper."


def _key(name: str) -> str:
    """The key Spark delivers for the registry's option ``name``; fails at import for a name it lacks."""
    return OPTIONS.spec(name).key


# Keys that the helper API sets itself.
APP_ID = _key("app_id")
APP_VERSION = _key("app_version")
WRITE_ID = _key("write_id")
METADATA_JSON = _key("metadata_json")
VERSION_AS_OF = _key("versionAsOf")
TIMESTAMP_AS_OF = _key("timestampAsOf")
PARALLELISM = _key("parallelism")
MERGE_SCHEMA = _key("mergeSchema")
PARTITION_OVERWRITE_MODE = _key("partitionOverwriteMode")
# Adds the hidden column that lets scans be pruned (sleeper_spark.spark.source.scans).
SCAN_GUARD = _key("scan_guard")
GUARD_COLUMN = "_sleeper_scan"


def lowered(options: Mapping[str, str]) -> dict[str, str]:
    return {str(key).lower(): str(value) for key, value in options.items()}


def session_options(conf: Mapping[str, str]) -> dict[str, str]:
    """The ``spark.sleeper.<option>`` entries of a session conf, as data source options.

    An entry that names no option is refused here, naming the conf key, rather than at the
    first read or write.
    """
    options: dict[str, str] = {}
    for key, value in conf.items():
        if key.lower().startswith(SESSION_PREFIX) and len(key) > len(SESSION_PREFIX):
            option = key[len(SESSION_PREFIX):].lower()
            if OPTIONS.find(option) is None:
                raise OPTIONS.unknown(option, origin=f" (the session conf {key!r})")
            options[option] = value
    return options


def merge(*layers: Mapping[str, str]) -> dict[str, str]:
    """Later layers win; keys are compared without case, as Spark compares them."""
    merged: dict[str, str] = {}
    for layer in layers:
        merged.update(lowered(layer))
    return merged


def open_catalog(options: Mapping[str, str]) -> Catalog:
    """The catalog these options name, opened once per process (see
    :data:`sleeper_spark.process_state.CATALOGS`, which keeps the ones used last).

    Keyed by the parsed config, whose warehouse is canonical: ``s3a://b/w`` and ``s3://b/w/``
    are one warehouse, and so one catalog with one cached state per table.
    """
    config = CatalogConfig.from_options(options)
    catalog: Catalog = CATALOGS.get_or_create(config, lambda: Catalog(config))
    return catalog


_Parsed = TypeVar("_Parsed", bound=SourceOptions)


def _parse(model: type[_Parsed], options: Mapping[str, str], scope: Scope) -> _Parsed:
    """``options`` validated by ``model``; unknown keys are refused, other scopes' options ignored."""
    try:
        return model.model_validate(OPTIONS.by_name(lowered(options), scope))
    except ValidationError as error:
        raise ConfigError(describe(error)) from None


def parse_write(options: Mapping[str, str]) -> WriteOptions:
    return _parse(WriteOptions, options, "write")


def parse_stream_write(options: Mapping[str, str]) -> StreamWriteOptions:
    return _parse(StreamWriteOptions, options, "stream sink")


def parse_read(options: Mapping[str, str]) -> ReadOptions:
    return _parse(ReadOptions, options, "read")


def reads_changes(options: Mapping[str, str]) -> bool:
    """Whether a read has ``readChanges=true``: a streaming read of changes (see ``stream_changes``)."""
    return lowered(options).get("readchanges", "").strip().lower() == "true"


def parse_stream_read(options: Mapping[str, str]) -> StreamReadOptions:
    """The options of a streaming read; time travel options are refused (they mean nothing here)."""
    options = lowered(options)
    if options.get(VERSION_AS_OF) or options.get(TIMESTAMP_AS_OF):
        raise ConfigError("a streaming read takes startingVersion (a version or 'latest'), not versionAsOf "
                          "or timestampAsOf")
    return _parse(StreamReadOptions, options, "stream source")


def metadata_option(metadata: Mapping[str, str]) -> dict[str, str]:
    """How the helper API passes metadata: one JSON option, so key case survives Spark."""
    return {METADATA_JSON: json.dumps(dict(metadata), sort_keys=True)} if metadata else {}

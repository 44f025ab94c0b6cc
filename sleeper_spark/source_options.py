"""The per-read, per-write and streaming options of the ``sleeper`` data source, declared once.

Each model's fields are its options: the alias is the key users write, the description what it
is for, the default what an absent option means. :data:`SOURCE_OPTION_SPECS` derives the
registry's entries from them, and :mod:`sleeper_spark.spark.common.options` parses Spark's options into
them. Nothing here imports pyspark: the catalog (:mod:`sleeper_spark.config`) must know these
keys to tell them from typos.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from sleeper_spark.errors import ConfigError
from sleeper_spark.option_specs import OptionSpec, Scope, specs_of

DEFAULT_TARGET_FILE_BYTES = 128 * 2**20
DEFAULT_ROW_GROUP_ROWS = 256 * 1024
DEFAULT_MAX_PARTITION_BYTES = 128 * 2**20  # as Spark's spark.sql.files.maxPartitionBytes
METADATA_PREFIX = "metadata."
INTERNAL: dict[str, Any] = {"internal": True}


def _true_or_false(value: object) -> object:
    # Stricter than pydantic's bool, which would also take "yes", "on" and "1".
    if isinstance(value, str):
        if value.strip().lower() not in ("true", "false"):
            raise ValueError(f"must be true or false, not {value!r}")
        return value.strip().lower() == "true"
    return value


def _blank_is_none(value: object) -> object:
    return None if isinstance(value, str) and not value.strip() else value


TrueOrFalse = Annotated[bool, BeforeValidator(_true_or_false)]
OptionalInt = Annotated[int | None, BeforeValidator(_blank_is_none)]
OptionalText = Annotated[str | None, BeforeValidator(_blank_is_none)]


def parse_timestamp(text: str) -> datetime:
    """An ISO-8601 time (``2024-05-01T12:00:00Z``, ``2024-05-01 12:00``); without a zone it is UTC."""
    try:
        parsed = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(
            f"timestampAsOf must be an ISO-8601 time such as 2024-05-01T12:00:00Z, not {text!r}"
        ) from None
    return parsed.replace(tzinfo=timezone.utc) if parsed.tzinfo is None else parsed


class SourceOptions(BaseModel):
    """What every read and write names: the table."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)
    SCOPES: ClassVar[tuple[Scope, ...]] = ("read", "write", "stream source", "stream sink")
    BATCH_ONLY: ClassVar[tuple[str, ...]] = ()  # fields that are options of a batch read or write only

    table: str = Field(description="the table; `save(name)` and `load(name)` set it through `path`")
    path: str | None = Field(default=None, description="what `save(name)` and `load(name)` set: the table",
                             json_schema_extra=INTERNAL)

    @model_validator(mode="before")
    @classmethod
    def _table_from_path(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data.get("table"):
            if not data.get("path"):
                raise ConfigError("name the table: .save('events') / .load('events') or .option('table', 'events')")
            data = {**data, "table": data["path"]}
        return data


class WriteOptions(SourceOptions):
    """The options of a ``save`` (and of each micro-batch of a streaming write)."""

    SCOPES: ClassVar[tuple[Scope, ...]] = ("write", "stream sink")
    # A streaming sink only appends: which part of the table an overwrite replaces means nothing there.
    BATCH_ONLY: ClassVar[tuple[str, ...]] = ("replace_where", "partition_overwrite_mode")

    partition_by: tuple[str, ...] | None = Field(
        default=None, description="comma-separated partition columns, used when the save creates the table; "
                                  "must match an existing table's")
    metadata: dict[str, str] = Field(
        default={}, alias=METADATA_PREFIX + "<key>",
        description="one metadata entry per option; Spark lowercases option keys, so use "
                    "`catalog.write(..., metadata=...)` to keep upper-case keys")
    # Spark lowercases option keys, which would change the keys of ``metadata.<key>``; the helper
    # API sends the metadata as one JSON object instead, which keeps them exactly.
    metadata_json: OptionalText = Field(default=None, description="the metadata as one JSON object (set by "
                                                                  "`catalog.write`)", json_schema_extra=INTERNAL)
    app_id: str | None = Field(default=None, description="an idempotent write's application; give it with "
                                                         "`app_version`")
    app_version: OptionalInt = Field(default=None, description="an idempotent write's version of `app_id`: "
                                                               "a version already committed is skipped")
    event_time_column: OptionalText = Field(default=None, description="a timestamp column tracked per snapshot, "
                                                                      "used when the save creates the table")
    write_id: str = Field(default_factory=lambda: uuid.uuid4().hex, description="names the files this write "
                          "stages (set by `catalog.write`)", json_schema_extra=INTERNAL)
    target_file_bytes: int = Field(default=DEFAULT_TARGET_FILE_BYTES, gt=0,
                                   description="a task starts a new data file once its file reaches this size")
    row_group_rows: int = Field(default=DEFAULT_ROW_GROUP_ROWS, gt=0, description="rows per Parquet row group")
    merge_schema: TrueOrFalse = Field(default=False, alias="mergeSchema", description="columns the data adds "
                                      "become table columns in the same commit")
    replace_where: OptionalText = Field(
        default=None, alias="replaceWhere",
        description="an overwrite replaces only the partitions this Spark SQL condition over partition columns "
                    "holds for; every written row must be in one of them")
    partition_overwrite_mode: Literal["static", "dynamic"] = Field(
        default="static", alias="partitionOverwriteMode",
        description="`dynamic`: an overwrite replaces only the partitions the data has rows in; `static`: "
                    "the whole table")

    @field_validator("partition_overwrite_mode", mode="before")
    @classmethod
    def _mode_in_any_case(cls, value: Any) -> Any:
        # Spark reads its partitionOverwriteMode in any case (DYNAMIC).
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("partition_by", mode="before")
    @classmethod
    def _split_columns(cls, value: Any) -> Any:
        # "" is kept as no columns: an explicitly unpartitioned table.
        return tuple(part.strip() for part in value.split(",") if part.strip()) if isinstance(value, str) else value

    @model_validator(mode="before")
    @classmethod
    def _gather_metadata(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        metadata = {key[len(METADATA_PREFIX):]: data.pop(key) for key in list(data)
                    if key.lower().startswith(METADATA_PREFIX) and key != METADATA_PREFIX + "<key>"}
        if data.get("metadata_json"):
            metadata.update(_json_metadata(data["metadata_json"]))
        if metadata:
            data[METADATA_PREFIX + "<key>"] = metadata
        return data


def _json_metadata(text: str) -> dict[str, str]:
    try:
        decoded = json.loads(text)
    except ValueError:
        decoded = None
    if not isinstance(decoded, dict) or not all(isinstance(v, str) for v in decoded.values()):
        raise ConfigError("the metadata_json option must be a JSON object of strings")
    return decoded


class StreamWriteOptions(WriteOptions):
    """A streaming write's options: a write's, and the checkpoint Spark hands the sink."""

    SCOPES: ClassVar[tuple[Scope, ...]] = ("stream sink",)

    checkpoint_location: str | None = Field(default=None, alias="checkpointLocation",
                                            description="the query's checkpoint (set by Spark)",
                                            json_schema_extra=INTERNAL)


class ScanOptions(SourceOptions):
    """How a batch or streaming read splits its files over tasks."""

    parallelism: OptionalInt = Field(default=None, ge=1, description="how many tasks read the table; "
                                     "none: the session's default parallelism")
    max_partition_bytes: int = Field(default=DEFAULT_MAX_PARTITION_BYTES, gt=0,
                                     description="at most this many bytes of files per read task, as Spark's "
                                                 "`spark.sql.files.maxPartitionBytes`")


class ReadOptions(ScanOptions):
    """The options of a ``load``."""

    SCOPES: ClassVar[tuple[Scope, ...]] = ("read",)

    version: OptionalInt = Field(default=None, alias="versionAsOf", description="read this version")
    timestamp: datetime | None = Field(default=None, alias="timestampAsOf",
                                       description="read the version current at this ISO-8601 time "
                                                   "(`2024-05-01T12:00:00Z`); without a zone it is UTC")
    guarded: TrueOrFalse = Field(default=False, alias="scan_guard", description="adds the hidden column that "
                                 "lets scans be pruned (set by `catalog.read`)", json_schema_extra=INTERNAL)

    @field_validator("timestamp", mode="before")
    @classmethod
    def _iso_time(cls, value: Any) -> Any:
        if isinstance(value, str):
            return parse_timestamp(value) if value.strip() else None
        return value


class StreamReadOptions(ScanOptions):
    """The options of a ``readStream.load``."""

    SCOPES: ClassVar[tuple[Scope, ...]] = ("stream source",)

    starting: int | Literal["latest"] | None = Field(
        default=None, alias="startingVersion",
        description="a version number: deliver that version and the later ones; `latest`: only versions "
                    "committed after the query started; none: from the table's first version")
    ignore_changes: TrueOrFalse = Field(default=False, alias="ignoreChanges",
                                        description="deliver the files added by overwrites and deletes instead "
                                                    "of failing")
    read_changes: TrueOrFalse = Field(default=False, alias="readChanges",
                                      description="deliver each version's changes: the table's columns and "
                                                  "`_change_type`, `_commit_version`, `_commit_timestamp` "
                                                  "(what `readStream.changes` reads)")
    max_files_per_trigger: OptionalInt = Field(default=None, ge=1, alias="maxFilesPerTrigger",
                                               description="at most this many files per micro-batch, in whole "
                                                           "versions")

    @field_validator("starting", mode="before")
    @classmethod
    def _version_or_latest(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        text = value.strip().lower()
        if not text:
            return None
        if text == "latest":
            return "latest"
        if not text.isdigit() or int(text) < 1:
            raise ConfigError(f"startingVersion must be a table version (1 or more) or 'latest', not {value!r}")
        return int(text)

    @property
    def starting_version(self) -> int | None:
        """The first version to deliver; None: the table's first, or ``latest``."""
        return self.starting if isinstance(self.starting, int) else None

    @property
    def starting_latest(self) -> bool:
        """``startingVersion=latest``: only versions committed after the query starts."""
        return self.starting == "latest"


SOURCE_MODELS: tuple[type[SourceOptions], ...] = (WriteOptions, StreamWriteOptions, ReadOptions, StreamReadOptions)


def _model_specs(model: type[SourceOptions]) -> list[OptionSpec]:
    """The specs of ``model``'s fields; those in its ``BATCH_ONLY`` apply to batch reads and writes only."""
    batch_scopes = frozenset(("read", "write"))
    specs = []
    for spec in specs_of(model, model.SCOPES):
        if spec.field_path[-1] in model.BATCH_ONLY:
            spec = spec.model_copy(update={"scopes": spec.scopes & batch_scopes})
        if spec.scopes:
            specs.append(spec)
    return specs


SOURCE_OPTION_SPECS: tuple[OptionSpec, ...] = tuple(spec for model in SOURCE_MODELS for spec in _model_specs(model))

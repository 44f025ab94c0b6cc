"""Typed settings.

Spark hands a data source its options as a flat, case-insensitive ``dict[str, str]``; the
session conf adds ``spark.sleeper.<option>`` entries. Both become one frozen
:class:`CatalogConfig` here, once, and nothing below deals with strings again.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from sleeper_spark.errors import ConfigError

CatalogKind = Literal["local", "aws", "object_store"]
ConditionalWrites = Literal["native", "dynamodb-lock", "put-and-verify"]


class RetryPolicy(BaseModel):
    """Lode's four knobs for the commit loop: attempts, base delay, max delay, jitter.

    The delay before attempt ``n + 1`` is ``d = min(max_delay, base_delay * 2**n)``, of which a
    fraction ``jitter`` is random: ``d * (1 - jitter) + uniform(0, d * jitter)``. Full jitter
    (1.0) spreads racing writers best; the defaults let 8 processes appending in a tight loop
    all succeed.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_attempts: int = Field(default=100, ge=1)
    base_delay_s: float = Field(default=0.005, ge=0)
    max_delay_s: float = Field(default=0.5, ge=0)
    jitter: float = Field(default=1.0, ge=0, le=1)


class CatalogConfig(BaseModel):
    """Everything needed to open a catalog, in a form that round-trips through strings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    catalog: CatalogKind = "local"
    warehouse: str
    region: str | None = None
    endpoint_url: str | None = None
    s3_endpoint_url: str | None = None
    dynamodb_endpoint_url: str | None = None
    transactions_table: str = "sleeper-transactions"
    snapshots_table: str = "sleeper-snapshots"
    conditional_writes: ConditionalWrites = "native"
    lock_table: str | None = None
    state_snapshot_interval: int = Field(default=100, ge=1)
    # A writer idle for longer than this also checks the state-snapshot pointer when it next
    # reads the log, in case the log was truncated past its cached state.
    recheck_after_s: float = Field(default=300.0, ge=0, le=300.0)
    retry: RetryPolicy = RetryPolicy()

    @model_validator(mode="after")
    def _check_combination(self) -> CatalogConfig:
        if self.conditional_writes == "dynamodb-lock" and not self.lock_table:
            raise ValueError("conditional_writes='dynamodb-lock' needs lock_table (a DynamoDB table name)")
        return self

    @property
    def s3_endpoint(self) -> str | None:
        return self.s3_endpoint_url or self.endpoint_url

    @property
    def dynamodb_endpoint(self) -> str | None:
        return self.dynamodb_endpoint_url or self.endpoint_url

    # -- flat string options -------------------------------------------------------------

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> CatalogConfig:
        """Builds a config from flat string options; keys are case-insensitive.

        Unknown keys are refused, except the per-write options a data source also receives
        (see :data:`WRITE_AND_READ_OPTIONS`), which are ignored here.
        """
        lowered = {key.lower(): value for key, value in options.items()}
        fields: dict[str, object] = {}
        retry: dict[str, object] = {}
        for key, value in lowered.items():
            if key.startswith("retry."):
                retry[key.removeprefix("retry.")] = value
            elif key in _TOP_LEVEL_KEYS:
                fields[key] = value
            elif key in WRITE_AND_READ_OPTIONS or key.startswith("metadata.") or key == "path":
                continue
            else:
                raise unknown_option(key)
        if "warehouse" not in fields:
            raise ConfigError("the 'warehouse' option is required (a local path or s3://bucket/prefix)")
        if retry:
            fields["retry"] = retry
        try:
            return cls.model_validate(fields)
        except ValidationError as error:
            raise ConfigError(_describe(error)) from None

    def to_options(self) -> dict[str, str]:
        """The inverse of :meth:`from_options`: only settings that differ from the defaults."""
        options: dict[str, str] = {"catalog": self.catalog, "warehouse": self.warehouse}
        defaults = CatalogConfig(warehouse=self.warehouse)
        for key in _TOP_LEVEL_KEYS - {"catalog", "warehouse"}:
            value = getattr(self, key)
            if value is not None and value != getattr(defaults, key):
                options[key] = str(value)
        for key, value in self.retry.model_dump().items():
            if value != getattr(RetryPolicy(), key):
                options[f"retry.{key}"] = str(value)
        return options


_TOP_LEVEL_KEYS = frozenset(CatalogConfig.model_fields) - {"retry"}

# Options that a Spark read or write carries beside the catalog settings.
WRITE_AND_READ_OPTIONS = frozenset(
    {
        "partition_by",
        "app_id",
        "app_version",
        "event_time_column",
        "write_id",
        "versionasof",
        "timestampasof",
        "table",
        "max_files_per_partition",
        "target_file_bytes",
        "metadata_json",
        "row_group_rows",
        "parallelism",
        "max_partition_bytes",
        "scan_guard",
    }
)


# The per-read and per-write options as users spell them (Spark lowercases keys on the way in).
WRITE_OPTION_NAMES = ("partition_by", "metadata.<key>", "app_id", "app_version", "event_time_column")
READ_OPTION_NAMES = ("versionAsOf", "timestampAsOf")
STREAM_READ_OPTION_NAMES = ("startingVersion", "ignoreChanges", "maxFilesPerTrigger")


def unknown_option(key: str) -> ConfigError:
    """The error for an option nobody reads: every known option by kind, and the closest one."""
    spelled = [*sorted(_TOP_LEVEL_KEYS), *(f"retry.{name}" for name in RetryPolicy.model_fields),
               *WRITE_OPTION_NAMES, *READ_OPTION_NAMES, *STREAM_READ_OPTION_NAMES]
    by_lowered = {name.lower(): name for name in spelled}
    closest = difflib.get_close_matches(key.lower(), by_lowered, n=1, cutoff=0.6)
    hint = f" (did you mean {by_lowered[closest[0]]!r}?)" if closest else ""
    return ConfigError(
        f"unknown sleeper option {key!r}{hint}. Catalog options: {', '.join(sorted(_TOP_LEVEL_KEYS))}, retry.*; "
        f"write options: {', '.join(WRITE_OPTION_NAMES)}; read options: {', '.join(READ_OPTION_NAMES)}; "
        f"streaming read options: {', '.join(STREAM_READ_OPTION_NAMES)}"
    )


def _describe(error: ValidationError) -> str:
    problems = [f"{'.'.join(str(p) for p in item['loc']) or 'options'}: {item['msg']}" for item in error.errors()]
    return "invalid sleeper options: " + "; ".join(problems)

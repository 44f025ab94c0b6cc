"""Typed settings.

Spark hands a data source its options as a flat, case-insensitive ``dict[str, str]``; the
session conf adds ``spark.sleeper.<option>`` entries. Both become one frozen
:class:`CatalogConfig` here, once, and nothing below deals with strings again.
"""

from __future__ import annotations

import difflib
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote, urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from sleeper_spark.errors import ConfigError

CatalogKind = Literal["local", "aws", "object_store"]
ConditionalWrites = Literal["native", "dynamodb-lock", "put-and-verify"]
WarehouseKind = Literal["local", "s3"]

# The one table that decides which store a warehouse URI means. Hadoop's names for S3
# (s3a://, s3n://) are the same buckets and keys as s3://, and are stored as s3://.
WAREHOUSE_SCHEMES: Mapping[str, WarehouseKind] = {"file": "local", "s3": "s3", "s3a": "s3", "s3n": "s3"}
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+):(.*)", re.DOTALL)  # 2+ letters: "C:" is a drive


@dataclass(frozen=True)
class Warehouse:
    """A warehouse location in its canonical form: a local path, or ``s3://bucket[/prefix]``."""

    kind: WarehouseKind
    uri: str

    @property
    def bucket_and_prefix(self) -> tuple[str, str]:
        """``("bucket", "some/prefix")`` of an S3 warehouse."""
        if self.kind != "s3":
            raise ConfigError(f"warehouse {self.uri!r} is not on S3; expected s3://bucket/prefix")
        bucket, _, prefix = self.uri.removeprefix("s3://").partition("/")
        return bucket, prefix


def resolve_warehouse(location: str) -> Warehouse:
    """Which store ``location`` names, by :data:`WAREHOUSE_SCHEMES`; :class:`ConfigError` if none.

    Plain paths and ``file:`` URIs are local; ``s3://``, ``s3a://`` and ``s3n://`` are S3, returned
    as ``s3://bucket/prefix``. A path such as ``data:2024`` (no slash after the colon) stays a path.
    """
    match = _SCHEME.fullmatch(location)
    if match is None:
        return Warehouse("local", location)
    scheme, rest = match.group(1).lower(), match.group(2)
    kind = WAREHOUSE_SCHEMES.get(scheme)
    if kind == "s3":
        return Warehouse("s3", _canonical_s3(location, rest))
    if kind == "local":
        return Warehouse("local", _file_uri_path(location))
    if rest.startswith("/"):
        known = ", ".join(f"{name}://" for name in WAREHOUSE_SCHEMES)
        raise ConfigError(
            f"warehouse {location!r}: sleeper_spark cannot open {scheme}:// locations; use a local path "
            f"or one of {known} (s3a:// and s3n:// are read as s3://)"
        )
    return Warehouse("local", location)


def _canonical_s3(location: str, rest: str) -> str:
    bucket, _, prefix = rest.removeprefix("//").partition("/")
    if not rest.startswith("//") or not bucket:
        raise ConfigError(f"warehouse {location!r} names no bucket; expected s3://bucket/prefix")
    prefix = prefix.strip("/")
    return f"s3://{bucket}/{prefix}" if prefix else f"s3://{bucket}"


def _file_uri_path(location: str) -> str:
    parts = urlsplit(location)
    if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
        raise ConfigError(f"warehouse {location!r} is not a local file URI; write file:///absolute/path or a path")
    return unquote(parts.path)


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


class StoreRetryPolicy(BaseModel):
    """How one call to a store or log backend is tried again (:mod:`sleeper_spark.storage.retry`).

    Used where a failed call may be retried: a conditional write whose answer was lost or that
    was throttled, a batch with unprocessed items, the release of a lock, a compare-and-swap of
    a pointer that lost a race. The delay before retry ``n`` (1, 2, ...) is
    ``d = min(max_delay_s, base_delay_s * 2**(n - 1))``, of which a fraction ``jitter`` is random,
    as for :class:`RetryPolicy`. A loop stops after ``max_attempts`` attempts or once
    ``max_elapsed_s`` would pass (waits included), whichever comes first, with the caller's
    typed error; a store that keeps failing can never hang a job.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_attempts: int = Field(default=5, ge=1)
    base_delay_s: float = Field(default=0.05, ge=0)
    max_delay_s: float = Field(default=2.0, ge=0)
    jitter: float = Field(default=1.0, ge=0, le=1)
    max_elapsed_s: float = Field(default=60.0, gt=0)

    def delay_s(self, retry: int, rng: random.Random) -> float:
        """The wait before retry ``retry`` (1 for the second attempt)."""
        delay = min(self.max_delay_s, self.base_delay_s * 2 ** min(retry - 1, 30))
        return float(delay * (1 - self.jitter) + rng.uniform(0, delay * self.jitter))


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
    store_retry: StoreRetryPolicy = StoreRetryPolicy()

    @field_validator("warehouse")
    @classmethod
    def _canonical_warehouse(cls, warehouse: str) -> str:
        # ConfigError is not a ValueError, so pydantic lets it through unwrapped.
        return resolve_warehouse(warehouse).uri

    @model_validator(mode="after")
    def _check_combination(self) -> CatalogConfig:
        if self.conditional_writes == "dynamodb-lock" and not self.lock_table:
            raise ValueError("conditional_writes='dynamodb-lock' needs lock_table (a DynamoDB table name)")
        return self

    @property
    def location(self) -> Warehouse:
        """The warehouse and the kind of store it is on."""
        return resolve_warehouse(self.warehouse)

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
        nested: dict[str, dict[str, object]] = {group: {} for group in _NESTED}
        for key, value in lowered.items():
            group, _, name = key.partition(".")
            if group in _NESTED and name:
                nested[group][name] = value
            elif key in _TOP_LEVEL_KEYS:
                fields[key] = value
            elif key in WRITE_AND_READ_OPTIONS or key.startswith("metadata.") or key == "path":
                continue
            else:
                raise unknown_option(key)
        if "warehouse" not in fields:
            raise ConfigError("the 'warehouse' option is required (a local path or s3://bucket/prefix)")
        fields.update({group: values for group, values in nested.items() if values})
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
        for group in _NESTED:
            policy, default = getattr(self, group), getattr(defaults, group)
            for key, value in policy.model_dump().items():
                if value != getattr(default, key):
                    options[f"{group}.{key}"] = str(value)
        return options


# Settings given as ``<group>.<knob>`` options: the commit loop's and the store calls' retries.
_NESTED = ("retry", "store_retry")
_TOP_LEVEL_KEYS = frozenset(CatalogConfig.model_fields) - set(_NESTED)

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
               *(f"store_retry.{name}" for name in StoreRetryPolicy.model_fields),
               *WRITE_OPTION_NAMES, *READ_OPTION_NAMES, *STREAM_READ_OPTION_NAMES]
    by_lowered = {name.lower(): name for name in spelled}
    closest = difflib.get_close_matches(key.lower(), by_lowered, n=1, cutoff=0.6)
    hint = f" (did you mean {by_lowered[closest[0]]!r}?)" if closest else ""
    return ConfigError(
        f"unknown sleeper option {key!r}{hint}. Catalog options: {', '.join(sorted(_TOP_LEVEL_KEYS))}, retry.*, "
        "store_retry.*; "
        f"write options: {', '.join(WRITE_OPTION_NAMES)}; read options: {', '.join(READ_OPTION_NAMES)}; "
        f"streaming read options: {', '.join(STREAM_READ_OPTION_NAMES)}"
    )


def _describe(error: ValidationError) -> str:
    problems = [f"{'.'.join(str(p) for p in item['loc']) or 'options'}: {item['msg']}" for item in error.errors()]
    return "invalid sleeper options: " + "; ".join(problems)

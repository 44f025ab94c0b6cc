"""Typed settings.

Spark hands a data source its options as a flat, case-insensitive ``dict[str, str]``; the
session conf adds ``spark.sleeper.<option>`` entries. Both become one frozen
:class:`CatalogConfig` here, once, and nothing below deals with strings again. :data:`OPTIONS`
is the registry of every option, the catalog's derived from the fields of these models.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from sleeper_spark.errors import ConfigError
from sleeper_spark.option_specs import OptionRegistry, describe, specs_of
from sleeper_spark.source_options import SOURCE_OPTION_SPECS

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

    The delay after attempt ``n`` fails (before attempt ``n + 1``) is
    ``d = min(max_delay, base_delay * 2**(n - 1))``: the first back-off is ``base_delay``. Of it a
    fraction ``jitter`` is random: ``d * (1 - jitter) + uniform(0, d * jitter)``. Full jitter
    (1.0) spreads racing writers best; the defaults let 8 processes appending in a tight loop
    all succeed.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_attempts: int = Field(default=100, ge=1, description="commit attempts before CommitFailedError")
    base_delay_s: float = Field(default=0.005, ge=0, description="the first back-off between commit attempts")
    max_delay_s: float = Field(default=0.5, ge=0, description="the longest back-off between commit attempts")
    jitter: float = Field(default=1.0, ge=0, le=1, description="the random fraction of each back-off")


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

    max_attempts: int = Field(default=5, ge=1, description="attempts of one call to the store or DynamoDB")
    base_delay_s: float = Field(default=0.05, ge=0, description="the first back-off between attempts of a call")
    max_delay_s: float = Field(default=2.0, ge=0, description="the longest back-off between attempts of a call")
    jitter: float = Field(default=1.0, ge=0, le=1, description="the random fraction of each back-off")
    max_elapsed_s: float = Field(default=60.0, gt=0, description="the seconds after which a call stops retrying")

    def delay_s(self, retry: int, rng: random.Random) -> float:
        """The wait before retry ``retry`` (1 for the second attempt)."""
        delay = min(self.max_delay_s, self.base_delay_s * 2 ** min(retry - 1, 30))
        return float(delay * (1 - self.jitter) + rng.uniform(0, delay * self.jitter))


class CatalogConfig(BaseModel):
    """Everything needed to open a catalog, in a form that round-trips through strings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    catalog: CatalogKind = Field(default="local", description="local, aws or object_store")
    warehouse: str = Field(description="a local path, or s3://bucket/prefix")
    region: str | None = Field(default=None, description="AWS region of S3 and DynamoDB")
    endpoint_url: str | None = Field(default=None, description="one endpoint for S3 and DynamoDB")
    s3_endpoint_url: str | None = Field(default=None, description="the S3 endpoint; wins over endpoint_url")
    dynamodb_endpoint_url: str | None = Field(default=None,
                                              description="the DynamoDB endpoint; wins over endpoint_url")
    transactions_table: str = Field(default="sleeper-transactions", description="aws: the DynamoDB table of the logs")
    snapshots_table: str = Field(default="sleeper-snapshots",
                                 description="aws: the DynamoDB table of state-snapshot pointers and table registry")
    conditional_writes: ConditionalWrites = Field(default="native", description="object_store: how a log entry is "
                                                  "written once: native, dynamodb-lock or put-and-verify")
    lock_table: str | None = Field(default=None, description="the DynamoDB table of dynamodb-lock")
    state_snapshot_interval: int = Field(default=100, ge=1, description="a commit whose version is a multiple of "
                                         "this also writes a state snapshot")
    # A writer idle for longer than this also checks the state-snapshot pointer when it next
    # reads the log, in case the log was truncated past its cached state.
    recheck_after_s: float = Field(default=300.0, ge=0, le=300.0, description="a writer idle for longer re-reads "
                                   "the state-snapshot pointer before trusting its cached state")
    group_commit: bool = Field(default=False, description="let one log transaction carry the appends of many "
                               "writers (threads or processes) that commit at the same moment")
    iceberg_publish: bool = Field(default=False, description="every table publishes Iceberg metadata beside it "
                                  "after each commit (a table's iceberg.publish property overrides this); needs "
                                  "the iceberg extra")
    delta_publish: bool = Field(default=False, description="every table publishes a Delta log (_delta_log) beside "
                                "it after each commit (a table's delta.publish property overrides this)")
    iceberg_catalog: str | None = Field(default=None, description="a pyiceberg catalog that published tables are "
                                        "registered and committed in: its properties as a JSON object, e.g. "
                                        "{\"type\": \"glue\"} (a dict is accepted too)")
    iceberg_namespace: str = Field(default="default", description="the Iceberg namespace (Glue database) of "
                                   "published tables whose names have no dot")
    retry: RetryPolicy = RetryPolicy()
    store_retry: StoreRetryPolicy = StoreRetryPolicy()

    @field_validator("iceberg_catalog", mode="before")
    @classmethod
    def _catalog_properties(cls, value: Any) -> Any:
        # Kept as JSON text, so that the setting round-trips through flat string options.
        if isinstance(value, Mapping):
            return json.dumps({str(k): str(v) for k, v in value.items()}, sort_keys=True)
        if isinstance(value, str) and value.strip():
            try:
                parsed = json.loads(value)
            except json.JSONDecodeError as error:
                raise ValueError(f"iceberg_catalog must be a JSON object of pyiceberg catalog properties: "
                                 f"{error}") from None
            if not isinstance(parsed, dict):
                raise ValueError("iceberg_catalog must be a JSON object of pyiceberg catalog properties")
            return json.dumps({str(k): str(v) for k, v in parsed.items()}, sort_keys=True)
        return value or None

    @property
    def iceberg_catalog_properties(self) -> dict[str, str] | None:
        """The pyiceberg catalog's properties, if one is configured."""
        return json.loads(self.iceberg_catalog) if self.iceberg_catalog else None

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

        Unknown keys are refused with the closest known option; the read, write and streaming
        options that a data source receives beside these (see :data:`OPTIONS`) are ignored here.
        """
        fields: dict[str, Any] = {}
        for key, value in OPTIONS.by_name({key.lower(): value for key, value in options.items()}, "catalog").items():
            *groups, name = OPTIONS.spec(key).field_path  # ("retry", "max_attempts") for retry.max_attempts
            target = fields
            for group in groups:
                target = target.setdefault(group, {})
            target[name] = value
        if "warehouse" not in fields:
            raise ConfigError("the 'warehouse' option is required (a local path or s3://bucket/prefix)")
        return cls.of(**fields)

    @classmethod
    def of(cls, **fields: Any) -> CatalogConfig:
        """A config from keyword settings; a setting that is unknown or of the wrong type is a
        :class:`~sleeper_spark.errors.ConfigError` naming it, never pydantic's own error."""
        try:
            return cls.model_validate(fields)
        except ValidationError as error:
            raise ConfigError(describe(error)) from None

    def to_options(self) -> dict[str, str]:
        """The inverse of :meth:`from_options`: catalog, warehouse and the settings that differ from defaults."""
        options: dict[str, str] = {}
        for spec in OPTIONS.specs("catalog"):
            value: object = self
            for name in spec.field_path:
                value = getattr(value, name)
            if spec.name in ("catalog", "warehouse") or (value is not None and value != spec.default):
                options[spec.name] = str(value)
        return options


# Every option of sleeper_spark: the catalog's, from the fields above (the retry policies' as
# ``retry.<knob>`` and ``store_retry.<knob>``), then a read's, a write's and a stream's.
OPTIONS = OptionRegistry([
    *specs_of(CatalogConfig, ["catalog"], exclude=("retry", "store_retry")),
    *specs_of(RetryPolicy, ["catalog"], prefix="retry."),
    *specs_of(StoreRetryPolicy, ["catalog"], prefix="store_retry."),
    *SOURCE_OPTION_SPECS,
])


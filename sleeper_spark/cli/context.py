"""What every command needs: the catalog the global options name, and argument parsers."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Annotated

import pyarrow as pa
import typer

from sleeper_spark.config import OPTIONS, resolve_warehouse
from sleeper_spark.errors import ConfigError
from sleeper_spark.table import Catalog

WAREHOUSE_ENV = "SLEEPER_SPARK_WAREHOUSE"


@dataclass
class Settings:
    """The global options of one run; ``main`` reads ``debug`` when reporting an error."""

    warehouse: str | None = None
    catalog_options: Path | None = None
    debug: bool = False


SETTINGS = Settings()


def open_catalog(settings: Settings = SETTINGS) -> Catalog:
    """The catalog named by ``--warehouse`` or ``--catalog-options``."""
    if settings.warehouse and settings.catalog_options:
        raise ConfigError("give --warehouse or --catalog-options, not both")
    if settings.catalog_options is not None:
        return Catalog.from_options(read_options_file(settings.catalog_options))
    if settings.warehouse:
        # A path is the embedded catalog; an S3 URI (s3://, s3a://, s3n://) an object-store one.
        local = resolve_warehouse(settings.warehouse).kind == "local"
        return Catalog.from_options({"catalog": "local" if local else "object_store",
                                     "warehouse": settings.warehouse})
    raise ConfigError(
        f"no catalog given: pass --warehouse PATH_OR_URI or --catalog-options FILE (or set {WAREHOUSE_ENV})"
    )


def read_options_file(path: Path) -> dict[str, str]:
    """A JSON object of flat catalog options; numbers and booleans are accepted as strings.

    Every key must be a catalog option of the registry (:data:`sleeper_spark.config.OPTIONS`).
    """
    try:
        document = json.loads(path.read_text())
    except OSError as error:
        raise ConfigError(f"cannot read catalog options {path}: {error.strerror}") from None
    except json.JSONDecodeError as error:
        raise ConfigError(f"catalog options {path} are not valid JSON: {error}") from None
    if not isinstance(document, dict):
        raise ConfigError(f"catalog options {path} must hold one JSON object of options")
    options: dict[str, str] = {}
    for key, value in document.items():
        _check_catalog_option(key, path)
        if isinstance(value, bool):
            options[key] = "true" if value else "false"
        elif isinstance(value, (str, int, float)):
            options[key] = str(value)
        elif value is not None:
            raise ConfigError(f"catalog option {key!r} in {path} must be a string, number or boolean")
    return options


def _check_catalog_option(key: str, path: Path) -> None:
    # The registry knows every option; a read or write option here would be silently unused.
    spec = OPTIONS.spec(key)
    if "catalog" not in spec.scopes:
        raise ConfigError(f"{path}: {spec.name!r} is a {' / '.join(sorted(spec.scopes))} option, not a catalog "
                          "option; the command takes catalog options only, so remove it")


_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(s|m|h|d|w)")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_duration(text: str) -> timedelta:
    """``90s``, ``30m``, ``24h``, ``7d``, ``2w`` or ``0``."""
    text = text.strip().lower()
    if text == "0":
        return timedelta(0)
    match = _DURATION.fullmatch(text)
    if match is None:
        raise ConfigError(f"cannot read the duration {text!r}: use e.g. 30m, 24h or 7d")
    return timedelta(**{_UNITS[match.group(2)]: float(match.group(1))})


_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*(b|kb|kib|mb|mib|gb|gib)?")
_SIZE_UNITS = {None: 1, "b": 1, "kb": 10**3, "kib": 2**10, "mb": 10**6, "mib": 2**20, "gb": 10**9, "gib": 2**30}


def parse_size(text: str) -> int:
    """``134217728``, ``128MiB``, ``100MB``, ``1GiB``."""
    match = _SIZE.fullmatch(text.strip().lower())
    if match is None:
        raise ConfigError(f"cannot read the size {text!r}: use e.g. 128MiB or 1GiB")
    size = int(float(match.group(1)) * _SIZE_UNITS[match.group(2)])
    if size <= 0:
        raise ConfigError(f"the size must be positive, not {text!r}")
    return size


_TYPES: dict[str, pa.DataType] = {
    "bool": pa.bool_(), "boolean": pa.bool_(),
    "int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "int": pa.int32(),
    "int64": pa.int64(), "long": pa.int64(),
    "float32": pa.float32(), "float": pa.float32(), "float64": pa.float64(), "double": pa.float64(),
    "string": pa.string(), "binary": pa.binary(), "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"), "timestamp_ntz": pa.timestamp("us"),
}
_COLUMN = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*:\s*([a-z0-9_]+(?:\(\s*\d+\s*,\s*\d+\s*\))?)(\s+not\s+null)?\s*",
                     re.IGNORECASE)
_DECIMAL = re.compile(r"decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)")


def parse_schema(spec: str) -> pa.Schema:
    """``'day:string,writer:int64 not null,amount:decimal(10,2)'`` as an Arrow schema."""
    fields: list[pa.Field] = []
    for column in _split_columns(spec):
        match = _COLUMN.fullmatch(column)
        if match is None:
            raise ConfigError(f"cannot read the column {column.strip()!r}: write name:type, e.g. day:string")
        name, type_name, not_null = match.group(1), match.group(2).lower(), match.group(3)
        decimal = _DECIMAL.fullmatch(type_name)
        if decimal:
            type_: pa.DataType = pa.decimal128(int(decimal.group(1)), int(decimal.group(2)))
        elif type_name in _TYPES:
            type_ = _TYPES[type_name]
        else:
            known = ", ".join(sorted(_TYPES)) + ", decimal(p,s)"
            raise ConfigError(f"unknown type {type_name!r} for column {name!r}; known types: {known}")
        fields.append(pa.field(name, type_, nullable=not not_null))
    if not fields:
        raise ConfigError("the schema names no columns: write e.g. --schema 'day:string,value:float64'")
    return pa.schema(fields)


def _split_columns(spec: str) -> list[str]:
    # Commas inside decimal(p,s) do not separate columns.
    columns, depth, current = [], 0, ""
    for char in spec:
        depth += char == "("
        depth -= char == ")"
        if char == "," and depth == 0:
            columns.append(current)
            current = ""
        else:
            current += char
    if current.strip():
        columns.append(current)
    return [c for c in columns if c.strip()]


def split_names(values: list[str] | None) -> list[str]:
    """Repeated and comma-separated option values as one list: ``-p a,b -p c``."""
    return [name.strip() for value in values or [] for name in value.split(",") if name.strip()]


JsonFlag = Annotated[bool, typer.Option("--json", help="Print one JSON document instead of tables.")]
TableName = Annotated[str, typer.Argument(help="The table's name.", show_default=False)]

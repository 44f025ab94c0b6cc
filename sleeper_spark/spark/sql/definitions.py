"""A table definition from Spark's ``CREATE TABLE`` (``{table, schema, partitionColumns, properties}``, and
``clusterColumns`` for ``CLUSTER BY``),
checked and created; shared by the catalog's ``create`` and by ``CREATE OR REPLACE``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pyspark.sql.types import StructType

from sleeper_spark.errors import ConfigError
from sleeper_spark.table import Catalog, Table

PROVIDER = "sleeper"


def create_table(catalog: Catalog, definition: Mapping[str, Any]) -> Table:
    """The table of a definition ``{table, schema, partitionColumns, properties}`` as CREATE TABLE gives it."""
    schema = StructType.fromJson(json.loads(definition["schema"]))
    properties = checked_properties(definition)
    return catalog.create_table(definition["table"], schema, partition_by=tuple(definition["partitionColumns"]),
                                properties=properties, cluster_by=tuple(definition.get("clusterColumns", ())))


def checked_properties(definition: Mapping[str, Any]) -> dict[str, str]:
    """A definition's table properties; ConfigError for a provider or location a sleeper table cannot have."""
    properties = {str(k): str(v) for k, v in definition.get("properties", {}).items()}
    # Spark passes what the statement said (provider, comment, location, options) among the properties.
    if properties.pop("provider", PROVIDER).lower() != PROVIDER:
        raise ConfigError(f"a sleeper catalog's tables are sleeper tables: CREATE TABLE ... USING {PROVIDER} "
                          "(or leave USING out)")
    if "location" in properties:
        raise ConfigError("a sleeper table lives under its name in the catalog's warehouse: leave LOCATION out")
    return properties

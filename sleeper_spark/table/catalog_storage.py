"""Builds the storage of a catalog from its config."""

from __future__ import annotations

from sleeper_spark.config import CatalogConfig
from sleeper_spark.errors import ConfigError
from sleeper_spark.log import CatalogBackend, ObjectStoreBackend
from sleeper_spark.storage import (
    ConditionalWritesStore,
    ConditionalWriteStrategy,
    LocalObjectStore,
    NativeConditionalWrites,
    ObjectStore,
    open_conditional_writes,
)


def open_backend(config: CatalogConfig) -> CatalogBackend:
    location = config.location
    if config.catalog == "local":
        if location.kind != "local":
            raise ConfigError(f"a local catalog needs a local path, not {location.uri!r}; "
                              "use Catalog.aws or Catalog.object_store for S3")
        store = LocalObjectStore(location.uri)
        return ObjectStoreBackend(store, NativeConditionalWrites(store), config.store_retry)
    if config.catalog == "aws":
        from sleeper_spark.log.aws.aws_catalog_backend import AwsBackend  # boto3 only when asked for

        backend: CatalogBackend = AwsBackend(config)
        return backend
    return ObjectStoreBackend(*_object_store_with_strategy(config), config.store_retry)


def _object_store_with_strategy(config: CatalogConfig) -> tuple[ObjectStore, ConditionalWriteStrategy]:
    store: ObjectStore
    location = config.location
    if location.kind == "s3":
        from sleeper_spark.log.aws.aws_catalog_backend import open_s3_store

        store = open_s3_store(config)
    else:
        store = LocalObjectStore(location.uri)
    conditional = open_conditional_writes(store, config)
    if config.conditional_writes != "native":
        # Spilled bodies, state snapshots and data files are created through the store itself:
        # route its create-if-absent through the strategy too, so nothing relies on the store.
        store = ConditionalWritesStore(store, conditional)
    return store, conditional

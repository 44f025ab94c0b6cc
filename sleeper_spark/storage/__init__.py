"""Object stores (local disk, S3), conditional-write strategies and locks."""

from sleeper_spark.storage.base import NewObject, ObjectInfo, ObjectStore, join_key
from sleeper_spark.storage.conditional import ConditionalWrites, NativeConditionalWrites
from sleeper_spark.storage.local import LocalObjectStore

__all__ = [
    "ConditionalWrites",
    "LocalObjectStore",
    "NativeConditionalWrites",
    "NewObject",
    "ObjectInfo",
    "ObjectStore",
    "join_key",
]

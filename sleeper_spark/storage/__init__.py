"""Object stores (local disk, S3), conditional-write strategies and locks."""

from sleeper_spark.storage.base import NewObject, ObjectInfo, ObjectStore, join_key
from sleeper_spark.storage.conditional import ConditionalWriteStrategy, NativeConditionalWrites
from sleeper_spark.storage.local import LocalObjectStore
from sleeper_spark.storage.locks import HeldLock, LockInfo, Mutex, ReadWriteLock, break_lock, lock_status
from sleeper_spark.storage.put_and_verify import PutAndVerifySettings
from sleeper_spark.storage.put_and_verify_writes import PutAndVerifyConditionalWrites
from sleeper_spark.storage.strategies import ConditionalWritesStore, open_conditional_writes

__all__ = [
    "ConditionalWriteStrategy",
    "ConditionalWritesStore",
    "HeldLock",
    "LocalObjectStore",
    "LockInfo",
    "Mutex",
    "NativeConditionalWrites",
    "NewObject",
    "ObjectInfo",
    "ObjectStore",
    "PutAndVerifyConditionalWrites",
    "PutAndVerifySettings",
    "ReadWriteLock",
    "break_lock",
    "join_key",
    "lock_status",
    "open_conditional_writes",
]

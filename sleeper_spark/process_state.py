"""Everything sleeper_spark keeps for the life of a Python process, in one place.

Spark reuses its Python workers, and a driver runs many jobs: opening a catalog, an AWS client
or a store for every task or call would cost more than the work. So a process keeps these, each
bounded, each behind its own lock (they are shared by every thread), and each dropped in a child
process after ``fork`` where it holds clients that must not cross it:

========================  =============================================  =====================
state                     what and who                                   bound
========================  =============================================  =====================
``AWS_CLIENTS``           boto3 clients (``storage/aws.py``), per        64, LRU; forgotten
                          service, endpoint, region and retry mode       after fork
``CATALOGS``              catalogs the ``sleeper`` source and the        16, LRU
                          streaming sink open in Spark's Python workers
                          (``spark/common/options.py``), per catalog
                          config
``REWRITE_STORES``        stores of compaction and delete tasks in       16, LRU; forgotten
                          Spark's Python workers (``maintenance/``)      after fork
``REGISTERED_SOURCES``    the sessions ``sleeper`` is registered with,   weak: gone with
                          and the session conf it was registered with    the session
                          (``spark/bridge/datasource.py``; read by
                          ``spark/common/session.py``)
``JAR_ENTRIES``           the jar's entry class, per SparkContext that   weak: gone with
                          has the jar of this version                    the context
                          (``spark/common/jvm.py``)
``SAID_ONCE``             INFO lines said once per process               one per distinct
                          (``spark/common/jvm.py``,                      message
                          ``spark/source/scans.py``)
``SESSION_SETTINGS``      the session settings that overlapping native   one per setting
                          writes change together and the last one
                          restores (``spark/native/native_write.py``)
========================  =============================================  =====================

The only other module-level values are the two hooks through which ``spark`` and
``maintenance`` plug into ``Table`` (``table/extensions.py``), set once when the package is
imported. Nothing in this package changes another library's classes or functions.

Nothing here runs at interpreter exit, and none is needed: every thread pool the package starts
is joined before the call that started it returns, so no thread of ours is left when the
interpreter shuts down. The one thread that outlives a call is the publishing thread (Iceberg, Delta) of
a table that publishes (``table/publishing.py``): it is not a daemon, so the interpreter
waits at exit for it to publish what was committed, and it ends by itself a quarter of a second
after it falls idle. Arrow's own pool threads do live on; why they are never handed memory
Python owns (an abort at exit otherwise) is told in :mod:`sleeper_spark.storage.arrow_buffers`.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class ProcessCache(Generic[K, V]):
    """A thread-safe map that keeps the ``size`` entries used last."""

    def __init__(self, size: int, forget_after_fork: bool = False) -> None:
        self.size = size
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()
        if forget_after_fork and hasattr(os, "register_at_fork"):  # POSIX only; elsewhere no fork
            os.register_at_fork(after_in_child=self._forget_in_child)

    def get_or_create(self, key: K, create: Callable[[], V]) -> V:
        """The entry for ``key``, made by ``create`` (under the lock, so once) if there is none."""
        with self._lock:
            value = self._entries.get(key)
            if value is None:
                value = self._entries[key] = create()
                while len(self._entries) > self.size:
                    self._entries.popitem(last=False)
            else:
                self._entries.move_to_end(key)
            return value

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def _forget_in_child(self) -> None:
        # The parent's clients hold connections and locks that a child must not share.
        self._entries = OrderedDict()
        self._lock = threading.Lock()


class OnceSet:
    """Keys seen so far: :meth:`first` is true once per key and process."""

    def __init__(self) -> None:
        self._seen: set[Hashable] = set()
        self._lock = threading.Lock()

    def first(self, key: Hashable) -> bool:
        with self._lock:
            if key in self._seen:
                return False
            self._seen.add(key)
            return True


class SessionRegistry:
    """Per Spark session (held weakly): what was registered with it."""

    def __init__(self) -> None:
        self._entries: weakref.WeakKeyDictionary[Any, Hashable] = weakref.WeakKeyDictionary()
        self.lock = threading.Lock()

    def get(self, session: Any) -> Hashable | None:
        return self._entries.get(session)

    def set(self, session: Any, value: Hashable) -> None:
        self._entries[session] = value


class SharedSetting:
    """A session setting that overlapping users change together: the first sets it, the last restores it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.users = 0
        self.before: str | None = None


AWS_CLIENTS: ProcessCache[Hashable, Any] = ProcessCache(64, forget_after_fork=True)
CATALOGS: ProcessCache[Hashable, Any] = ProcessCache(16)
REWRITE_STORES: ProcessCache[Hashable, Any] = ProcessCache(16, forget_after_fork=True)
REGISTERED_SOURCES = SessionRegistry()
JAR_ENTRIES = SessionRegistry()
SAID_ONCE = OnceSet()
SESSION_SETTINGS: dict[str, SharedSetting] = {"spark.sql.parquet.outputTimestampType": SharedSetting()}

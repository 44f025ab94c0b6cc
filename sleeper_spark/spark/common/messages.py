"""Errors of ``format("sleeper")`` and of the helper API that say what is wrong on their first line.

Spark reports a failure inside a Python data source as ``AnalysisException:
[PYTHON_DATA_SOURCE_ERROR] …`` followed by the worker's traceback, with the sleeper_spark
error on its last line; and it refuses ``partitionBy()`` for a Python source with a message
about "the existing table's" partitioning, even when there is no table yet. PySpark has no hook
to translate the exceptions of ``DataFrameReader.load`` or ``DataFrameWriter.save``, and this
package patches none of pyspark's classes, so those reach the caller as Spark raised them.
:func:`sleeper_error` recovers the sleeper_spark error a Spark exception carries (the helper API
raises that error itself; ``ss.sleeper_error(e)`` does the same for a ``format("sleeper")``
call).

Inside the workers, :func:`short_traceback` re-raises a sleeper_spark error from the entry
point Spark called, so the traceback Spark prints with it is one frame long. In local mode the
executors log in the driver's JVM, and each failed task would print the same error two or three
more times before it reaches the caller; :func:`quiet_duplicate_task_logs` turns those loggers
off there (on a cluster they log on the executors and are left alone).
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import sleeper_spark.errors as errors
from sleeper_spark.errors import ConfigError, SleeperSparkError

_ERROR_LINE = re.compile(r"sleeper_spark\.errors\.(\w+): (.*)")
_PARTITIONING = re.compile(r"partitioning or clustering columns do not match the existing table's.*?"
                           r"provided: ([^\n]*)", re.DOTALL)


def sleeper_error(error: BaseException) -> SleeperSparkError | None:
    """The sleeper_spark error a Spark failure of the ``sleeper`` source stands for, if any.

    ``error`` itself when it is one already; for Spark's exceptions, the error named on the last
    sleeper_spark line of its message, message first, or a ``ConfigError`` explaining Spark's
    refusal of ``partitionBy()``; None for anything else.
    """
    if isinstance(error, SleeperSparkError):
        return error
    text = str(error)
    partitioning = _PARTITIONING.search(text)
    if partitioning is not None:
        columns = ",".join(re.findall(r"identity\((\w+)\)", partitioning.group(1))) or "<columns>"
        return ConfigError(
            f"Spark's partitionBy() cannot hand partition columns to a Python data source such as sleeper: use "
            f'.option("partition_by", "{columns}") instead (it is used when the save creates the table)'
        )
    for name, message in reversed(_ERROR_LINE.findall(text)):
        error_type = getattr(errors, name, None)
        if isinstance(error_type, type) and issubclass(error_type, SleeperSparkError):
            return error_type(message.strip())
    return None


F = TypeVar("F", bound=Callable[..., Any])


def short_traceback(function: F) -> F:
    """Re-raises a sleeper_spark error from ``function`` with only this frame as its traceback."""
    if inspect.isgeneratorfunction(function):
        @functools.wraps(function)
        def generate(*args: Any, **kwargs: Any) -> Iterator[Any]:
            try:
                yield from function(*args, **kwargs)
            except SleeperSparkError as error:
                raise error.with_traceback(None) from None

        return generate  # type: ignore[return-value]

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except SleeperSparkError as error:
            raise error.with_traceback(None) from None

    return call  # type: ignore[return-value]


# Driver-JVM loggers that repeat a failed task's whole error in local mode: the executor's
# report, the task's abort, and the write's abort. The caller gets the error as an exception.
DUPLICATE_TASK_LOGGERS = (
    "org.apache.spark.executor.Executor",
    "org.apache.spark.util.Utils",
    "org.apache.spark.sql.execution.datasources.v2.DataWritingSparkTask",
    "org.apache.spark.sql.execution.datasources.v2.AppendDataExec",
    "org.apache.spark.sql.execution.datasources.v2.OverwriteByExpressionExec",
)


def quiet_duplicate_task_logs(spark: Any) -> None:
    """Turns off :data:`DUPLICATE_TASK_LOGGERS` when ``spark`` runs its executors in this JVM."""
    try:
        context = spark.sparkContext
        if not str(context.master).startswith("local"):
            return
        log4j = context._jvm.org.apache.logging.log4j
        for name in DUPLICATE_TASK_LOGGERS:
            log4j.core.config.Configurator.setLevel(name, log4j.Level.OFF)
    except Exception:  # Spark Connect has no SparkContext; another logging backend has no Configurator
        return

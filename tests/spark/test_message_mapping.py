"""How a Spark failure of the sleeper source becomes its sleeper_spark error (no Spark needed)."""

from __future__ import annotations

import traceback
from collections.abc import Iterator

import pytest

import sleeper_spark as ss
from sleeper_spark.spark.common.messages import short_traceback, sleeper_error


def test_spark_refusing_partition_by_becomes_a_hint_with_the_columns() -> None:
    spark_text = ("requirement failed: The provided partitioning or clustering columns do not match the existing "
                  "table's.\n - provided: identity(day), identity(hour)\n - table: ")

    typed = sleeper_error(IllegalArgument(spark_text))

    assert isinstance(typed, ss.ConfigError)
    assert '.option("partition_by", "day,hour")' in str(typed)


def test_the_last_sleeper_error_named_in_a_worker_traceback_is_raised_message_first() -> None:
    spark_text = ("[PYTHON_DATA_SOURCE_ERROR] Failed to create Python data source instance: Traceback (most recent "
                  'call last):\n  File "source.py", line 58, in schema\n'
                  "sleeper_spark.errors.TableNotFoundError: no table 'nope' in /tmp/wh; known: []\n SQLSTATE: 38000")

    typed = sleeper_error(RuntimeError(spark_text))

    assert isinstance(typed, ss.TableNotFoundError) and str(typed) == "no table 'nope' in /tmp/wh; known: []"
    assert sleeper_error(RuntimeError("bad row")) is None


class IllegalArgument(Exception):
    """Stands in for pyspark's IllegalArgumentException."""


def deep(depth: int) -> None:
    if depth == 0:
        raise ss.StorageError("data file x is missing")
    deep(depth - 1)


@short_traceback
def rows() -> Iterator[int]:
    yield 1
    deep(5)


@short_traceback
def commit() -> None:
    deep(5)


@pytest.mark.parametrize("run", [lambda: list(rows()), commit], ids=["generator", "function"])
def test_a_worker_entry_point_re_raises_with_a_one_frame_traceback(run: object) -> None:
    with pytest.raises(ss.StorageError) as raised:
        run()  # type: ignore[operator]

    frames = traceback.extract_tb(raised.value.__traceback__)
    assert [frame.name for frame in frames][-1] in ("generate", "call")
    assert not any(frame.name == "deep" for frame in frames)


def test_a_sleeper_error_is_its_own_and_other_errors_carry_none() -> None:
    error = ss.TableNotFoundError("no table 't'")

    assert ss.sleeper_error(error) is error
    assert ss.sleeper_error(RuntimeError("[SOMETHING_ELSE] not ours")) is None

"""Rows of the files table (see :mod:`.file_columns`) as FileRef JSON, made column by column.

What pydantic would write for ``layout.file_refs(rows)``, without a Python object per file: each
field becomes a column of JSON text and the columns are joined row by row. A bound decodes to
the value the row holds: numbers, booleans and strings as themselves (a float always with a
fraction or exponent, so it reads back as a float), dates and times as ISO text, decimals as
text, a float that is not finite as ``null`` (as pydantic writes it). Types whose text Arrow
spells differently from Python (times with their zone, decimals) go through Python per value.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from sleeper_spark.models.stat_values import to_stat
from sleeper_spark.state.file_columns import ORDERABLE, FileLayout

_NULL = pa.scalar("null", pa.string())
# Characters JSON must escape; a string without any is its own JSON text between quotes.
_NEEDS_ESCAPE = r'["\\\x00-\x1f]'


def files_json(layout: FileLayout, rows: pa.RecordBatch, finer: Mapping[str, pa.Array] | None = None) -> str:
    """The rows as the items of a JSON array of FileRefs (no brackets), in row order.

    ``finer``: bounds to write instead of the rows' own, by column name (``min.<column>``), where
    the files table's type holds them less exactly than FileRefs do (see ``described_rows``).
    """
    finer = finer or {}
    if rows.num_rows == 0:
        return ""
    stats = []
    for field in layout.schema.fields:
        nulls = rows.column(f"null_count.{field.name}")
        if field.type.name in ORDERABLE:
            low, high = (_json_values(finer.get(name, rows.column(name)), field.type.name)
                         for name in (f"min.{field.name}", f"max.{field.name}"))
        else:
            low = high = pa.array(["null"] * rows.num_rows, pa.string())
        # Null where the file has no statistics for the column: the join below skips it.
        stats.append(_join(f"{json.dumps(field.name)}:{{\"min\":", low, ',"max":', high, ',"null_count":',
                           pc.cast(nulls, pa.string()), "}"))
    partition = [_join(f"{json.dumps(name)}:", pc.fill_null(_json_strings(rows.column(f"partition.{name}")), _NULL))
                 for name in layout.partition_by]
    file = _join('{"path":', _json_strings(rows.column("path")),
                 ',"partition":{', _comma_joined(partition, rows.num_rows),
                 '},"size_bytes":', pc.cast(rows.column("size_bytes"), pa.string()),
                 ',"row_count":', pc.cast(rows.column("row_count"), pa.string()),
                 ',"checksum":', _json_strings(rows.column("checksum")),
                 ',"column_stats":{', _comma_joined(stats, rows.num_rows), "}}")
    return ",".join(file.to_pylist())


def _join(*parts: str | pa.Array) -> pa.Array:
    """Row by row concatenation; null where any array part is null."""
    arrays = [pa.scalar(p, pa.string()) if isinstance(p, str) else p for p in parts]
    return pc.binary_join_element_wise(*arrays, "")


def _comma_joined(items: list[pa.Array], length: int) -> pa.Array:
    """``items`` joined by commas row by row, a null item left out."""
    if not items:
        return pa.array([""] * length, pa.string())
    return pc.binary_join_element_wise(*items, ",", null_handling="skip")


def _json_values(values: pa.Array, type_name: str) -> pa.Array:
    """Each value's JSON text; ``null`` for a null."""
    if type_name == "bool":
        text = pc.if_else(values, "true", "false")
    elif type_name in ("float32", "float64"):
        doubles = pc.cast(values, pa.float64())  # a float32 as the double it is exactly, as the writers keep it
        spelled = pc.cast(doubles, pa.string())
        # Arrow spells 2.0 as "2", which JSON reads back as an integer.
        spelled = pc.if_else(pc.or_(pc.match_substring(spelled, "."), pc.match_substring(spelled, "e")), spelled,
                             pc.binary_join_element_wise(spelled, ".0", ""))
        text = pc.if_else(pc.is_finite(doubles), spelled, _NULL)
    elif type_name == "string":
        text = _json_strings(values)
    elif type_name == "date":
        text = _quoted(pc.cast(values, pa.string()))  # ISO, as date.isoformat
    elif type_name == "timestamp":
        micros = pc.cast(values, pa.timestamp("us", values.type.tz), safe=False)
        text = _python_json(micros.to_pylist())
    elif type_name == "decimal":
        text = _python_json(values.to_pylist())
    else:
        text = pc.cast(values, pa.string())  # integers
    return pc.fill_null(text, _NULL)


def _json_strings(values: pa.Array) -> pa.Array:
    """Strings as JSON strings (null stays null)."""
    if pc.any(pc.match_substring_regex(values, _NEEDS_ESCAPE)).as_py():
        return pa.array([None if v is None else json.dumps(v, ensure_ascii=False) for v in values.to_pylist()],
                        pa.string())
    return _quoted(values)


def _quoted(values: pa.Array) -> pa.Array:
    return _join('"', values, '"')


def _python_json(values: list[Any]) -> pa.Array:
    """Values in their stored form (see ``to_stat``) as JSON text, one Python call per value."""
    return pa.array([None if v is None else json.dumps(to_stat(v), ensure_ascii=False) for v in values], pa.string())

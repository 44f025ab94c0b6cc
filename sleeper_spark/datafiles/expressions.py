"""A pyarrow compute expression as a tree of calls, field references and literals.

pyarrow gives Python no way to look inside an ``Expression``, but it pickles one as an Arrow
IPC file: every literal (and every call's options, as a struct) is one column of a one-row
batch, and the schema's key-value metadata lists the tree in prefix order —
``call <name>`` … its arguments … ``options <column>`` ``end <name>``, ``field_ref <name>``,
``nested_field_ref <count>``, ``literal <column>``. Keys repeat, so the pairs are read in
order from the schema's flatbuffer, which ``Schema.metadata`` (a dict) cannot give.

Anything this module does not recognise becomes :class:`Opaque`, which pruning treats as
"could be anything": an unknown form never drops a file.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc


@dataclass(frozen=True)
class Field:
    name: str


@dataclass(frozen=True)
class Literal:
    value: pa.Scalar


@dataclass(frozen=True)
class Call:
    name: str
    args: tuple[Node, ...]
    options: pa.StructScalar | None


@dataclass(frozen=True)
class Opaque:
    """A part of the expression this module cannot read (a nested field, a new token)."""


Node = Field | Literal | Call | Opaque


def parse(expression: pc.Expression) -> Node:
    """The tree of ``expression``; :class:`Opaque` if its stored form is not understood."""
    try:
        _, (buffer,) = expression.__reduce__()
        reader = pa.ipc.open_file(buffer)
        columns = reader.get_batch(0) if reader.num_record_batches else None
        pairs = _metadata_pairs(reader.schema.serialize().to_pybytes())
        tokens = iter(pairs)
        node = _node(next(tokens), tokens, columns)
        return node if next(tokens, None) is None else Opaque()
    except (pa.ArrowException, ValueError, IndexError, KeyError, StopIteration, UnicodeDecodeError):
        return Opaque()


def _node(token: tuple[str, str], tokens: Iterator[tuple[str, str]], columns: pa.RecordBatch | None) -> Node:
    key, value = token
    if key == "literal":
        if columns is None:
            raise ValueError("a literal without its column")
        return Literal(columns.column(int(value))[0])
    if key == "field_ref":
        return Field(value)
    if key == "nested_field_ref":
        for _ in range(int(value)):
            _node(next(tokens), tokens, columns)
        return Opaque()
    if key != "call":
        raise ValueError(f"unexpected token {key}")
    args: list[Node] = []
    options = None
    while True:
        inner = next(tokens)
        if inner[0] == "end":
            return Call(value, tuple(args), options)
        if inner[0] == "options":
            if columns is None:
                raise ValueError("options without their column")
            scalar = columns.column(int(inner[1]))[0]
            options = scalar if isinstance(scalar, pa.StructScalar) else None
            continue
        args.append(_node(inner, tokens, columns))


# -- the schema's custom metadata, in order, from its flatbuffer -----------------------------


def _metadata_pairs(message: bytes) -> list[tuple[str, str]]:
    """Key-value pairs of a serialized IPC schema message (Message -> Schema -> custom_metadata)."""
    start = 8 if message[:4] == b"\xff\xff\xff\xff" else 4  # continuation marker, then the length
    buf = memoryview(message)[start:]
    root = _u32(buf, 0)
    schema = _deref(buf, _slot(buf, root, 2))  # Message.header
    entries = _slot(buf, schema, 2)  # Schema.custom_metadata
    if entries is None:
        return []
    vector = _deref(buf, entries)
    pairs = []
    for i in range(_u32(buf, vector)):
        entry = _deref(buf, vector + 4 + 4 * i)
        pairs.append((_string(buf, _slot(buf, entry, 0)), _string(buf, _slot(buf, entry, 1))))
    return pairs


def _u32(buf: memoryview, at: int) -> int:
    return int.from_bytes(buf[at:at + 4], "little")


def _slot(buf: memoryview, table: int, index: int) -> int | None:
    """Where field ``index`` of the flatbuffer table at ``table`` is stored, or None if absent."""
    vtable = table - int.from_bytes(buf[table:table + 4], "little", signed=True)
    vtable_size = int.from_bytes(buf[vtable:vtable + 2], "little")
    position = 4 + 2 * index
    if position >= vtable_size:
        return None
    offset = int.from_bytes(buf[vtable + position:vtable + position + 2], "little")
    return table + offset if offset else None


def _deref(buf: memoryview, at: int | None) -> int:
    if at is None:
        raise ValueError("a required flatbuffer field is missing")
    return at + _u32(buf, at)


def _string(buf: memoryview, at: int | None) -> str:
    if at is None:
        return ""
    position = _deref(buf, at)
    length = _u32(buf, position)
    return bytes(buf[position + 4:position + 4 + length]).decode("utf-8")

"""Bytes read from a store, handed to Arrow's readers in memory Arrow owns.

Why a copy: ``pa.BufferReader(data)`` and ``pa.py_buffer(data)`` over Python ``bytes`` make an
Arrow buffer that keeps the ``bytes`` object alive, and releasing it takes the GIL
(``arrow::py::PyBuffer::~PyBuffer``). Arrow's readers decode on Arrow's own thread pool (a
Parquet file's columns, an IPC file's compressed buffers), and a pool thread drops its references
to the file's reader only after it has marked its work done: the caller may already have its
table and moved on. When that caller is the last line of a script, the interpreter can be
finalizing when the pool thread releases the buffer; CPython 3.11 then ends the thread with
``pthread_exit`` inside the buffer's destructor, which is ``noexcept``, so the C++ runtime calls
``std::terminate``: "terminate called without an active exception", exit status 134, after all
of the script's work and output were done (1 to 2 runs in 100 of the group-commit example of
docs/usage.md, four at once on a loaded machine; apache/arrow#45017 shows the same stack). A
buffer Arrow allocated itself is freed without the GIL, from any thread, at any time. The copy
(a memcpy) costs a few per cent of the SHA-256 every read already computes over the same bytes.
"""

from __future__ import annotations

import pyarrow as pa


def arrow_owned(data: bytes) -> pa.Buffer:
    """A copy of ``data`` in Arrow's memory, safe to hand to Arrow readers that use threads."""
    buffer = pa.allocate_buffer(len(data))
    memoryview(buffer).cast("B")[:] = data  # Arrow's buffers are typed "b"; bytes are "B"
    return buffer


def arrow_reader(data: bytes) -> pa.BufferReader:
    """A random-access Arrow file over a copy of ``data`` (see :func:`arrow_owned`)."""
    return pa.BufferReader(arrow_owned(data))

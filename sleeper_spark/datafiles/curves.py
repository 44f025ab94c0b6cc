"""Space-filling curves over the clustering columns of rows: the order clustering compaction writes.

Each clustering column becomes a coordinate: the value's dense rank among the rows being laid
out, scaled to ``bits`` bits, so any orderable type (numbers, strings, dates, binary) maps the
same way and skewed values still spread over the whole range. A row's key is its position on a
Hilbert curve through those coordinates; rows sorted by key and cut into files in that order
give files that each cover a compact box of the columns' space, which min/max statistics then
prune. :func:`z_order_keys` (Morton order, bits interleaved) is kept for comparison:
``bench/curves.py`` measures both, ADR 0015 says why Hilbert.

Pure Arrow compute (no numpy, which pyarrow does not require): about 10 vectorized operations per
bit and column.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

KEY_BITS = 63  # the keys are uint64; one bit spare keeps every shift in range
MAX_BITS_PER_COLUMN = 16  # 65,536 cells a column: far finer than any file's share of a table


def bits_per_column(columns: int) -> int:
    if columns < 1:
        raise ValueError("a curve needs at least one column")
    return min(MAX_BITS_PER_COLUMN, KEY_BITS // columns)


def coordinates(data: pa.Table, columns: Sequence[str], bits: int) -> list[pa.Array]:
    """Each column's values as integers in ``[0, 2**bits)``: dense ranks, scaled; nulls rank last."""
    scale = 1 << bits
    result = []
    for name in columns:
        values = data.column(name).combine_chunks()
        ranks = pc.subtract(pc.rank(values, sort_keys="ascending", tiebreaker="dense"), 1).cast(pa.uint64())
        distinct = int(pc.max(ranks).as_py() or 0) + 1 if len(ranks) else 1
        # Spread the ranks over the whole range, so that every column weighs the same on the curve
        # (integer division: rank * 2**16 stays far below 2**64 for any number of rows held in memory).
        scaled = pc.divide(pc.multiply(ranks, pa.scalar(scale, pa.uint64())), pa.scalar(distinct, pa.uint64()))
        result.append(pc.min_element_wise(scaled, pa.scalar(scale - 1, pa.uint64())))
    return result


def hilbert_keys(coords: Sequence[pa.Array], bits: int) -> pa.Array:
    """The Hilbert index of each row (Skilling, "Programming the Hilbert curve", AIP 2004)."""
    x = [c.cast(pa.uint64()) for c in coords]
    dims = len(x)
    zero = pa.scalar(0, pa.uint64())
    q = 1 << (bits - 1)
    # Inverse "undo excess work": from the top bit down, invert or exchange the lower bits.
    while q > 1:
        p = pa.scalar(q - 1, pa.uint64())
        for i in range(dims):
            bit_set = pc.not_equal(pc.bit_wise_and(x[i], pa.scalar(q, pa.uint64())), zero)
            if i == 0:
                x[0] = pc.if_else(bit_set, pc.bit_wise_xor(x[0], p), x[0])
                continue
            swap = pc.if_else(bit_set, zero, pc.bit_wise_and(pc.bit_wise_xor(x[0], x[i]), p))
            x[0] = pc.bit_wise_xor(pc.if_else(bit_set, pc.bit_wise_xor(x[0], p), x[0]), swap)
            x[i] = pc.bit_wise_xor(x[i], swap)
        q >>= 1
    # Gray encode.
    for i in range(1, dims):
        x[i] = pc.bit_wise_xor(x[i], x[i - 1])
    t = pc.bit_wise_and(x[0], zero)
    q = 1 << (bits - 1)
    while q > 1:
        bit_set = pc.not_equal(pc.bit_wise_and(x[dims - 1], pa.scalar(q, pa.uint64())), zero)
        t = pc.if_else(bit_set, pc.bit_wise_xor(t, pa.scalar(q - 1, pa.uint64())), t)
        q >>= 1
    x = [pc.bit_wise_xor(c, t) for c in x]
    return _interleave(x, bits)


def z_order_keys(coords: Sequence[pa.Array], bits: int) -> pa.Array:
    """The Morton (Z-order) index of each row: the coordinates' bits interleaved."""
    return _interleave([c.cast(pa.uint64()) for c in coords], bits)


def _interleave(x: Sequence[pa.Array], bits: int) -> pa.Array:
    """Bit ``bits - 1`` of every coordinate first, then bit ``bits - 2`` of each, and so on."""
    dims = len(x)
    one = pa.scalar(1, pa.uint64())
    key = pc.bit_wise_and(x[0], pa.scalar(0, pa.uint64()))
    for b in range(bits - 1, -1, -1):
        for i in range(dims):
            bit = pc.bit_wise_and(pc.shift_right(x[i], pa.scalar(b, pa.uint64())), one)
            key = pc.shift_left(key, one)
            key = pc.bit_wise_or(key, bit)
    return key


def curve_keys(data: pa.Table, columns: Sequence[str], curve: str = "hilbert") -> pa.Array:
    """Each row's position on the curve over ``columns`` (uint64 below 2**63); positions compare
    only among the rows of one call, since the coordinates are ranks among them."""
    if not len(data):
        return pa.array([], pa.uint64())
    bits = bits_per_column(len(columns))
    coords = coordinates(data, columns, bits)
    return hilbert_keys(coords, bits) if curve == "hilbert" else z_order_keys(coords, bits)


def curve_order(data: pa.Table, columns: Sequence[str], curve: str = "hilbert") -> pa.Array:
    """Indices that put ``data``'s rows in curve order over ``columns`` (stable: ties keep row order)."""
    keys = curve_keys(data, columns, curve)
    return pc.sort_indices(pa.table({"key": keys}), sort_keys=[("key", "ascending")])


def sort_by_curve(data: pa.Table, columns: Sequence[str], curve: str = "hilbert") -> pa.Table:
    """``data``'s rows in curve order over ``columns``."""
    return data.take(curve_order(data, columns, curve))

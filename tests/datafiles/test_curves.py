"""The space-filling curves clustering compaction orders rows by."""

from __future__ import annotations

import datetime
import decimal
import itertools
import random

import pyarrow as pa
import pytest

from sleeper_spark.datafiles.curves import (
    bits_per_column,
    coordinates,
    hilbert_keys,
    sort_by_curve,
    z_order_keys,
)


def grid(dims: int, bits: int) -> list[pa.Array]:
    points = list(itertools.product(range(1 << bits), repeat=dims))
    return [pa.array([p[i] for p in points], pa.uint64()) for i in range(dims)]


@pytest.mark.parametrize(("dims", "bits"), [(2, 1), (2, 3), (2, 5), (3, 3), (4, 2)])
def test_the_hilbert_curve_visits_every_cell_once_stepping_to_a_neighbour(dims: int, bits: int) -> None:
    coords = grid(dims, bits)
    keys = hilbert_keys(coords, bits).to_pylist()
    # Every cell has its own key, and the keys are exactly 0 .. cells - 1
    assert sorted(keys) == list(range(1 << (dims * bits)))
    # And consecutive keys are cells one step apart along one axis
    cell_of = {key: tuple(c[i].as_py() for c in coords) for i, key in enumerate(keys)}
    for key in range(len(keys) - 1):
        a, b = cell_of[key], cell_of[key + 1]
        assert sum(abs(x - y) for x, y in zip(a, b, strict=True)) == 1, (key, a, b)


def test_the_z_order_key_interleaves_the_bits_of_the_coordinates() -> None:
    coords = grid(2, 3)
    keys = z_order_keys(coords, 3).to_pylist()
    for i, key in enumerate(keys):
        x, y = coords[0][i].as_py(), coords[1][i].as_py()
        expected = 0
        for b in range(2, -1, -1):
            expected = (expected << 2) | (((x >> b) & 1) << 1) | ((y >> b) & 1)
        assert key == expected


@pytest.mark.parametrize("values", [
    [3, None, -1, 3, 10**12],
    ["b", None, "a", "é", ""],
    [b"\x02", None, b"\x01", b""],
    [datetime.date(2024, 1, 2), None, datetime.date(1999, 12, 31)],
    [decimal.Decimal("10.5"), decimal.Decimal("9.25"), None],
    [True, None, False],
    [1.5, float("-inf"), None, -0.5],
])
def test_coordinates_follow_the_order_of_any_orderable_type(values: list[object]) -> None:
    data = pa.table({"v": pa.array(values)})
    coords = coordinates(data, ["v"], 8)[0].to_pylist()
    present = [(v, c) for v, c in zip(values, coords, strict=True) if v is not None]
    for (v1, c1), (v2, c2) in itertools.combinations(present, 2):
        assert (v1 < v2) == (c1 < c2) and (v1 == v2) == (c1 == c2), (v1, c1, v2, c2)  # type: ignore[operator]
    assert all(0 <= c < 256 for c in coords)


def test_many_distinct_values_spread_over_the_whole_range() -> None:
    data = pa.table({"v": pa.array(range(100_000), pa.int64())})
    coords = coordinates(data, ["v"], 4)[0].to_pylist()
    assert coords == sorted(coords) and coords[0] == 0 and coords[-1] == 15
    assert len(set(coords)) == 16


def test_sorting_by_the_curve_keeps_every_row_and_groups_neighbours() -> None:
    rng = random.Random(7)
    rows = [(rng.randrange(1000), rng.randrange(1000)) for _ in range(4000)]
    data = pa.table({"a": [r[0] for r in rows], "b": [r[1] for r in rows], "id": list(range(len(rows)))})
    ordered = sort_by_curve(data, ["a", "b"])
    assert sorted(ordered.column("id").to_pylist()) == list(range(len(rows)))
    # Cut into 16 files in curve order, each file's box covers about a sixteenth of the plane
    # (a random cut would cover nearly all of it)
    a, b = ordered.column("a").to_pylist(), ordered.column("b").to_pylist()
    chunk = len(rows) // 16
    areas = [(max(a[i:i + chunk]) - min(a[i:i + chunk])) * (max(b[i:i + chunk]) - min(b[i:i + chunk])) / 1000**2
             for i in range(0, len(rows), chunk)]
    assert sum(areas) < 2.0, areas


def test_more_columns_get_fewer_bits_each() -> None:
    assert [bits_per_column(n) for n in (1, 2, 3, 4)] == [16, 16, 16, 15]
    with pytest.raises(ValueError):
        bits_per_column(0)

"""A table's changes against the truth: a seeded random run of every kind of write, each version's
changes compared with the difference of the scans around it, and the Spark and SQL reads of the
changes compared with the pyarrow read. ``SLEEPER_DIFFERENTIAL_CHANGES=N`` runs N steps;
``SLEEPER_DIFFERENTIAL_SEED=K`` shifts the seeds, for another random run."""

from __future__ import annotations

import os
import random
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
import pytest
from pyspark.errors import IllegalArgumentException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import sleeper_spark as ss
from sleeper_spark.spark.changes import DRIVER_BYTES_CONF
from sleeper_spark.table.changes import plan_changes
from tests.fixtures.spark import catalog_factory_over
from tests.fixtures.sql_catalog import lake
from tests.reliability.budget import LONG_RUN

pytestmark = pytest.mark.spark

# The local disk is enough here: the changes are read from the same files on every backend.
catalog_factory = catalog_factory_over(["local"])
__all__ = ["catalog_factory", "lake"]

# Six steps by default, ten in a long run (SLEEPER_LONG_RUN=1); SLEEPER_DIFFERENTIAL_CHANGES=N runs N.
STEPS = int(os.environ.get("SLEEPER_DIFFERENTIAL_CHANGES", "10" if LONG_RUN else "6"))
SEED = int(os.environ.get("SLEEPER_DIFFERENTIAL_SEED", "0"))
SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.string()), ("value", pa.float64()), ("note", pa.string())])
DDL = "id long, part string, value double, note string"
SOURCE_DDL = f"{DDL}, op string"
PARTS = [None, "a", "b"]
CHANGE_COLUMNS = ["_change_type", "_commit_version", "_commit_timestamp"]
Row = tuple[Any, ...]


def as_row(values: Iterable[Any]) -> Row:
    """A row as a comparable tuple in which -0.0 and 0.0 differ."""
    return tuple(repr(v) if isinstance(v, float) else v for v in values)


def multiset(data: pa.Table) -> Counter[Row]:
    return Counter(as_row(r[n] for n in SCHEMA.names) for r in data.to_pylist())


def split(changes: pa.Table) -> tuple[Counter[Row], Counter[Row]]:
    """(deleted rows, inserted rows) of a changes read."""
    rows = changes.to_pylist()
    deleted = Counter(as_row(r[n] for n in SCHEMA.names) for r in rows if r["_change_type"] == "delete")
    inserted = Counter(as_row(r[n] for n in SCHEMA.names) for r in rows if r["_change_type"] == "insert")
    assert len(rows) == deleted.total() + inserted.total()
    return deleted, inserted


class Run:
    """A table and the random writes made to it (``done``: the kinds, in order)."""

    def __init__(self, spark: SparkSession, table: ss.Table, rng: random.Random) -> None:
        self.spark, self.table, self.rng = spark, table, rng
        self.next_id = 0
        self.done: list[str] = []

    def new_rows(self, count: int, part: Any = "any") -> list[dict[str, Any]]:
        made = []
        for _ in range(count):
            self.next_id += 1
            made.append({"id": self.next_id % 40, "part": self.rng.choice(PARTS) if part == "any" else part,
                         "value": self.rng.choice([None, 0.0, -1.0, float(self.next_id)]),
                         "note": self.rng.choice([None, "", "x", f"n{self.next_id}"])})
        return made

    def current(self) -> list[dict[str, Any]]:
        return self.table.scan().to_pylist()

    def edited(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Most rows kept as they are (a rewrite copies them), some changed, some dropped."""
        out = []
        for row in rows:
            roll = self.rng.random()
            if roll < 0.7:
                out.append(row)
            elif roll < 0.9:
                out.append({**row, "value": self.rng.choice([None, 0.5, -0.0]), "note": "edited"})
        return out

    def append(self) -> ss.Snapshot | None:
        rows = self.new_rows(self.rng.randint(1, 4))
        if self.current() and self.rng.random() < 0.4:
            rows.append(self.rng.choice(self.current()))  # a row equal to one the table has
        return self.table.write(pa.Table.from_pylist(rows, SCHEMA))

    def overwrite(self) -> ss.Snapshot | None:
        rows = self.edited(self.current()) + self.new_rows(self.rng.randint(0, 2))
        return self.table.write(pa.Table.from_pylist(rows, SCHEMA), mode="overwrite")

    def replace_where(self) -> ss.Snapshot | None:
        part = self.rng.choice(["a", "b"])
        rows = self.edited([r for r in self.current() if r["part"] == part]) + self.new_rows(1, part)
        frame = self.spark.createDataFrame([tuple(r[n] for n in SCHEMA.names) for r in rows], DDL)
        return self.table.write(frame, mode="overwrite", replace_where=f"part = '{part}'")

    def delete_where(self) -> ss.Snapshot | None:
        condition = self.rng.choice(["value < 0", "note IS NULL AND id % 2 = 0", "part = 'a' AND id % 3 = 1"])
        return self.table.delete_where(self.spark, condition)

    def merge(self) -> ss.Snapshot | None:
        existing = {r["id"]: r for r in self.current()}
        chosen = self.rng.sample(sorted(existing), min(len(existing), 3))
        source = [(i, existing[i]["part"], self.rng.choice([None, 7.5]), self.rng.choice(["set", "delete", "keep"]))
                  for i in chosen]
        source += [(100 + r["id"], r["part"], r["value"], "set") for r in self.new_rows(1)]
        frame = self.spark.createDataFrame(source, "id long, part string, value double, op string")
        return (self.table.merge(frame, "target.id = source.id")
                .when_matched_delete(condition="source.op = 'delete'")
                .when_matched_update(set={"value": "source.value", "note": "'merged'"}, condition="source.op = 'set'")
                .when_matched_update(set={"value": "target.value"}, condition="source.op = 'keep'")  # same values
                .when_not_matched_insert(values={"id": "source.id", "part": "source.part", "value": "source.value"})
                .execute())

    def update(self) -> ss.Snapshot | None:
        modulus = self.rng.choice([2, 3, 5])
        new_value = self.rng.choice(["value + 1", "value * 1", "-value"])  # value * 1 changes nothing
        return self.table.update(self.spark, {"value": new_value}, where=f"id % {modulus} = 0")

    def compact(self) -> ss.Snapshot | None:
        for _ in range(2):  # small files for it to compact, whatever came before
            self.table.write(pa.Table.from_pylist(self.new_rows(1, "b"), SCHEMA))
        return self.table.compact(self.spark)

    def restore(self) -> ss.Snapshot | None:
        return self.table.restore(self.rng.randint(2, self.table.state().version))

    def steps(self, count: int) -> None:
        """Every kind of write once, in a random order, then random kinds up to ``count``."""
        kinds: list[Callable[[], ss.Snapshot | None]] = [
            self.append, self.overwrite, self.replace_where, self.delete_where, self.merge, self.update, self.compact,
            self.restore]
        order = self.rng.sample(kinds, len(kinds)) + self.rng.choices(kinds, k=max(0, count - len(kinds)))
        for kind in order:
            kind()
            self.done.append(kind.__name__)


def random_table(spark: SparkSession, catalog: ss.Catalog, seed: int) -> Run:
    run = Run(spark, catalog.create_table("db.t", SCHEMA, partition_by=["part"]), random.Random(seed + SEED))
    for _ in range(3):
        run.append()
    run.steps(STEPS)
    return run


def test_each_version_and_each_range_match_the_scans(spark: SparkSession, catalog: ss.Catalog) -> None:
    run = random_table(spark, catalog, seed=20261126)
    table, rng = run.table, run.rng
    last = table.state().version
    scans = {v: multiset(table.scan(version=v)) for v in range(2, last + 1)}
    scans[1] = Counter()
    # (a) each version's changes: what it removed and what it added
    for version in range(2, last + 1):
        deleted, inserted = split(table.changes(version, version))
        assert (deleted, inserted) == (scans[version - 1] - scans[version], scans[version] - scans[version - 1]), (
            f"version {version} ({table.snapshot(version).operation}) after {run.done}")
    # (b) the net of a range's changes is the difference of the scans around it
    for first, end in [(2, last), *((a, rng.randint(a, last)) for a in rng.sample(range(2, last + 1), 5))]:
        deleted, inserted = split(table.changes(first, end))
        assert (inserted - deleted, deleted - inserted) == (scans[end] - scans[first - 1],
                                                            scans[first - 1] - scans[end]), (first, end, run.done)
    operations = {s.operation for s in table.history()}
    assert {"overwrite", "delete", "merge", "update", "compact", "restore"} <= operations, run.done


def arrow_tuples(data: pa.Table) -> list[Row]:
    """Change rows as tuples (sorted by their text: values may be None), the commit time as
    microseconds since the epoch."""
    micros = data.column("_commit_timestamp").cast(pa.int64()).to_pylist()
    return sorted([(*as_row(r[n] for n in SCHEMA.names), r["_change_type"], r["_commit_version"], m)
                  for r, m in zip(data.to_pylist(), micros, strict=True)], key=repr)


def spark_tuples(frame: DataFrame) -> list[Row]:
    rows = frame.select(*SCHEMA.names, "_change_type", "_commit_version",
                        F.unix_micros("_commit_timestamp").alias("_micros")).collect()
    return sorted([(*as_row(r[n] for n in SCHEMA.names), r["_change_type"], r["_commit_version"], r["_micros"])
                  for r in rows], key=repr)


@pytest.fixture(params=["driver", "spark"])
def compared_on(request: pytest.FixtureRequest, spark: SparkSession) -> Iterator[str]:
    """Runs a test with the versions that removed files compared on the driver (the default for
    small files) and by a Spark aggregate (what larger ones get)."""
    with comparison(spark, str(request.param)):
        yield str(request.param)


@contextmanager
def comparison(spark: SparkSession, where: str) -> Iterator[None]:
    """``where`` the versions that removed files are compared: ``driver`` (the default for small
    files) or ``spark`` (a Spark aggregate, what larger ones get)."""
    if where == "spark":
        spark.conf.set(DRIVER_BYTES_CONF, "0")
    try:
        yield
    finally:
        spark.conf.unset(DRIVER_BYTES_CONF)


def test_the_spark_and_sql_reads_give_the_arrow_rows(spark: SparkSession, lake: ss.Catalog) -> None:
    run = random_table(spark, lake, seed=7)
    table, rng = run.table, run.rng
    last = table.state().version
    ranges = [(2, last), *sorted((a, rng.randint(a, last)) for a in rng.sample(range(2, last + 1), 3))]
    for where in ("driver", "spark"):  # one random table, both comparisons
        with comparison(spark, where):
            for first, end in ranges:
                expected = arrow_tuples(table.changes(first, end))
                assert spark_tuples(table.read_changes(spark, first, end)) == expected, (where, first, end, run.done)
                sql = spark.sql(f"SELECT * FROM lake.db.t CHANGES FROM VERSION {first} TO VERSION {end}")
                assert spark_tuples(sql) == expected, (where, first, end, run.done)
            reader = spark.read.option("startingVersion", "3").option("endingVersion", str(last)).changes("lake.db.t")
            assert spark_tuples(reader) == arrow_tuples(table.changes(3, last)), where


def test_spark_tells_negative_zero_from_zero_as_arrow_does(spark: SparkSession, catalog: ss.Catalog,
                                                           compared_on: str) -> None:
    # Given rows whose floats (top-level, in a struct, in a list) go from 0.0 to -0.0, and copied
    # rows with NaN and nested nulls
    schema = pa.schema([("id", pa.int64()), ("value", pa.float64()), ("point", pa.struct([("x", pa.float32())])),
                        ("tags", pa.list_(pa.float64()))])
    table = catalog.create_table("db.z", schema)
    copied = [{"id": 9, "value": float("nan"), "point": {"x": None}, "tags": [None, float("nan")]},
              {"id": 8, "value": None, "point": None, "tags": None}]
    table.write(pa.Table.from_pylist([{"id": 1, "value": 0.0, "point": {"x": 1.0}, "tags": [1.0]},
                                      {"id": 2, "value": 1.0, "point": {"x": 0.0}, "tags": [1.0]},
                                      {"id": 3, "value": 1.0, "point": {"x": 1.0}, "tags": [0.0]}, *copied], schema))
    over = table.write(pa.Table.from_pylist([{"id": 1, "value": -0.0, "point": {"x": 1.0}, "tags": [1.0]},
                                             {"id": 2, "value": 1.0, "point": {"x": -0.0}, "tags": [1.0]},
                                             {"id": 3, "value": 1.0, "point": {"x": 1.0}, "tags": [-0.0]}, *copied],
                                            schema), mode="overwrite")
    # Then each changed row is a delete and an insert, on both reads, and the copied rows are none
    def tuples(rows: Iterable[Any]) -> list[str]:
        return sorted(repr((r["_change_type"], r["id"], r["value"], r["point"] and r["point"]["x"],
                            r["tags"] and list(r["tags"]))) for r in rows)

    expected = tuples(table.changes(over.version).to_pylist())
    assert [(text.startswith("('insert'"), "-0.0" in text) for text in expected] == [(False, False)] * 3 + [
        (True, True)] * 3
    assert tuples(table.read_changes(spark, over.version).collect()) == expected


def ids_by_type(frame: DataFrame) -> dict[str, list[tuple[int, int]]]:
    out: dict[str, list[tuple[int, int]]] = {}
    for row in frame.collect():
        out.setdefault(row["_change_type"], []).append((row["id"], row["_commit_version"]))
    return {kind: sorted(ids) for kind, ids in out.items()}


def test_compute_updates_pairs_the_images_of_updated_rows(spark: SparkSession, lake: ss.Catalog) -> None:
    # Given a table of unique ids, one UPDATE and one MERGE that updates, deletes and inserts
    table = lake.create_table("db.u", SCHEMA, partition_by=["part"])
    table.write(pa.Table.from_pylist([{"id": i, "part": "ab"[i % 2], "value": float(i), "note": f"n{i}"}
                                      for i in range(12)], SCHEMA))

    def read(**options: str) -> DataFrame:
        reader = spark.read.option("startingVersion", "3")
        for key, value in options.items():
            reader = reader.option(key, value)
        return reader.changes("lake.db.u")

    # Without the row identity property, computeUpdates and netChanges say what to set
    for options in ({"computeUpdates": "true"}, {"deduplicationMode": "netChanges"}):
        with pytest.raises(IllegalArgumentException, match=r"ConfigError: .*changes\.row_id"):
            read(**options).collect()
    table.set_properties({"changes.row_id": "id"})  # version 3
    updated = table.update(spark, {"value": "value + 100"}, where="id IN (1, 4)")  # version 4
    source = spark.createDataFrame([(4, "a", 1.0, None, "set"), (6, "a", 0.0, None, "delete"),
                                    (8, "a", 8.0, None, "keep"), (50, "b", 5.0, "new", "set")], SOURCE_DDL)
    merged = (table.merge(source, "target.id = source.id")
              .when_matched_delete(condition="source.op = 'delete'")
              .when_matched_update(set={"value": "source.value"}, condition="source.op = 'set'")
              .when_matched_update(set={"value": "target.value"}, condition="source.op = 'keep'")
              .when_not_matched_insert().execute())  # version 5
    assert (updated.version, merged.version) == (4, 5)
    # Then computeUpdates pairs each updated row's images in its version; the rest stay deletes and inserts
    assert ids_by_type(read(computeUpdates="true")) == {
        "update_preimage": [(1, 4), (4, 4), (4, 5)], "update_postimage": [(1, 4), (4, 4), (4, 5)],
        "delete": [(6, 5)], "insert": [(50, 5)]}
    images = {(r["_change_type"], r["id"], r["_commit_version"]): r["value"]
              for r in read(computeUpdates="true").collect()}
    assert (images[("update_preimage", 4, 4)], images[("update_postimage", 4, 4)]) == (4.0, 104.0)
    assert (images[("update_preimage", 4, 5)], images[("update_postimage", 4, 5)]) == (104.0, 1.0)
    # And netChanges folds row 4's two updates into one change from its first to its last image
    net = read(deduplicationMode="netChanges", computeUpdates="true").collect()
    net_images = {(r["_change_type"], r["id"]): r["value"] for r in net}
    assert net_images[("update_preimage", 4)] == 4.0 and net_images[("update_postimage", 4)] == 1.0
    assert {(r["_change_type"], r["id"]) for r in net} == {
        ("update_preimage", 1), ("update_postimage", 1), ("update_preimage", 4), ("update_postimage", 4),
        ("delete", 6), ("insert", 50)}


def test_a_merge_into_one_of_many_files_reads_only_the_files_it_replaced(spark: SparkSession,
                                                                         catalog: ss.Catalog) -> None:
    # Given 8 files of contiguous ids
    table = catalog.create_table("db.m", SCHEMA)
    for k in range(8):
        table.write(pa.Table.from_pylist([{"id": k * 100 + i, "part": "a", "value": float(i), "note": None}
                                          for i in range(10)], SCHEMA))
    before = {f.path for f in table.files()}
    # When a MERGE updates one row of one file and inserts one
    source = spark.createDataFrame([(305, "a", -5.0, None, "set"), (9999, "a", 1.0, None, "set")], SOURCE_DDL)
    merged = (table.merge(source, "target.id = source.id").when_matched_update(set={"value": "source.value"})
              .when_not_matched_insert().execute())
    after = {f.path for f in table.files()}
    # Then the plan reads only the file it removed and the files it added
    (change,) = plan_changes(table, merged.version, merged.version).versions
    assert {f.path for f in change.removed} == before - after and len(change.removed) == merged.files_removed == 1
    assert {f.path for f in change.added} == after - before and len(change.added) == merged.files_added
    # And the rows it only copied are not changes
    rows = sorted((r["_change_type"], r["id"], r["value"]) for r in table.changes(merged.version).to_pylist())
    assert rows == [("delete", 305, 5.0), ("insert", 305, -5.0), ("insert", 9999, 1.0)]

"""MERGE and UPDATE: copy on write, one snapshot each.

Both read the files that may hold affected rows (:func:`~sleeper_spark.spark.file_frames.files_frame`),
work out every row of them in Spark, and rewrite only the files in which some row changes; the
rows those files keep are copied into the new files. The new files are staged, then committed as
one ``ReplaceFiles`` (operation ``merge`` or ``update``) whose ``operation_metrics`` say what
happened. The commit checks that nothing it read has changed
(:mod:`sleeper_spark.table.isolation`); if something has, the whole change runs again on the new
state, up to :data:`ATTEMPTS` times, then raises :class:`CommitConflictError`.

MERGE picks the target files by the equalities of its condition (``target.k = source.k``): a
file is read only if one of the source's keys may lie within its statistics (or, for more than
:data:`_EXACT_KEYS` distinct keys, if its statistics overlap the source's range of keys). A
target row matched by two source rows is an error, as in SQL (:class:`MergeCardinalityError`),
and nothing is committed.
"""

from __future__ import annotations

import logging
import math
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from sleeper_spark.commit import idempotent_repeat, utc_now
from sleeper_spark.errors import CommitConflictError, ConfigError, MergeCardinalityError, SchemaMismatchError
from sleeper_spark.models import FileRef, ReplaceFiles, Snapshot, Transaction
from sleeper_spark.source_options import DEFAULT_TARGET_FILE_BYTES
from sleeper_spark.spark.file_frames import FILE_COLUMN, files_frame, files_named, stage_frame
from sleeper_spark.spark.native_write import quoted_column
from sleeper_spark.spark.reader import spark_schema
from sleeper_spark.state import TableState
from sleeper_spark.table.isolation import ReadSet, check_unchanged
from sleeper_spark.table.reading import planned_files
from sleeper_spark.table.writes import check_write_args, commit_staged

if TYPE_CHECKING:
    from sleeper_spark.table import Table

log = logging.getLogger(__name__)

ATTEMPTS = 3  # runs of a merge or update whose commit found what it read changed
_EXACT_KEYS = 10_000  # up to this many distinct source keys, files are matched against each key
_ROW_ID = "_sleeper_row"
_ACTION = "_sleeper_action"
_IN_TARGET = "_sleeper_in_target"
_IN_SOURCE = "_sleeper_in_source"
_KEY = re.compile(r"^\s*\(?\s*(target|source)\.`?(\w+)`?\s*=\s*(target|source)\.`?(\w+)`?\s*\)?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class _Clause:
    kind: str  # "update", "delete" or "insert"
    condition: str | None
    values: Mapping[str, str] | None  # column -> Spark SQL expression; None: every column from source


class MergeBuilder:
    """``t.merge(source, condition)`` with its ``when_*`` clauses; :meth:`execute` runs it.

    ``condition`` and every clause's condition and values are Spark SQL over the aliases
    ``target`` and ``source``. Clauses of one kind apply in the order given: a row takes the
    first whose condition holds.
    """

    def __init__(self, table: Table, source: Any, condition: str) -> None:
        if not isinstance(condition, str) or not condition.strip():
            raise ConfigError("merge takes a Spark SQL join condition, e.g. 'target.id = source.id'")
        self._table = table
        self._source = source
        self._condition = condition
        self._matched: list[_Clause] = []
        self._not_matched: list[_Clause] = []
        self._not_matched_by_source: list[_Clause] = []

    def when_matched_update(self, set: Mapping[str, str] | None = None, condition: str | None = None) -> MergeBuilder:
        self._matched.append(_Clause("update", condition, _values(set, "set")))
        return self

    def when_matched_delete(self, condition: str | None = None) -> MergeBuilder:
        self._matched.append(_Clause("delete", condition, None))
        return self

    def when_not_matched_insert(self, values: Mapping[str, str] | None = None,
                                condition: str | None = None) -> MergeBuilder:
        self._not_matched.append(_Clause("insert", condition, _values(values, "values")))
        return self

    def when_not_matched_by_source_delete(self, condition: str | None = None) -> MergeBuilder:
        self._not_matched_by_source.append(_Clause("delete", condition, None))
        return self

    def execute(self, app_id: str | None = None, app_version: int | None = None,
                metadata: Mapping[str, str] | None = None) -> Snapshot:
        """Runs the merge as one snapshot (operation ``merge``); a repeated ``(app_id, app_version)``
        returns the snapshot that committed it first, and runs nothing."""
        if not (self._matched or self._not_matched or self._not_matched_by_source):
            raise ConfigError("a merge needs at least one when_... clause")
        checked = check_write_args("append", metadata, app_id, app_version)
        # The source is read several times (keys, counts, rows to write), and each read must see
        # the same rows: it is kept for the merge unless the caller keeps it already.
        kept = not self._source.is_cached
        if kept:
            self._source.persist()
        try:
            return _with_retries(self._table, "merge", app_id, app_version,
                                 lambda state: self._run(state, checked, app_id, app_version))
        finally:
            if kept:
                self._source.unpersist()

    def _run(self, state: TableState, metadata: dict[str, str], app_id: str | None,
             app_version: int | None) -> Snapshot:
        from pyspark.sql import functions as F

        table, spark = self._table, self._source.sparkSession
        columns = state.schema.names
        self._check_columns(columns)
        pairs = _key_pairs(self._condition, columns, set(self._source.columns))
        rows = None if self._not_matched_by_source else self._key_filter(state, pairs)
        candidates = planned_files(state, rows) if state.files else []
        inserts_only = not (self._matched or self._not_matched_by_source)
        source = self._source.withColumn(_IN_SOURCE, F.lit(True))
        if candidates and not inserts_only:
            target = _target_frame(table, spark, state, candidates)
            if pairs:
                # Both sides hashed by the keys into about a task per 128 MiB of target files: the
                # join then runs in those tasks rather than the session's shuffle partitions.
                tasks = max(2, math.ceil(sum(f.size_bytes for f in candidates) / DEFAULT_TARGET_FILE_BYTES))
                target = target.repartition(tasks, *[F.col(quoted_column(t)) for t, _ in pairs])
                source = source.repartition(tasks, *[F.col(quoted_column(s)) for _, s in pairs])
            how = "full_outer" if self._not_matched else "left_outer"
            joined = target.alias("target").join(source.alias("source"), F.expr(self._condition), how)
        else:
            joined = self._unmatched_source(source.alias("source"), state, candidates)
        in_target = F.col(f"target.{_IN_TARGET}").isNotNull()
        in_source = F.col(f"source.{_IN_SOURCE}").isNotNull()
        branches = ([(in_target & in_source, "m", self._matched), (in_target & ~in_source, "b",
                                                                  self._not_matched_by_source),
                     (~in_target & in_source, "i", self._not_matched)])
        action = F.lit(None).cast("string")
        codes: dict[str, _Clause] = {}
        cases = []
        for where, prefix, clauses in branches:
            for index, clause in enumerate(clauses):
                code = f"{prefix}{index}"
                codes[code] = clause
                cases.append((where & _condition(clause.condition), code))
        cases += [(in_target & in_source, "km"), (in_target, "kt")]
        for where, code in reversed(cases):
            action = F.when(where, F.lit(code)).otherwise(action)
        types = {f.name: f.dataType for f in spark_schema(state.schema, guarded=False).fields}
        values = []
        for column in columns:
            value = F.col(f"target.{quoted_column(column)}")
            for code, clause in codes.items():
                if clause.kind in ("update", "insert"):
                    new = _value(clause, column)
                    value = F.when(F.col(_ACTION) == code, new.cast(types[column])).otherwise(value)
            values.append(value.alias(column))
        result = (joined.withColumn(_ACTION, action)
                  .select(F.col(_ACTION), F.col(f"target.{FILE_COLUMN}").alias(FILE_COLUMN),
                          F.col(f"target.{_ROW_ID}").alias(_ROW_ID), *values)
                  .where(F.col(_ACTION).isNotNull()))
        if self._matched:
            _check_cardinality(result, [c for c in codes if c.startswith("m")] + ["km"], table.name)
        counts: dict[str, int] = {}
        names = []
        changing = {c for c, clause in codes.items() if clause.kind in ("update", "delete") and c[0] in "mb"}
        for row in result.groupBy(_ACTION, FILE_COLUMN).count().collect():
            counts[row[_ACTION]] = counts.get(row[_ACTION], 0) + row["count"]
            if row[_ACTION] in changing:
                names.append(row[FILE_COLUMN])
        names = sorted(set(names))
        changed = files_named(names, candidates)
        inserting = [c for c, clause in codes.items() if clause.kind == "insert"]
        kept = ["km", "kt", *[c for c, clause in codes.items() if clause.kind == "update"]]
        written = result.where((F.col(FILE_COLUMN).isin(names) & F.col(_ACTION).isin(kept))
                               | F.col(_ACTION).isin(inserting))
        metrics = {
            "rows_inserted": sum(counts.get(c, 0) for c in inserting),
            "rows_updated": sum(counts.get(c, 0) for c, k in codes.items() if k.kind == "update"),
            "rows_deleted": sum(counts.get(c, 0) for c, k in codes.items() if k.kind == "delete"),
            "files_read": len(candidates), "files_rewritten": len(changed),
        }
        return _stage_and_commit(table, state, written.select(*[quoted_column(c) for c in columns]), changed,
                                 ReadSet(state.version, frozenset(f.path for f in candidates), rows), "merge",
                                 metadata, app_id, app_version, metrics)

    def _check_columns(self, columns: Sequence[str]) -> None:
        source_columns = set(self._source.columns)
        for clause in (*self._matched, *self._not_matched):
            if clause.kind == "delete":
                continue
            if clause.values is None:
                missing = [c for c in columns if c not in source_columns]
                if missing:
                    argument = "set" if clause.kind == "update" else "values"
                    raise SchemaMismatchError(
                        f"table {self._table.name!r}: an {clause.kind} of every column takes them from the source, "
                        f"which lacks {missing}; name the values instead ({argument}={{'column': 'expression'}})")
            else:
                unknown = [c for c in clause.values if c not in columns]
                if unknown:
                    raise SchemaMismatchError(f"table {self._table.name!r} has no column(s) {unknown}; its columns: "
                                              f"{list(columns)}")

    def _key_filter(self, state: TableState, pairs: list[tuple[str, str]]) -> pc.Expression | None:
        """The target rows the merge can match: for each equality key (``pairs``, target and source
        column), the source's distinct keys (one job each), or past :data:`_EXACT_KEYS` of them
        their range (one more job)."""
        from pyspark.sql import functions as F

        arrow = state.schema.to_arrow()
        expression: pc.Expression | None = None
        for target_column, source_column in pairs:
            column = F.col(quoted_column(source_column))
            field_type = arrow.field(target_column).type
            found = [row[0] for row in self._source.select(column).where(column.isNotNull()).distinct()
                     .limit(_EXACT_KEYS + 1).collect()]
            try:
                if len(found) <= _EXACT_KEYS:
                    part = pc.field(target_column).isin(pa.array(found, field_type))
                else:
                    low, high = self._source.agg(F.min(column), F.max(column)).collect()[0]
                    part = (pc.field(target_column) >= pc.scalar(pa.scalar(low, field_type))) & \
                           (pc.field(target_column) <= pc.scalar(pa.scalar(high, field_type)))
            except (pa.ArrowException, TypeError, ValueError, OverflowError):
                continue  # a key whose source type does not convert: no pruning on it
            expression = part if expression is None else expression & part
        return expression

    def _unmatched_source(self, source: Any, state: TableState, candidates: list[FileRef]) -> Any:
        """With no target file to read (or only insert clauses): every source row is unmatched
        where no target file can match it; with candidates, the join decides."""
        from pyspark.sql import functions as F

        if candidates:  # inserts only, but some target rows may match: keep the source rows none match
            target = _target_frame(self._table, source.sparkSession, state, candidates)
            return target.alias("target").join(source, F.expr(self._condition), "right_outer") \
                .where(F.col(f"target.{_IN_TARGET}").isNull())
        empty = spark_schema(state.schema, guarded=False)
        nothing = source.sparkSession.createDataFrame([], empty)
        for name, type_ in ((FILE_COLUMN, "string"), (_ROW_ID, "long"), (_IN_TARGET, "boolean")):
            nothing = nothing.withColumn(name, F.lit(None).cast(type_))
        return nothing.alias("target").join(source, F.lit(False), "right_outer")


def update(table: Table, spark: Any, set: Mapping[str, str], where: str | None = None) -> Snapshot:
    """``UPDATE table SET ... WHERE ...``: one snapshot, operation ``update`` (see the module doc)."""
    values = _values(set, "set")
    if not values:
        raise ConfigError("update needs set={'column': 'Spark SQL expression', ...}")
    if where is not None and (not isinstance(where, str) or not where.strip()):
        raise ConfigError("update's where is a Spark SQL condition, e.g. \"day = '2024-05-01'\"")

    def run(state: TableState) -> Snapshot:
        from pyspark.sql import functions as F

        unknown = [c for c in values if c not in state.schema.names]
        if unknown:
            raise SchemaMismatchError(f"table {table.name!r} has no column(s) {unknown}; its columns: "
                                      f"{state.schema.names}")
        files = list(state.files.values())
        if not files:
            return _stage_and_commit(table, state, None, [], ReadSet(state.version, frozenset(), None), "update",
                                     {}, None, None, {"rows_updated": 0, "files_read": 0, "files_rewritten": 0})
        hit = _condition(where)
        types = {f.name: f.dataType for f in spark_schema(state.schema, guarded=False).fields}
        result = files_frame(table, spark, state, files).select(
            F.col(FILE_COLUMN), hit.alias(_ACTION),
            *[(F.when(hit, F.expr(values[c]).cast(types[c])).otherwise(F.col(quoted_column(c))) if c in values
               else F.col(quoted_column(c))).alias(c) for c in state.schema.names])
        counts = result.where(F.col(_ACTION)).groupBy(FILE_COLUMN).count().collect()
        names = [row[FILE_COLUMN] for row in counts]
        changed = files_named(names, files)
        written = result.where(F.col(FILE_COLUMN).isin(names)).select(
            *[quoted_column(c) for c in state.schema.names])
        metrics = {"rows_updated": sum(row["count"] for row in counts), "files_read": len(files),
                   "files_rewritten": len(changed)}
        read = ReadSet(state.version, frozenset(f.path for f in files), None)
        return _stage_and_commit(table, state, written, changed, read, "update", {}, None, None, metrics)

    return _with_retries(table, "update", None, None, run)


def _with_retries(table: Table, operation: str, app_id: str | None, app_version: int | None,
                  run: Callable[[TableState], Snapshot]) -> Snapshot:
    for attempt in range(1, ATTEMPTS + 1):
        state = table.head.catch_up()
        earlier = idempotent_repeat(state, app_id, app_version)
        if earlier is not None:
            return earlier
        try:
            return run(state)
        except CommitConflictError as conflict:
            if attempt == ATTEMPTS:
                raise CommitConflictError(f"{conflict} ({operation} ran {ATTEMPTS} times, and each time a concurrent "
                                          "commit changed what it read)") from None
            log.warning("%s; running the %s again on the new state", conflict, operation)
    raise AssertionError("unreachable")


def _stage_and_commit(table: Table, state: TableState, rows: Any, changed: Sequence[FileRef], read: ReadSet,
                      operation: str, metadata: dict[str, str], app_id: str | None, app_version: int | None,
                      metrics: dict[str, int]) -> Snapshot:
    added: list[FileRef] = []
    write_id = uuid.uuid4().hex
    if rows is not None and (changed or metrics.get("rows_inserted")):
        added, write_id = stage_frame(table, _spread(rows, changed, state.partition_by), state.schema,
                                      state.partition_by)
    metrics = {**metrics, "rows_copied": sum(f.row_count for f in added) - metrics.get("rows_inserted", 0)
               - metrics.get("rows_updated", 0)}
    snapshot_id = uuid.uuid4().hex
    removed = tuple(f.path for f in changed)

    def build(current: TableState) -> Transaction:
        check_unchanged(read, current, operation)
        return ReplaceFiles(snapshot_id=snapshot_id, committed_at=utc_now(), operation=operation, metadata=metadata,
                            write_id=write_id, app_id=app_id, app_version=app_version, removed=removed,
                            added=tuple(added), operation_metrics=metrics)

    snapshot = commit_staged(table.head, table.store, table.root, added, build).snapshot
    log.info("table %s: %s at version %d: %s", table.name, operation, snapshot.version, metrics)
    return snapshot


def _spread(rows: Any, changed: Sequence[FileRef], partition_by: tuple[str, ...]) -> Any:
    """The rows in about as many tasks as files of the target size they fill, each partition value in
    one task: a join's hundreds of shuffle partitions would otherwise write as many tiny files."""
    tasks = max(1, math.ceil(sum(f.size_bytes for f in changed) / DEFAULT_TARGET_FILE_BYTES))
    if partition_by:
        return rows.repartition(tasks, *[quoted_column(c) for c in partition_by])
    return rows.repartition(tasks)


def _target_frame(table: Table, spark: Any, state: TableState, candidates: Sequence[FileRef]) -> Any:
    """The candidate files' rows, each with a row id (for the cardinality check) and a mark that it is a target row."""
    from pyspark.sql import functions as F

    target = files_frame(table, spark, state, candidates)
    return target.withColumn(_ROW_ID, F.monotonically_increasing_id()).withColumn(_IN_TARGET, F.lit(True))


def _check_cardinality(result: Any, matched_codes: list[str], table: str) -> None:
    from pyspark.sql import functions as F

    # One aggregation, not a limit(1): Spark takes a limit over an aggregate's partitions in rounds.
    most = (result.where(F.col(_ACTION).isin(matched_codes)).groupBy(_ROW_ID).count()
            .agg(F.max("count")).collect()[0][0])
    if most is not None and most > 1:
        raise MergeCardinalityError(
            f"table {table!r}: {most} source rows match one target row; a merge may match each "
            "target row with at most one source row. Deduplicate the source (e.g. keep the newest row per key); "
            "nothing was committed"
        )


def _key_pairs(condition: str, target_columns: Sequence[str], source_columns: set[str]) -> list[tuple[str, str]]:
    """The ``target.a = source.b`` conjuncts of a condition made only of conjunctions (else none)."""
    pairs = []
    for conjunct in re.split(r"\s+and\s+", condition, flags=re.IGNORECASE):
        match = _KEY.match(conjunct)
        if match is None:
            continue
        sides = {match.group(1).lower(): match.group(2), match.group(3).lower(): match.group(4)}
        if set(sides) == {"target", "source"} and sides["target"] in target_columns and \
                sides["source"] in source_columns:
            pairs.append((sides["target"], sides["source"]))
    if re.search(r"\bor\b", condition, flags=re.IGNORECASE):
        return []  # a disjunction may match rows outside every key's range
    return pairs


def _condition(condition: str | None) -> Any:
    from pyspark.sql import functions as F

    return F.coalesce(F.expr(condition), F.lit(False)) if condition else F.lit(True)


def _value(clause: _Clause, column: str) -> Any:
    """The new value of ``column`` under an update or insert clause."""
    from pyspark.sql import functions as F

    if clause.values is None:
        return F.col(f"source.{quoted_column(column)}")
    if column in clause.values:
        return F.expr(clause.values[column])
    if clause.kind == "insert":
        return F.lit(None)  # a column an insert does not name is null
    return F.col(f"target.{quoted_column(column)}")  # an update keeps the columns it does not set


def _values(values: Mapping[str, str] | None, name: str) -> dict[str, str] | None:
    if values is None:
        return None
    if not isinstance(values, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in values.items()):
        raise ConfigError(f"{name} maps column names to Spark SQL expressions, e.g. {{'total': 'source.total'}}")
    return dict(values)

"""MERGE: ``t.merge(source, condition).when_...().execute()``, copy on write (see :mod:`.row_changes`).

The target files to read are those that may hold a row the condition matches with some source
row (:func:`~sleeper_spark.spark.conditions.row_conditions.merge_rows`): for each equality
``target.k = source.k`` of the condition (or ``target.k =`` an expression of source columns), a
file is read only if one of the source's keys may
lie within its statistics (or, for more than :data:`_EXACT_KEYS` distinct keys, if its
statistics overlap the source's range of keys), combined through ``AND``/``OR`` with what the
condition says about target columns alone. A target row matched by two source rows is an error,
as in SQL (:class:`MergeCardinalityError`), and nothing is committed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from sleeper_spark.errors import ConfigError, MergeCardinalityError, SchemaMismatchError
from sleeper_spark.models import FileRef, Snapshot, TableSchema
from sleeper_spark.source_options import DEFAULT_TARGET_FILE_BYTES
from sleeper_spark.spark.common.conversions import quoted_column, spark_schema
from sleeper_spark.spark.conditions.row_conditions import merge_rows
from sleeper_spark.spark.rows.file_frames import FILE_COLUMN, files_frame, files_named
from sleeper_spark.spark.rows.row_changes import ACTION, checked_values, stage_and_commit, when_holds, with_retries
from sleeper_spark.state import TableState
from sleeper_spark.table.isolation import ReadSet
from sleeper_spark.table.reading import planned_files
from sleeper_spark.table.writes import check_write_args

if TYPE_CHECKING:
    from sleeper_spark.table import Table

_EXACT_KEYS = 10_000  # up to this many distinct source keys, files are matched against each key
_ROW_ID = "_sleeper_row"
_IN_TARGET = "_sleeper_in_target"
_IN_SOURCE = "_sleeper_in_source"


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
        self._matched.append(_Clause("update", condition, checked_values(set, "set")))
        return self

    def when_matched_delete(self, condition: str | None = None) -> MergeBuilder:
        self._matched.append(_Clause("delete", condition, None))
        return self

    def when_not_matched_insert(self, values: Mapping[str, str] | None = None,
                                condition: str | None = None) -> MergeBuilder:
        self._not_matched.append(_Clause("insert", condition, checked_values(values, "values")))
        return self

    def when_not_matched_by_source_update(self, set: Mapping[str, str], condition: str | None = None) -> MergeBuilder:
        """Updates target rows no source row matches; ``set`` names target columns only (there is no source row)."""
        values = checked_values(set, "set")
        if not values:
            raise ConfigError("when_not_matched_by_source_update needs set={'column': 'Spark SQL expression', ...}")
        self._not_matched_by_source.append(_Clause("update", condition, values))
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
        # the same rows: it is kept for the merge unless it is cached already. Spark's cache says
        # so (storageLevel), not the DataFrame object: a SQL MERGE's source, or a frame cached
        # through another handle, must not be cached twice nor uncached after the merge.
        from pyspark.storagelevel import StorageLevel

        kept = self._source.storageLevel == StorageLevel.NONE
        if kept:
            self._source.persist()
        try:
            return with_retries(self._table, "merge", app_id, app_version,
                                lambda state: self._run(state, checked, app_id, app_version))
        finally:
            if kept:
                self._source.unpersist()

    def _run(self, state: TableState, metadata: dict[str, str], app_id: str | None,
             app_version: int | None) -> Snapshot:
        from pyspark.sql import functions as F

        self._check_columns(state.schema.names)
        keys: dict[tuple[str, str, bool], pc.Expression | None] = {}

        def known_keys(target_column: str, source_value: str, null_safe: bool) -> pc.Expression | None:
            pair = (target_column, source_value, null_safe)
            if pair not in keys:  # one Spark job per equality
                keys[pair] = key_rows(self._source, state.schema, *pair)
            return keys[pair]

        # A target row no source row matches may be deleted: then every target row counts.
        rows = None if self._not_matched_by_source else merge_rows(self._source, state.schema, self._condition,
                                                                   known_keys)
        candidates = planned_files(state, rows) if state.files else []
        joined = self._joined(state, candidates, [pair for pair, found in keys.items() if found is not None])
        in_target = F.col(f"target.{_IN_TARGET}").isNotNull()
        in_source = F.col(f"source.{_IN_SOURCE}").isNotNull()
        branches = [(in_target & in_source, "m", self._matched),
                    (in_target & ~in_source, "b", self._not_matched_by_source),
                    (~in_target & in_source, "i", self._not_matched)]
        action = F.lit(None).cast("string")
        codes: dict[str, _Clause] = {}
        cases = []
        for where, prefix, clauses in branches:
            for index, clause in enumerate(clauses):
                codes[f"{prefix}{index}"] = clause
                cases.append((where & when_holds(clause.condition), f"{prefix}{index}"))
        cases += [(in_target & in_source, "km"), (in_target, "kt")]
        for where, code in reversed(cases):
            action = F.when(where, F.lit(code)).otherwise(action)
        result = (joined.withColumn(ACTION, action)
                  .select(F.col(ACTION), F.col(f"target.{FILE_COLUMN}").alias(FILE_COLUMN),
                          F.col(f"target.{_ROW_ID}").alias(_ROW_ID), *_new_values(state.schema, codes))
                  .where(F.col(ACTION).isNotNull()))
        return self._commit(state, result, codes, candidates, rows, metadata, app_id, app_version)

    def _joined(self, state: TableState, candidates: list[FileRef], pairs: list[tuple[str, str, bool]]) -> Any:
        """The candidate target rows joined with the source rows by the condition."""
        from pyspark.sql import functions as F

        source = self._source.withColumn(_IN_SOURCE, F.lit(True)).alias("source")
        if not candidates or not (self._matched or self._not_matched_by_source):
            return self._unmatched_source(source, state, candidates)
        target = _target_frame(self._table, source.sparkSession, state, candidates)
        if pairs:
            # Both sides hashed by the keys. With adaptive execution on (Spark's default), Spark
            # sizes the join, and the aggregations after it, to the data; a number of tasks given
            # here would keep those aggregations at the session's shuffle partitions (200: a MERGE
            # of 2 rows into 2 ran 618 tasks in 5-7 s, 21 without). Without it, about a task per
            # 128 MiB of target files, rather than the session's shuffle partitions.
            adaptive = source.sparkSession.conf.get("spark.sql.adaptive.enabled", "true").lower() == "true"
            tasks = [] if adaptive else \
                [max(2, math.ceil(sum(f.size_bytes for f in candidates) / DEFAULT_TARGET_FILE_BYTES))]
            target = target.repartition(*tasks, *[F.col(quoted_column(t)) for t, _, _ in pairs])
            source = source.repartition(*tasks, *[F.expr(s) for _, s, _ in pairs]).alias("source")
        how = "full_outer" if self._not_matched else "left_outer"
        return target.alias("target").join(source, F.expr(self._condition), how)

    def _commit(self, state: TableState, result: Any, codes: dict[str, _Clause], candidates: list[FileRef],
                rows: pc.Expression | None, metadata: dict[str, str], app_id: str | None,
                app_version: int | None) -> Snapshot:
        """Counts the actions, then stages the rewritten files' rows and the inserts and commits them."""
        from pyspark.sql import functions as F

        counts: dict[str, int] = {}
        names = []
        changing = {c for c, clause in codes.items() if clause.kind in ("update", "delete") and c[0] in "mb"}
        matched = [c for c in codes if c.startswith("m")] + ["km"] if self._matched else []
        for row in _action_counts(result, matched, self._table.name):
            counts[row[ACTION]] = counts.get(row[ACTION], 0) + row["count"]
            if row[ACTION] in changing:
                names.append(row[FILE_COLUMN])
        names = sorted(set(names))
        changed = files_named(names, candidates)
        inserting = [c for c, clause in codes.items() if clause.kind == "insert"]
        kept = ["km", "kt", *[c for c, clause in codes.items() if clause.kind == "update"]]
        written = result.where((F.col(FILE_COLUMN).isin(names) & F.col(ACTION).isin(kept))
                               | F.col(ACTION).isin(inserting))
        metrics = {
            "rows_inserted": sum(counts.get(c, 0) for c in inserting),
            "rows_updated": sum(counts.get(c, 0) for c, k in codes.items() if k.kind == "update"),
            "rows_deleted": sum(counts.get(c, 0) for c, k in codes.items() if k.kind == "delete"),
            "files_read": len(candidates), "files_rewritten": len(changed),
        }
        read = ReadSet(state.version, frozenset(f.path for f in candidates), rows)
        return stage_and_commit(self._table, state, written.select(*[quoted_column(c) for c in state.schema.names]),
                                changed, read, "merge", metadata, app_id, app_version, metrics)

    def _check_columns(self, columns: Sequence[str]) -> None:
        source_columns = set(self._source.columns)
        for clause in (*self._matched, *self._not_matched, *self._not_matched_by_source):
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


def key_rows(source: Any, schema: TableSchema, target_column: str, source_value: str,
             null_safe: bool) -> pc.Expression | None:
    """The target rows ``target.<target_column> = <source_value>`` (``<=>`` if ``null_safe``) may
    match, ``source_value`` being Spark SQL over the source's columns (a quoted column, or an
    expression whose columns are qualified ``source.``): the source's distinct keys (one job), or
    past :data:`_EXACT_KEYS` of them their range (one more job); None when a key does not convert
    to the target column's type, or Spark cannot compute the keys (the merge then reads every
    file and reports the error itself, if it is one)."""
    from pyspark.errors import PySparkException
    from pyspark.sql import functions as F

    column = F.expr(source_value)
    field_type = schema.to_arrow().field(target_column).type
    source = source.alias("source")
    keys = source.select(column) if null_safe else source.select(column).where(column.isNotNull())
    try:
        found = [row[0] for row in keys.distinct().limit(_EXACT_KEYS + 1).collect()]
    except PySparkException:
        return None
    try:
        if len(found) <= _EXACT_KEYS:
            return pc.field(target_column).isin(pa.array(found, field_type))  # a null key matches a null
        low, high = source.agg(F.min(column), F.max(column)).collect()[0]
        between = (pc.field(target_column) >= pc.scalar(pa.scalar(low, field_type))) & \
                  (pc.field(target_column) <= pc.scalar(pa.scalar(high, field_type)))
        return between | pc.field(target_column).is_null() if null_safe else between
    except (pa.ArrowException, TypeError, ValueError, OverflowError, PySparkException):
        return None


def _new_values(schema: TableSchema, codes: dict[str, _Clause]) -> list[Any]:
    """Each column's value after the clause a row takes (its action code says which)."""
    from pyspark.sql import functions as F

    types = {f.name: f.dataType for f in spark_schema(schema, guarded=False).fields}
    values = []
    for column in schema.names:
        value = F.col(f"target.{quoted_column(column)}")
        for code, clause in codes.items():
            if clause.kind in ("update", "insert"):
                value = F.when(F.col(ACTION) == code, _value(clause, column).cast(types[column])).otherwise(value)
        values.append(value.alias(column))
    return values


def _target_frame(table: Table, spark: Any, state: TableState, candidates: Sequence[FileRef]) -> Any:
    """The candidate files' rows, each with a row id (for the cardinality check) and a mark that it is a target row."""
    from pyspark.sql import functions as F

    target = files_frame(table, spark, state, candidates)
    return target.withColumn(_ROW_ID, F.monotonically_increasing_id()).withColumn(_IN_TARGET, F.lit(True))


def _action_counts(result: Any, matched_codes: list[str], table: str) -> list[Any]:
    """How many rows take each action in each target file (rows of ``ACTION``, ``FILE_COLUMN`` and
    ``count``), after checking that no target row is matched by two source rows.

    One Spark job for both, so the join runs once for them: rows are counted per action, file and
    matched target row (every other row shares one group of its action and file), then per action
    and file, keeping the largest count of one matched target row."""
    from pyspark.sql import functions as F

    no_row = F.lit(None).cast("long")
    matched_row = F.when(F.col(ACTION).isin(matched_codes), F.col(_ROW_ID)) if matched_codes else no_row
    per_row = result.groupBy(ACTION, FILE_COLUMN, matched_row.alias(_ROW_ID)).count()
    rows: list[Any] = (per_row.groupBy(ACTION, FILE_COLUMN)
                       .agg(F.sum("count").alias("count"),
                            F.max(F.when(F.col(_ROW_ID).isNotNull(), F.col("count"))).alias("most")).collect())
    most = max((row["most"] for row in rows if row["most"] is not None), default=None)
    if most is not None and most > 1:
        raise MergeCardinalityError(
            f"table {table!r}: {most} source rows match one target row; a merge may match each "
            "target row with at most one source row. Deduplicate the source (e.g. keep the newest row per key); "
            "nothing was committed"
        )
    return rows


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

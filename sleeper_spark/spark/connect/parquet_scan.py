"""How Spark's own ``parquet`` source is pointed at exactly one version's files, without a jar.

Handing Spark every file path makes it check each path itself: with more than 32 paths
(``spark.sql.sources.parallelPartitionDiscovery.threshold``) it runs a Spark job to do so, about a
second on a small cluster, on every query. Spark lists folders as cheaply as plain Parquet, so a
read names the folders that hold the version's files instead, and keeps exactly those files by one
of two filters Spark applies while it lists, before any task runs:

- **by name** (the ``pathGlobFilter`` option): when every file has a name this package's writers
  made, which no other file in those folders can share. The Python writer's names are random
  UUIDs. Spark's writer reuses a name across the partition folders of one write, so names alone
  are used only where each such write's live files fill every one of its folders: then no removed
  file of that write can sit in a listed folder under a live file's name;
- **by path** (a filter on ``_metadata.file_path``, which Spark evaluates per file while it
  lists): exact for every file; it costs a little per row as well, so it is the second choice.

Paths neither filter can name exactly (characters the server's URI form would escape in ways
this module does not reproduce, or files outside ``data/``) are handed to Spark one by one, as
before.

Where every file's folder name reads back, by Spark's own rules, as the file's partition values,
Spark is also told where the partitions start (``basePath``): a filter on them then skips whole
folders, as on a plain Parquet table. The Python writer's folders (``data/<col>=<value>/…``) name
the columns themselves; Spark's writer names partition folders by value through hidden columns
(``data/spark-<id>/__sleeper_partition=<value>/__sleeper_partition_1=<value>/…``, see
:func:`~sleeper_spark.layout.spark_partition_column`), which the read takes the columns from.
Files of both writers in one version, folders named by a hash (values no folder name can carry:
long, empty, with capitals, outside ASCII; several partition columns written through the jar
before 2026-12-02), get no such pruning; their footers still let Spark skip row groups.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from sleeper_spark.datafiles.paths import NULL_SEGMENT, partition_dir
from sleeper_spark.layout import DATA_DIR, SPARK_PARTITION_COLUMN, spark_partition_column
from sleeper_spark.models import TableSchema
from sleeper_spark.storage import join_key

# Past this many names the glob's alternation costs more per listed file than the path filter.
MAX_GLOB_NAMES = 2_000
_PYTHON_NAME = re.compile(r"[0-9a-f]{32}\.parquet")
_SPARK_NAME = re.compile(r"part-[0-9]{5}-[0-9a-f-]{36}(\.c[0-9]{3})?(\.[a-z0-9]+)?\.parquet")
_SPARK_FOLDER = re.compile(re.escape(DATA_DIR) + r"/spark-[^/]+")
_HEX = frozenset("0123456789ABCDEFabcdef")
# Characters java.net.URI leaves as they are in a path (Hadoop's Path.toUri, which Spark's
# ``_metadata.file_path`` is); "%" becomes "%25". Any other character: hand over the paths instead.
_URI_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.!~*'();:&=+$,/@")
_SIMPLE_COLUMN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Partition types whose value text Spark casts back to the same value.
_FOLDER_TYPES = frozenset({"string", "int8", "int16", "int32", "int64", "bool", "date"})


# parquet-mr's row-group and page filters lose rows in two cases, which the jar's reads avoid
# (NativeTables.readOptions, SleeperParquetFormat.exactFilters) and a read through Spark's own
# ``parquet`` source can only avoid by turning them off, through read options that reach parquet-mr
# in the read's Hadoop conf:
# - floats: footers pyarrow writes keep NaN out of a column's min/max, so a row group whose NaN
#   rows match (x > 1: NaN is above every number in Spark) is dropped; and its filters tell -0.0
#   from 0.0;
# - dates and timestamps: Spark hands parquet-mr a filter's literal in the hybrid Julian calendar,
#   and parquet-mr turns it back into days or microseconds, which moves values before 1900 (the
#   calendars' gap, old time zones), so row groups holding matching rows are dropped.
# Spark still evaluates every filter on every row it reads; only row-group skipping goes. A
# top-level column of these types needs no such switch: reads give Spark ``coalesce(x, x)`` for
# it, which Spark never hands parquet-mr as a filter, so the other columns' filters stay on; only
# such types inside nested columns turn the filters off.
PARQUET_FILTERS_OFF = {"parquet.filter.stats.enabled": "false", "parquet.filter.columnindex.enabled": "false",
                       "parquet.filter.dictionary.enabled": "false", "parquet.filter.bloom.enabled": "false"}
_UNSAFE_TO_FILTER = frozenset({"float32", "float64", "date", "timestamp"})


def reader_options(schema: TableSchema, guarded: Collection[str] = ()) -> dict[str, str]:
    """Options every read of a table with this schema by Spark's ``parquet`` source needs;
    ``guarded``: the columns of which no filter reaches parquet-mr (partition columns Spark takes
    from folders, columns read through ``coalesce(x, x)``: see
    :func:`~sleeper_spark.spark.connect.connect_read.scan_frame`)."""
    unsafe = any(t.name in _UNSAFE_TO_FILTER for f in schema.fields if f.name not in guarded for t in f.type.nested())
    return dict(PARQUET_FILTERS_OFF) if unsafe else {}


@dataclass(frozen=True)
class ParquetScan:
    """What to hand ``spark.read.parquet``: ``roots`` (absolute), its ``options``, and, when names
    cannot tell the version's files, ``file_paths``: the ``_metadata.file_path`` values to keep."""

    roots: list[str]
    options: dict[str, str] = field(default_factory=dict)
    file_paths: list[str] | None = None
    # The column Spark finds in the folders' names for each partition column, where it finds them
    folder_columns: dict[str, str] = field(default_factory=dict)

    @property
    def partitions_from_folders(self) -> bool:
        return bool(self.folder_columns)


def parquet_scan(root: str, paths: Sequence[str], partitions: Mapping[str, Sequence[str | None]],
                 partition_types: Mapping[str, str]) -> ParquetScan:
    """The scan of the files ``paths`` (relative to ``root``, the table's location as the server
    names it), whose partition values are ``partitions`` (a list per partition column, in the
    order of ``paths``) of the types ``partition_types`` (type names)."""
    if not paths or not all(path.startswith(DATA_DIR + "/") for path in paths):
        return ParquetScan([join_key(root, path) for path in paths])
    roots = _outermost({path.rsplit("/", 1)[0] for path in paths})
    options: dict[str, str] = {}
    from_folders = _folder_columns(paths, partitions, partition_types)
    if from_folders:
        options["basePath"] = join_key(root, DATA_DIR)
        if from_folders[next(iter(from_folders))] == SPARK_PARTITION_COLUMN:
            # Each write's folder holds its partition folders, so Spark finds a table under each
            # (data/spark-<id>): one partition column of one type in all of them, which is all
            # Spark needs to prune them.
            options["ignoreInvalidPartitionPaths"] = "true"
    else:
        options["recursiveFileLookup"] = "true"
    absolute_roots = [join_key(root, folder) for folder in roots]
    if _names_tell_files(paths):
        names = sorted({path.rsplit("/", 1)[1] for path in paths})
        return ParquetScan(absolute_roots, {**options, "pathGlobFilter": "{" + ",".join(names) + "}"},
                           folder_columns=from_folders)
    uris = [_file_uri(root, path) for path in paths]
    if any(uri is None for uri in uris):  # Spark still finds partitions in the folders of files it is given
        return ParquetScan([join_key(root, path) for path in paths], options if from_folders else {},
                           folder_columns=from_folders)
    return ParquetScan(absolute_roots, options, [uri for uri in uris if uri is not None], from_folders)


def _outermost(folders: set[str]) -> list[str]:
    """The folders that lie in no other of them (Spark lists a folder with everything below it)."""
    kept: list[str] = []
    for folder in sorted(folders):
        if not any(folder.startswith(outer + "/") for outer in kept):
            kept.append(folder)
    return kept


def _names_tell_files(paths: Sequence[str]) -> bool:
    if len(paths) > MAX_GLOB_NAMES:
        return False
    spark_writes: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for path in paths:
        folder, name = path.rsplit("/", 1)
        if _PYTHON_NAME.fullmatch(name) and not folder.startswith(DATA_DIR + "/spark-"):
            continue
        write = _SPARK_FOLDER.match(folder)
        if write is None or not _SPARK_NAME.fullmatch(name):
            return False
        spark_writes[write.group(0)].add((folder, name))
    for files in spark_writes.values():
        folders = {folder for folder, _ in files}
        names = {name for _, name in files}
        if len(files) != len(folders) * len(names):
            return False  # a name of this write is live in one folder only: a removed twin may sit in another
    return True


def _folder_columns(paths: Sequence[str], partitions: Mapping[str, Sequence[str | None]],
                    partition_types: Mapping[str, str]) -> dict[str, str]:
    """The column Spark reads each partition column's values from, by its rules for folder names
    (``%XX`` decoded one byte a character, ``__HIVE_DEFAULT_PARTITION__`` null, the text cast to the
    column's type), where it gets every file's own partition values from them: the columns
    themselves in the Python writer's folders, the hidden columns in Spark's writer's
    (:func:`~sleeper_spark.layout.spark_partition_column`); else none."""
    columns = tuple(partitions)
    if not columns or any(partition_types[c] not in _FOLDER_TYPES for c in columns):
        return {}
    python, spark = all(_SIMPLE_COLUMN.fullmatch(c) for c in columns), True
    for index, path in enumerate(paths):
        values = {column: partitions[column][index] for column in columns}
        if any(value is not None and (value == "" or not value.isascii()) for value in values.values()):
            return {}
        folder = path.rsplit("/", 1)[0]
        python = python and folder == partition_dir(values, columns) and "__hash_" not in folder
        spark = spark and _spark_folder_values(folder, len(columns)) == tuple(values.values())
        if not (python or spark):
            return {}
    if python:
        return {c: c for c in columns}
    return {column: spark_partition_column(index) for index, column in enumerate(columns)}


def _spark_folder_values(folder: str, count: int) -> tuple[str | None, ...] | None:
    """The values Spark reads from the ``count`` nested folders of Spark's writer (a write's folder
    and then one per partition column), or None for any other folder, or names Spark's writer
    would not have made."""
    segments = folder.split("/")
    if len(segments) != 2 + count or not _SPARK_FOLDER.fullmatch("/".join(segments[:2])):
        return None
    values: list[str | None] = []
    for index, segment in enumerate(segments[2:]):
        name, equals, text = segment.partition("=")
        if not equals or name != spark_partition_column(index):
            return None
        value = _unescaped(text)
        if value is None:
            return None
        values.append(value[0])
    return tuple(values)


def _unescaped(text: str) -> tuple[str | None] | None:
    """A folder name's value as Spark reads it (in a tuple: it may be null), or None if Spark's
    writer would not have written it."""
    if text == NULL_SEGMENT:
        return (None,)
    pieces = text.split("%")
    decoded = [pieces[0]]
    for piece in pieces[1:]:  # Spark's writer escapes "%" itself, so each one starts a %XX
        if len(piece) < 2 or not all(c in _HEX for c in piece[:2]):
            return None
        decoded.append(chr(int(piece[:2], 16)) + piece[2:])
    return ("".join(decoded),)


def _file_uri(root: str, path: str) -> str | None:
    """``root/path`` as Spark's ``_metadata.file_path`` spells it, or None if unsure."""
    scheme, sep, rest = join_key(root, path).partition(":")
    if not sep or not rest.isascii():
        return None
    if rest.startswith("///"):  # an empty authority, which Hadoop's URI leaves out: file:///x is file:/x
        rest = rest[2:]
    if any(char not in _URI_PLAIN and char != "%" for char in rest):
        return None
    return f"{scheme}:{rest.replace('%', '%25')}"

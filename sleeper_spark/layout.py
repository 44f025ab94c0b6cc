"""Where everything of a warehouse lives: the one place that knows folder and file names.

Keys are relative to the warehouse root (``table_root`` is a table's folder in it)::

    _catalog/<name>.json                         the table registry of an object-store catalog
    _catalog/_namespaces/<name>.json             its namespace records (no table's record: names hold no /)
    <table>/data/<col>=<value>/…/<uuid>.parquet  data files (the Python writer)
    <table>/data/spark-<write id>/…/part-….parquet  data files (Spark's own writer, one folder a write)
    <table>/data/spark-<write id>/__sleeper_partition=<value>/…/part-….parquet  ... a folder per partition column
    <table>/_log/<20-digit number>.json          the transaction log of an object-store catalog
    <table>/_log/bodies/<sha256>.json            transaction bodies too big for a log entry
    <table>/_log/pending/<32 hex digits>.json    appends waiting for a group commit (object-store catalog)
    <table>/_state/<20-digit number>.parquet     state snapshots
    <table>/_state/latest                        the state-snapshot pointer of an object-store catalog
    <table>/_lock/maintenance                    the maintenance lock (vacuum, log truncation)
    <table>/metadata/v<version>.metadata.json    Iceberg metadata of a published version (docs/interop.md)
    <table>/metadata/snap-<version>.avro         its manifest list
    <table>/metadata/manifest-<k>-at-<v>.avro    the manifest of the files version k added, written by version v
    <table>/metadata/version-hint.text           the newest published version, for readers given a path
    _transactions/<id>.json                      the decision of a multi-table transaction (object-store catalog)

``put-and-verify`` writes intent files next to their target, ``<key>.INTENT.<id>``; the local
store writes ``<key>.tmp-<uuid>`` while an object is written. Stored names never change once
released: a change here is a change of format.
"""

from __future__ import annotations

from enum import Enum

CATALOG_DIR = "_catalog"
NAMESPACES_DIR = f"{CATALOG_DIR}/_namespaces"
DATA_DIR = "data"
LOG_DIR = "_log"
BODIES_DIR = f"{LOG_DIR}/bodies"
PENDING_DIR = f"{LOG_DIR}/pending"
STATE_DIR = "_state"
LOCK_DIR = "_lock"
ICEBERG_DIR = "metadata"
ICEBERG_HINT = f"{ICEBERG_DIR}/version-hint.text"
DELTA_LOG_DIR = "_delta_log"
DELTA_LAST_CHECKPOINT = f"{DELTA_LOG_DIR}/_last_checkpoint"
STATE_POINTER = "latest"
DECISIONS_DIR = "_transactions"  # in the warehouse: one decision record per multi-table transaction
MAINTENANCE_LOCK = "maintenance"
INTENT_MARK = ".INTENT."
STATE_SNAPSHOT_SUFFIX = ".parquet"
_NUMBER_DIGITS = 20
_PENDING_KEY_DIGITS = 32
_HEX_DIGITS = frozenset("0123456789abcdef")


def _join(*parts: str) -> str:
    return "/".join(part.strip("/") for part in parts if part.strip("/"))


def registry_key(table_name: str) -> str:
    return _join(CATALOG_DIR, f"{table_name}.json")


def namespace_key(namespace: str) -> str:
    """The record of a created namespace; a folder below the table records, so no table name reaches it."""
    return _join(NAMESPACES_DIR, f"{namespace}.json")


def namespace_of_key(name: str) -> str | None:
    """The namespace a record names, from its name within the namespace folder, or ``None`` if it is none.

    Intents and temporary files that a store may list there are not records.
    """
    stem = name.removesuffix(".json")
    return stem if stem != name and "/" not in stem else None


def decision_key(transaction_id: str) -> str:
    """The decision record of one multi-table transaction, on an object-store catalog."""
    return _join(DECISIONS_DIR, f"{transaction_id}.json")


# The folders inside a write's folder: Spark's writer names them after hidden columns of the
# rows, which its files leave out (every table column stays in them), one level per partition
# column (writes through the jar before 2026-12-02: one level named by a hash of several columns'
# values). A value is the partition value's text where Spark reads it back from the folder's name
# as that value; else SPARK_PARTITION_HASH and a hash of the value.
SPARK_PARTITION_COLUMN = "__sleeper_partition"
SPARK_PARTITION_HASH = "__hash_"


def spark_partition_column(index: int) -> str:
    """The hidden column of the ``index``-th partition column (0: :data:`SPARK_PARTITION_COLUMN`)."""
    return SPARK_PARTITION_COLUMN if index == 0 else f"{SPARK_PARTITION_COLUMN}_{index}"


def spark_write_dir(write_id: str) -> str:
    """The folder, relative to the table root, that one write through Spark's own writer fills."""
    return _join(DATA_DIR, f"spark-{write_id}")


def iceberg_metadata_key(version: int) -> str:
    """The Iceberg metadata JSON of a published version, relative to the table root."""
    return _join(ICEBERG_DIR, f"v{version}.metadata.json")


def iceberg_manifest_list_key(version: int) -> str:
    return _join(ICEBERG_DIR, f"snap-{version}.avro")


def iceberg_manifest_key(added_by: int, written_by: int) -> str:
    return _join(ICEBERG_DIR, f"manifest-{added_by}-at-{written_by}.avro")


def delta_commit_key(version: int) -> str:
    """A Delta version's commit file, relative to the table root."""
    return _join(DELTA_LOG_DIR, f"{version:020d}.json")


def delta_checkpoint_key(version: int) -> str:
    """A Delta version's checkpoint (one Parquet file), relative to the table root."""
    return _join(DELTA_LOG_DIR, f"{version:020d}.checkpoint.parquet")


def log_prefix(table_root: str) -> str:
    return _join(table_root, LOG_DIR) + "/"


def log_entry_key(table_root: str, number: int) -> str:
    return _join(table_root, LOG_DIR, f"{number:0{_NUMBER_DIGITS}d}.json")


def log_entry_number(name: str) -> int | None:
    """The number of a log entry from its name within the log folder, or ``None`` if it is none."""
    stem = name.removesuffix(".json")
    return int(stem) if stem != name and "/" not in stem and stem.isdigit() else None


def body_key(table_root: str, digest: str) -> str:
    return _join(table_root, BODIES_DIR, f"{digest}.json")


def pending_prefix(table_root: str) -> str:
    return _join(table_root, PENDING_DIR) + "/"


def is_pending_key(key: str) -> bool:
    """Whether ``key`` can name a pending append: 32 lowercase hex digits (a uuid4 in hex)."""
    return len(key) == _PENDING_KEY_DIGITS and all(c in _HEX_DIGITS for c in key)


def pending_key(table_root: str, key: str) -> str:
    """The object of the pending append ``key`` (see :mod:`sleeper_spark.log.pending`)."""
    if not is_pending_key(key):
        raise ValueError(f"{key!r} is no pending append key (32 lowercase hex digits)")
    return _join(table_root, PENDING_DIR, f"{key}.json")


def pending_record_key(name: str) -> str | None:
    """The key of a pending append from its name within the pending folder, or ``None``.

    Intents, temporary files and anything else that a store may list there are not records.
    """
    stem = name.removesuffix(".json")
    return stem if stem != name and is_pending_key(stem) else None


def state_prefix(table_root: str) -> str:
    return _join(table_root, STATE_DIR) + "/"


def state_snapshot_key(table_root: str, number: int) -> str:
    return _join(table_root, STATE_DIR, f"{number:0{_NUMBER_DIGITS}d}{STATE_SNAPSHOT_SUFFIX}")


def state_snapshot_number(name: str) -> int | None:
    """The number of a state snapshot from its name within the state folder, or ``None``."""
    stem = name.removesuffix(STATE_SNAPSHOT_SUFFIX)
    return int(stem) if stem != name and stem.isdigit() else None


def state_pointer_key(table_root: str) -> str:
    return _join(table_root, STATE_DIR, STATE_POINTER)


def maintenance_lock_key(table_root: str) -> str:
    return _join(table_root, LOCK_DIR, MAINTENANCE_LOCK)


def table_metadata_prefixes(table_root: str) -> list[str]:
    """The folders of a table that hold its log and state: what dropping it without purging deletes.

    The log's folder holds its spilled bodies and pending appends too, so they go with it.
    """
    return [log_prefix(table_root), state_prefix(table_root)]


class Kind(Enum):
    """What an object of a table's folder is, by its key relative to the table root.

    Vacuum deletes old objects of the kinds other than ``OTHER``; log entries, the state pointer,
    locks and pending appends are ``OTHER``, since their owners remove them (a pending append is
    deleted by whoever commits it, however old it is).
    """

    DATA = "data file"
    BODY = "spilled body"
    STATE_SNAPSHOT = "state snapshot"
    OTHER = "other"


def kind_of(relative_key: str) -> Kind:
    if relative_key.startswith(DATA_DIR + "/") and relative_key.endswith(".parquet"):
        return Kind.DATA
    if relative_key.startswith(BODIES_DIR + "/") and relative_key.endswith(".json"):
        return Kind.BODY
    folder, _, name = relative_key.rpartition("/")
    if folder == STATE_DIR and state_snapshot_number(name) is not None:
        return Kind.STATE_SNAPSHOT
    return Kind.OTHER


def intent_target(relative_key: str) -> str | None:
    """For a put-and-verify intent file, the key it guards; ``None`` for any other object."""
    return relative_key.split(INTENT_MARK, 1)[0] if INTENT_MARK in relative_key else None

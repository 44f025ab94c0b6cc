"""TableState and the pure fold over transactions."""

from sleeper_spark.state.collections import FileSet
from sleeper_spark.state.file_columns import FileLayout
from sleeper_spark.state.fold import apply, fold, initial_state, validate
from sleeper_spark.state.history import SnapshotLog
from sleeper_spark.state.table_state import TableState

__all__ = ["FileLayout", "FileSet", "SnapshotLog", "TableState", "apply", "fold", "initial_state", "validate"]

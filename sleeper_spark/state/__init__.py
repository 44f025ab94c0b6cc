"""TableState and the pure fold over transactions."""

from sleeper_spark.state.collections import FileMap, SnapshotLog
from sleeper_spark.state.fold import apply, fold, initial_state, validate
from sleeper_spark.state.table_state import TableState

__all__ = ["FileMap", "SnapshotLog", "TableState", "apply", "fold", "initial_state", "validate"]

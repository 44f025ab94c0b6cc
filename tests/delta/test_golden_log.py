"""A golden file pins what the Delta publisher writes for each kind of version: readers outside
this project parse it, and publishers of other releases continue each other's logs, so a changed
byte must be a deliberate change (``SLEEPER_UPDATE_GOLDEN=1`` rewrites it; review the diff)."""

from __future__ import annotations

import json

from sleeper_spark.delta import actions
from sleeper_spark.delta.checkpoint import checkpoint_bytes, checkpoint_of, read_checkpoint
from sleeper_spark.state import fold
from tests.models.golden import check_golden
from tests.models.test_golden import AT, EXAMPLES

# One version of each kind: the creation, an append, a compaction, a schema change, a property
# change and a group commit (the same transactions whose stored form tests/models pins).
ORDER = ("create_table", "add_files", "replace_files", "set_schema", "set_properties", "append_group")


def test_each_kind_of_version_keeps_its_delta_form() -> None:
    states = []
    for number, name in enumerate(ORDER, start=1):
        states.append(fold([(number, EXAMPLES[name])], states[-1] if states else None))
    files = {"0": actions.version_lines(actions.created(states[0], AT)).decode()}
    for previous, state in zip([states[0], *states], states, strict=False):
        files[str(state.version)] = actions.version_lines(actions.version(previous, state, AT)).decode()
    newest = states[-1]
    # (the checkpoint as its Parquet file reads back)
    checkpoint = read_checkpoint(checkpoint_bytes(checkpoint_of(newest, AT)))
    files["checkpoint"] = actions.version_lines(checkpoint.actions()).decode()
    check_golden("delta_log.json", json.dumps(files, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    # And a checkpoint continued from one of an earlier version (of the same schema) is the same file
    earlier = next(state for state in reversed(states) if state.schema == newest.schema
                   and state.version < newest.version and len(state.files))
    continued = checkpoint_of(newest, AT, checkpoint_of(earlier, AT))
    assert checkpoint_bytes(continued) == checkpoint_bytes(checkpoint_of(newest, AT))

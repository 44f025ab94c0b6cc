"""An append whose new files travel as Arrow columns: what a native Spark write commits.

Ten thousand files are ten thousand FileRefs of twenty-odd ColumnStats each when built as
models, which costs the driver more than the rest of the commit. :class:`ColumnarAddFiles`
carries the files instead as the rows the state's files table keeps (see
``sleeper_spark/state/file_columns.py``) and as their JSON text, made column by column. It is an
in-memory form only: it encodes as an ``add_files`` entry whose ``files`` hold that text, so the
stored shape is :class:`AddFiles`'s, and the log reads it back as an AddFiles with FileRefs.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import pyarrow as pa
from pydantic import PrivateAttr

from sleeper_spark.models.transactions import AddFiles, AppendGroup, ReplaceFiles, TransactionBase

_EMPTY_FILES = '"files":[]'


@dataclass(frozen=True)
class NewFiles:
    """Files no version holds yet, as rows of the files table and as FileRef JSON.

    ``columns``: one row per file in the files table's layout, ``added_version`` null (the
    commit fills it in). ``json``: the same files as the items of a JSON array, in the same
    order, each as a FileRef serializes (a bound pydantic would write as ``null``, a float
    that is not finite, is ``null`` here too).
    """

    columns: pa.RecordBatch
    json: str

    @cached_property
    def paths(self) -> list[str]:
        return [str(path) for path in self.columns.column("path").to_pylist()]

    def __len__(self) -> int:
        return int(self.columns.num_rows)


class ColumnarAddFiles(AddFiles):
    """An :class:`AddFiles` whose files are :attr:`new_files`; its own ``files`` field is empty.

    Only the fold (a handler of its own) and the codec (through :meth:`model_dump_json`) meet it;
    it never sets a schema and never rides in a group commit, whose members are plain AddFiles.
    """

    _new_files: NewFiles = PrivateAttr()

    @classmethod
    def of(cls, new_files: NewFiles, **fields: Any) -> ColumnarAddFiles:
        txn = cls(files=(), **fields)
        txn._new_files = new_files  # a private attribute: model_copy carries it to every copy
        return txn

    @property
    def new_files(self) -> NewFiles:
        return self._new_files

    def model_dump_json(self, **kwargs: Any) -> str:
        """The ``add_files`` JSON with :attr:`new_files` as its ``files``."""
        text = super().model_dump_json(**kwargs)
        # The first '"files":[]' is the field itself: inside a JSON string a quote is escaped,
        # and the fields before it (metadata, metrics) map to strings and numbers, never to lists.
        before, found, after = text.partition(_EMPTY_FILES)
        assert found, "an AddFiles serializes its files"
        return f'{before}"files":[{self._new_files.json}]{after}'


def added_paths(txn: TransactionBase) -> list[str]:
    """The paths of the files a transaction adds: an append's (a group's members' too), a
    columnar append's, a replacement's added ones; none for the rest."""
    if isinstance(txn, ColumnarAddFiles):
        return list(txn.new_files.paths)
    if isinstance(txn, (AddFiles, AppendGroup)):
        return [f.path for f in txn.files]
    if isinstance(txn, ReplaceFiles):
        return [f.path for f in txn.added]
    return []

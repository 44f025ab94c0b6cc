"""MERGE, UPDATE and DELETE by copy on write: only the files whose rows change are rewritten.

Imports the rooms below it (``common`` to ``native``); never ``connect`` or ``changes`` beside it.
"""

"""Spark Connect without the jar: Spark's ``parquet`` source over one version's files, and its writes.

Imports the rooms below it (``common`` to ``native``); never ``changes`` or ``rows`` beside it.
"""

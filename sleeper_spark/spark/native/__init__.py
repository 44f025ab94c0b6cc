"""Spark's own Parquet reader and writer through the jar: hand-overs, staged writes and their facts.

Imports ``common``, ``conditions`` and ``source``; never ``streaming`` (the room beside it).
"""

"""The SQL catalog's Python side: the answers to the jar's catalog, procedures, metadata tables and
row statements.

Imports every room below it, ``helper`` included; never ``bridge``.
"""

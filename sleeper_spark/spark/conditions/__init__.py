"""Spark conditions and pushed filters, turned into which files may hold matching rows.

Imports only ``common``.
"""

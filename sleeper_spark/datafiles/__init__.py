"""Parquet data files: layout, writing with statistics, and pruning by statistics."""

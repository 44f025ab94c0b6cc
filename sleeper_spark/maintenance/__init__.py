"""Compaction, delete, vacuum, state snapshots and log truncation."""

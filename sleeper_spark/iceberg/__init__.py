"""Iceberg metadata published from the log, so that other engines read every version."""

"""Benchmarks: ``python -m bench`` runs them all and prints ratio tables (see README)."""

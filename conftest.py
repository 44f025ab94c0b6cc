"""Shared pytest options only; fixtures live in tests/fixtures/."""

pytest_plugins = ["tests.fixtures.servers", "tests.fixtures.catalogs"]

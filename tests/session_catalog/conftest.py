"""Each module of the session catalog's tests over a metastore shares one Hive metastore service."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from tests.fixtures.hive_servers import hive_metastore

__all__ = ["hive_metastore"]

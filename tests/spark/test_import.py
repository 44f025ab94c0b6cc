"""The package imports and works on Arrow data without pyspark installed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

_WITHOUT_PYSPARK = """
import sys
from importlib.abc import MetaPathFinder

class NoPyspark(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "pyspark" or name.startswith("pyspark."):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None

sys.meta_path.insert(0, NoPyspark())
import pyarrow as pa
import sleeper_spark as ss

catalog = ss.Catalog.local(sys.argv[1])
table = catalog.create_table("t", pa.schema([("a", pa.int64())]))
table.write(pa.table({"a": [1, 2]}))
assert table.scan().num_rows == 2
assert callable(ss.register) and "register" in ss.__all__
assert not any(name.split(".")[0] == "pyspark" for name in sys.modules)
print("ok")
"""


def test_sleeper_spark_works_without_pyspark(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-c", _WITHOUT_PYSPARK, str(tmp_path / "wh")], capture_output=True,
                         text=True, timeout=120, cwd=Path(__file__).parents[2])
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "ok"

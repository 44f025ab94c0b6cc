"""Makes a Spark home for the test run: pyspark's own, with compiled Python in its two zips.

    .venv/bin/python scripts/spark_home.py HOME

Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` and py4j's zip first on the path of every
Python process it starts: each task's worker, each Python data source's planner, each streaming
source's runner, the Python side the jar starts for a Connect server. pyspark's wheel ships those
zips with source only, and Python caches no bytecode for a module imported from a zip, so each
such process compiles every pyspark module it imports: ``import pyspark.worker`` took 1.2 s of
CPU from the stock zip and 0.4 s from one holding bytecode, and the suite starts hundreds of these
processes (tests/streaming/test_source.py ran in 57 s instead of 71).

HOME gets a symlink to every entry of the installed pyspark folder (``bin``, ``jars``, ``sbin``,
...) and its own copies of the two zips, each module with its bytecode beside it (unchecked
hash-based ``.pyc`` files, valid for as long as the zip they sit in; a Python of another version
ignores them and compiles as before). Same sources, same jars, same scripts: only the compiling
moves here, once. scripts/test.sh sets ``SPARK_HOME`` to it; tests/test_packaging.py starts Spark
from the stock home of a new environment, which works as before.
"""

from __future__ import annotations

import importlib.util
import marshal
import shutil
import sys
import tempfile
import warnings
import zipfile
from pathlib import Path

import pyspark

# PEP 552's flags: bytecode keyed by its source's hash, not checked against it on import.
UNCHECKED_HASH = 0b01


def pyc(code: object, source: bytes) -> bytes:
    """A ``.pyc`` file's bytes (PEP 552): magic, flags, the source's hash, the marshalled code."""
    return (importlib.util.MAGIC_NUMBER + UNCHECKED_HASH.to_bytes(4, "little")
            + importlib.util.source_hash(source) + marshal.dumps(code))


def compiled_copy(source: Path, target: Path, final: Path) -> None:
    """``source`` (a zip of Python modules) again at ``target``, each ``.py`` with its ``.pyc`` beside it.

    ``final`` is where the zip will be read from once the home is in place.
    """
    with zipfile.ZipFile(source) as stock, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as compiled:
        for entry in stock.infolist():
            data = stock.read(entry)
            compiled.writestr(entry, data)
            if not entry.filename.endswith(".py"):
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # pyspark's own tests carry a SyntaxWarning or two
                try:
                    # Named as the stock zip's import names it, so tracebacks show the same lines.
                    code = compile(data, f"{final / entry.filename}", "exec", dont_inherit=True)
                except SyntaxError:
                    continue  # left to fail where it is imported, as with the stock zip
            compiled.writestr(zipfile.ZipInfo(entry.filename[:-3] + ".pyc", entry.date_time), pyc(code, data),
                              compress_type=zipfile.ZIP_DEFLATED)


def main(home: Path) -> int:
    stock = Path(pyspark.__file__).parent
    zips = sorted((stock / "python" / "lib").glob("*.zip"))
    if not zips:
        print(f"spark_home.py: no zips in {stock / 'python' / 'lib'}; tests use the stock home", file=sys.stderr)
        return 1
    home.parent.mkdir(parents=True, exist_ok=True)
    # Built beside HOME and renamed into place, so that an interrupted build leaves no half a home.
    building = Path(tempfile.mkdtemp(prefix=f".{home.name}-", dir=home.parent))
    building.chmod(0o755)
    try:
        for entry in stock.iterdir():
            if entry.name != "python":
                (building / entry.name).symlink_to(entry)
        lib = building / "python" / "lib"
        lib.mkdir(parents=True)
        for source in zips:
            compiled_copy(source, lib / source.name, home / "python" / "lib" / source.name)
        building.rename(home)
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))

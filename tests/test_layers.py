"""The package's layers import only downwards (README.md "Layout", docs/design).

Every ``import`` in ``sleeper_spark`` is read from the source, including those inside functions
and under ``TYPE_CHECKING``: an upward import that only a type needs still ties a lower layer to
a higher one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "sleeper_spark"
# Lowest first: a layer may import itself and those before it.
LAYERS = ("models", "state", "storage", "datafiles", "log", "commit", "iceberg", "table", "spark", "maintenance", "cli")
# Modules at the top of the package that any layer may import; they import only each other.
SHARED = ("errors", "config", "option_specs", "source_options", "layout", "process_state", "version")
# The package's front door and ``python -m sleeper_spark``: they gather the layers, so they may
# import any of them, and only the command line (the top layer) may import them.
FACADES = ("__init__", "__main__")


def _module_name(path: Path, package: Path) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _part(module: str) -> str:
    """The layer, shared module or facade a ``sleeper_spark`` module belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.ImportFrom):
            raise AssertionError(f"{path}:{node.lineno}: use absolute imports, as the rest of the package does")
    return [(line, name) for line, name in found if name == "sleeper_spark" or name.startswith("sleeper_spark.")]


def _allowed(importer: str, imported: str) -> bool:
    if importer == imported or importer in FACADES:
        return True
    if imported in FACADES:
        return importer == "cli"
    if imported in SHARED:
        return True
    if importer in SHARED:
        return False
    return LAYERS.index(imported) <= LAYERS.index(importer)


def _violations(package: Path) -> list[str]:
    found = []
    for path in sorted(package.rglob("*.py")):
        importer = _part(_module_name(path, package))
        for line, name in _imports(path):
            imported = _part(name)
            if not _allowed(importer, imported):
                found.append(f"{path.relative_to(package.parent)}:{line} ({importer}) imports {name} ({imported})")
    return found


def test_every_module_belongs_to_a_known_layer() -> None:
    parts = {_part(_module_name(path, PACKAGE)) for path in PACKAGE.rglob("*.py")}
    unknown = parts - set(LAYERS) - set(SHARED) - set(FACADES)
    assert not unknown, f"add {sorted(unknown)} to LAYERS or SHARED here and to README.md's layout"


def test_layers_import_only_downwards() -> None:
    assert _violations(PACKAGE) == []


@pytest.mark.parametrize("importer,line,allowed", [
    ("state/fold.py", "from sleeper_spark.datafiles.stats import StatsAccumulator", False),
    ("models/files.py", "import sleeper_spark.errors", True),
    ("config.py", "from sleeper_spark.models import FileRef", False),
    ("log/codec.py", "from sleeper_spark.storage.base import ObjectStore", True),
    ("commit/head.py", "from sleeper_spark import Catalog", False),
    ("cli/main.py", "from sleeper_spark import Catalog", True),
    ("storage/s3.py", "def f() -> None:\n    from sleeper_spark.table import Catalog", False),
])
def test_the_check_tells_a_downward_import_from_an_upward_one(
        tmp_path: Path, importer: str, line: str, allowed: bool) -> None:
    package = tmp_path / "sleeper_spark"
    path = package / importer
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(line + "\n")
    assert (_violations(package) == []) == allowed

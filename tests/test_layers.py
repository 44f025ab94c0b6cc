"""The package's layers import only downwards (README.md "Layout", docs/design), the rooms of
``spark/`` likewise (ADR 0003), and no modules import each other in a circle.

Every ``import`` in ``sleeper_spark`` is read from the source, including those inside functions
and under ``TYPE_CHECKING``: an upward import that only a type needs still ties a lower layer to
a higher one. Circles are counted without the ``TYPE_CHECKING`` imports (a type alone runs
nothing), but with those inside functions: a circle that closes only at run time is still one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "sleeper_spark"
# Lowest first: a layer may import itself and those before it.
LAYERS = ("models", "state", "storage", "datafiles", "log", "commit", "iceberg", "delta", "table", "spark", "maintenance", "cli")
# Modules at the top of the package that any layer may import; they import only each other.
SHARED = ("errors", "config", "option_specs", "source_options", "layout", "process_state", "version")
# The package's front door and ``python -m sleeper_spark``: they gather the layers, so they may
# import any of them, and only the command line (the top layer) may import them.
FACADES = ("__init__", "__main__")
# The rooms of spark/, lowest first; a room may import itself and the rooms of earlier lines, and
# rooms on one line never import each other. ``__init__`` (the front door) and ``jvm_started``
# (what older jars start) stand above every room.
SPARK_ROOMS = (
    ("common",),
    ("conditions",),
    ("source",),
    ("streaming", "native"),
    ("connect", "changes", "rows"),
    ("helper",),
    ("sql",),
    ("bridge",),
)
SPARK_DOORS = ("__init__", "jvm_started")
MOST_MODULES_IN_A_FOLDER = 15
MOST_LINES_IN_A_MODULE = 400


def _module_name(path: Path, package: Path) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _part(module: str) -> str:
    """The layer, shared module or facade a ``sleeper_spark`` module belongs to."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: Path, package: Path | None = None, types_too: bool = True) -> list[tuple[int, str]]:
    """The ``sleeper_spark`` modules ``path`` imports, by line; ``from a import b`` counts as
    ``a.b`` where ``a.b`` is a module of ``package``. ``types_too=False`` leaves out the imports
    under ``if TYPE_CHECKING``."""
    found: list[tuple[int, str]] = []
    for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8")), types_too):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif node.module and node.level == 0:
            submodules = [f"{node.module}.{alias.name}" for alias in node.names]
            submodules = [name for name in submodules if package is not None and _is_module(name, package)]
            found += [(node.lineno, name) for name in submodules] or [(node.lineno, node.module)]
        else:
            raise AssertionError(f"{path}:{node.lineno}: use absolute imports, as the rest of the package does")
    return [(line, name) for line, name in found if name == "sleeper_spark" or name.startswith("sleeper_spark.")]


def _import_nodes(tree: ast.AST, types_too: bool) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif isinstance(node, ast.If) and not types_too and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                found += _import_nodes(ast.Module(body=[child], type_ignores=[]), types_too)
        else:
            found += _import_nodes(node, types_too)
    return found


def _is_module(name: str, package: Path) -> bool:
    path = package.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


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


def _room(module: str) -> str | None:
    """The room of ``spark/`` a module is in (``sleeper_spark.spark.native.native_write``: native)."""
    parts = module.split(".")
    if parts[:2] != ["sleeper_spark", "spark"]:
        return None
    return parts[2] if len(parts) > 2 else "__init__"


def _room_level(room: str) -> int:
    for level, rooms in enumerate(SPARK_ROOMS):
        if room in rooms:
            return level
    return len(SPARK_ROOMS) if room in SPARK_DOORS else -1


def _room_violations(package: Path) -> list[str]:
    found = []
    for path in sorted((package / "spark").rglob("*.py")):
        importer = _room(_module_name(path, package))
        assert importer is not None
        for line, name in _imports(path, package):
            imported = _room(name)
            if imported is None or imported == importer or _room_level(imported) < _room_level(importer):
                continue
            below = [room for rooms in SPARK_ROOMS[:max(_room_level(importer), 0)] for room in rooms]
            found.append(f"{path.relative_to(package.parent)}:{line} ({importer}) imports {name} ({imported}): "
                         f"{importer} may import only {', '.join(below) or 'no other room'}; move what it needs "
                         f"into one of those rooms, or the import up into the caller")
    return found


def _circles(package: Path) -> list[str]:
    """Each circle of imports (strongly connected modules), as the imports that close it."""
    modules = {_module_name(path, package): path for path in package.rglob("*.py")}
    edges: dict[str, dict[str, int]] = {}
    for module, path in modules.items():
        is_package = path.name == "__init__.py"
        edges[module] = {}
        for line, name in _imports(path, package, types_too=False):
            while name not in modules and "." in name:
                name = name.rsplit(".", 1)[0]
            # A package's front door importing its own children is no circle.
            if name in modules and name != module and not (is_package and name.startswith(module + ".")):
                edges[module].setdefault(name, line)
    circles = []
    for component in _strongly_connected(edges):
        inside = [f"{modules[a].relative_to(package.parent)}:{line} imports {b}"
                  for a in sorted(component) for b, line in sorted(edges[a].items()) if b in component]
        circles.append("a circle of " + ", ".join(sorted(component)) + "; move one of these imports: "
                       + "; ".join(inside))
    return circles


def _strongly_connected(edges: dict[str, dict[str, int]]) -> list[set[str]]:
    """Tarjan's algorithm, iteratively: the components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def test_every_module_belongs_to_a_known_layer() -> None:
    parts = {_part(_module_name(path, PACKAGE)) for path in PACKAGE.rglob("*.py")}
    unknown = parts - set(LAYERS) - set(SHARED) - set(FACADES)
    assert not unknown, f"add {sorted(unknown)} to LAYERS or SHARED here and to README.md's layout"


def test_layers_import_only_downwards() -> None:
    assert _violations(PACKAGE) == []


def test_every_module_of_spark_is_in_a_known_room() -> None:
    rooms = {_room(_module_name(path, PACKAGE)) for path in (PACKAGE / "spark").rglob("*.py")}
    unknown = {room for room in rooms if room is not None and _room_level(room) < 0}
    assert not unknown, f"add {sorted(unknown)} to SPARK_ROOMS here, to ADR 0003 and to README.md's layout"


def test_rooms_of_spark_import_only_downwards() -> None:
    assert _room_violations(PACKAGE) == []


def test_no_modules_import_each_other_in_a_circle() -> None:
    assert _circles(PACKAGE) == []


def test_folders_and_modules_stay_small() -> None:
    crowded = {str(folder.relative_to(PACKAGE.parent)): count for folder in [PACKAGE, *PACKAGE.rglob("*/")]
               if (count := len([p for p in folder.glob("*.py") if p.name != "__init__.py"]))
               > MOST_MODULES_IN_A_FOLDER}
    long = {str(path.relative_to(PACKAGE.parent)): lines for path in PACKAGE.rglob("*.py")
            if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MOST_LINES_IN_A_MODULE}
    assert not crowded, f"folders of more than {MOST_MODULES_IN_A_FOLDER} modules: {crowded}; give them rooms"
    assert not long, f"modules over {MOST_LINES_IN_A_MODULE} lines: {long}; split each by job"


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


@pytest.mark.parametrize("importer,line,allowed", [
    ("spark/native/native_write.py", "from sleeper_spark.spark.common.conversions import quoted_column", True),
    ("spark/native/native_write.py", "from sleeper_spark.spark.source import writer", True),
    ("spark/native/native_write.py", "def f() -> None:\n    from sleeper_spark.spark.rows.file_frames import x", False),
    ("spark/native/native_write.py", "from sleeper_spark.spark.streaming.stream_reader import x", False),
    ("spark/common/options.py", "from sleeper_spark.spark import helper", False),
    ("spark/sql/sql_catalog.py", "from sleeper_spark.spark import helper", True),
    ("spark/helper.py", "from sleeper_spark.spark.bridge.datasource import register_source", False),
    ("spark/__init__.py", "from sleeper_spark.spark.bridge.datasource import register_source", True),
])
def test_the_check_tells_a_room_importing_downwards_from_one_importing_up_or_sideways(
        tmp_path: Path, importer: str, line: str, allowed: bool) -> None:
    package = tmp_path / "sleeper_spark"
    for module in ("spark/helper.py", "spark/source/writer.py", "spark/common/conversions.py",
                   "spark/rows/file_frames.py", "spark/streaming/stream_reader.py",
                   "spark/bridge/datasource.py", "spark/sql/sql_catalog.py"):
        (package / module).parent.mkdir(parents=True, exist_ok=True)
        (package / module).write_text("")
    path = package / importer
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(line + "\n")
    violations = _room_violations(package)
    assert (violations == []) == allowed
    if not allowed:
        assert importer in violations[0] and "move" in violations[0]


def test_the_check_finds_a_circle_that_closes_inside_a_function_and_names_its_imports(tmp_path: Path) -> None:
    package = tmp_path / "sleeper_spark"
    (package / "a").mkdir(parents=True)
    (package / "a" / "__init__.py").write_text("from sleeper_spark.a import one\n")
    (package / "a" / "one.py").write_text("from sleeper_spark.a.two import x\nfrom sleeper_spark.a.three import w\n")
    (package / "a" / "two.py").write_text("def f() -> None:\n    from sleeper_spark.a.one import y\n")
    (package / "a" / "three.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from sleeper_spark.a.one import z\n")
    circles = _circles(package)
    assert len(circles) == 1
    assert "sleeper_spark/a/two.py:2 imports sleeper_spark.a.one" in circles[0]
    assert "sleeper_spark/a/one.py:1 imports sleeper_spark.a.two" in circles[0]
    (package / "a" / "two.py").write_text("x = 1\n")
    assert _circles(package) == []  # one -> three -> one closes only under TYPE_CHECKING

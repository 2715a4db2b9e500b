"""The package's layers: no module imports the package above it, and no imports go in circles.

Every import counts, at the top of a module or inside a function: an import
deferred into a function still ties the two modules together, and a circle of
them works only by the order in which Python happens to load them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"binmetric_sweep.sweep": ROOT / "sweep", "binmetric_sweep.kernels": ROOT / "kernels"}


def _modules() -> dict[str, Path]:
    found = {}
    for package, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join((package, *parts))] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """The package's modules that ``name`` imports, wherever in it the import stands."""
    is_package = path.name == "__init__.py"
    base = name if is_package else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                anchor = base.rsplit(".", node.level - 1)[0] if node.level > 1 else base
                module = f"{anchor}.{module}" if module else anchor
            # "from package import module" imports the module; "from module import name" the module.
            targets = [
                f"{module}.{alias.name}" if f"{module}.{alias.name}" in MODULES else module
                for alias in node.names
            ]
        else:
            continue
        out |= {target for target in targets if target in MODULES and target != name}
    return out


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n.count(".") >= 2))
def test_no_module_imports_a_package_above_it(name):
    """A module below ``binmetric_sweep.sweep`` never imports that package (its ``__init__``),
    which imports almost everything: the version lives in ``sweep.version`` for that."""
    above = {p for p in GRAPH[name] if name.startswith(p + ".")}
    assert not above, f"{name} imports {sorted(above)}"


def test_the_kernels_import_nothing_of_the_sweep_layer():
    for name, targets in GRAPH.items():
        if name.startswith("binmetric_sweep.kernels"):
            assert not {t for t in targets if t.startswith("binmetric_sweep.sweep")}, name


def test_no_imports_go_in_circles():
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done
    path: list[str] = []

    def walk(name: str) -> None:
        state[name] = 1
        path.append(name)
        for target in sorted(GRAPH[name]):
            if state.get(target) == 1:
                circle = path[path.index(target) :] + [target]
                raise AssertionError("imports in a circle: " + " -> ".join(circle))
            if target not in state:
                walk(target)
        path.pop()
        state[name] = 2

    for name in sorted(GRAPH):
        if name not in state:
            walk(name)

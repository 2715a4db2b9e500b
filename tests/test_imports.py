"""The package's layers: no module imports the package above it, no imports go in circles,
and no module takes another's underscore names.

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


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_uses(name: str, path: Path, modules=MODULES) -> set[tuple[str, str]]:
    """(``name``, private name) for each underscore name ``name`` takes from another of the
    package's ``modules``: ``from module import _x``, or ``module._x`` of a module it imported."""
    is_package = path.name == "__init__.py"
    base = name if is_package else name.rpartition(".")[0]
    tree = ast.parse(path.read_text())
    found, aliases = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules:
                    aliases.add(alias.asname or alias.name)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                anchor = base.rsplit(".", node.level - 1)[0] if node.level > 1 else base
                module = f"{anchor}.{module}" if module else anchor
            if module not in modules:
                continue
            for alias in node.names:
                if f"{module}.{alias.name}" in modules:
                    aliases.add(alias.asname or alias.name)
                elif _private(alias.name):
                    found.add((name, alias.name))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            value = ast.unparse(node.value)
            if value in aliases:
                found.add((name, node.attr))
    return found


def test_no_module_imports_an_underscore_name_from_another():
    """A module's underscore names are its own: what another module needs is public (in
    its ``__all__``, documented) or lives where it is used."""
    found = sorted(set().union(*(_private_uses(name, path) for name, path in MODULES.items())))
    assert not found, "underscore names imported from another module: " + ", ".join(
        f"{module} takes {private}" for module, private in found
    )


def test_the_private_import_check_finds_each_way_of_importing(tmp_path):
    """The check above sees ``from m import _x`` (absolute and relative) and ``m._x``, and
    leaves a module's own and dunder names alone."""
    package = tmp_path / "sweep"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text(
        "from binmetric_sweep.sweep.b import _one, public, __version__\n"
        "from .b import _two\n"
        "from binmetric_sweep.sweep import b\n"
        "import binmetric_sweep.sweep.b as bee\n"
        "def _own(): return b._three, bee._four, b.__name__\n"
    )
    (package / "b.py").write_text("")
    modules = {f"binmetric_sweep.sweep.{n}": package / f"{n}.py" for n in ("a", "b")}
    modules["binmetric_sweep.sweep"] = package / "__init__.py"
    found = _private_uses("binmetric_sweep.sweep.a", package / "a.py", modules)
    assert {private for _, private in found} == {"_one", "_two", "_three", "_four"}


def test_every_package_folder_is_installed():
    """Every folder with an ``__init__.py`` is in pyproject's package list (a folder left out
    imports from the checkout and is missing from the wheel)."""
    import tomllib

    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {
        ".".join((package, *init.parent.relative_to(folder).parts))
        for package, folder in PACKAGES.items()
        for init in folder.rglob("__init__.py")
    }
    assert set(setuptools["packages"]) == folders
    assert set(setuptools["package-dir"]) == folders

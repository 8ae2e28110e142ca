"""The package's shape: no public name hides a module, and no module-level import runs in a circle.

diffrax's pattern: a module whose main function shares its name is a private file (``_hardmax.py``)
re-exported under the public name, so ``attndyn.hardmax`` is one thing, the function.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import types
from pathlib import Path

import attndyn

SRC = Path(attndyn.__file__).parent


def _modules(package: types.ModuleType) -> list[tuple[types.ModuleType, str, bool]]:
    out = []
    for info in pkgutil.iter_modules(package.__path__):
        out.append((package, info.name, info.ispkg))
        if info.ispkg:
            out += _modules(importlib.import_module(f"{package.__name__}.{info.name}"))
    return out


def test_no_public_name_hides_a_module():
    hidden = []
    for package, name, _ in _modules(attndyn):
        module = importlib.import_module(f"{package.__name__}.{name}")
        attr = getattr(package, name, module)
        if attr is not module:
            hidden.append(f"{package.__name__}.{name}")
    assert hidden == []


def _module_name(path: Path) -> str:
    parts = ("attndyn", *path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, names: set[str]) -> set[str]:
    """attndyn modules imported at module level by ``path`` (TYPE_CHECKING blocks and functions aside)."""
    me = _module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    found = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                full = f"{target}.{alias.name}"
                found.add(full if full in names else target)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return {f for f in found if f in names and f != me}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Circles of module-level imports: a depth-first search for back edges."""
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycles.append(path[path.index(n) :] + [n])
            elif n not in state:
                visit(n, path + [n])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    return cycles


def _graph(root: Path) -> dict[str, set[str]]:
    files = {_module_name(p): p for p in root.rglob("*.py")}
    return {m: _imports(p, set(files)) for m, p in files.items()}


def test_no_import_circles():
    assert _cycles(_graph(SRC)) == []


def test_the_circle_finder_finds_a_circle(tmp_path, monkeypatch):
    # The check above can fail: two modules importing each other are reported.
    pkg = tmp_path / "attndyn"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .b import x\n")
    (pkg / "b.py").write_text("from .a import y\nx = 1\n")
    monkeypatch.setattr(f"{__name__}.SRC", pkg)
    assert _cycles(_graph(pkg)) == [["attndyn.a", "attndyn.b", "attndyn.a"]]

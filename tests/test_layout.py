"""The package's shape: no public name hides a module, the modules form layers, and no import runs in a circle.

diffrax's pattern: a module whose main function shares its name is a private file (``_hardmax.py``)
re-exported under the public name, so ``attndyn.hardmax`` is one thing, the function.

The import graph is read with :mod:`ast` from every module of ``src/attndyn``, counting every import at any
depth: module level, inside functions, under ``if TYPE_CHECKING:``, relative and absolute. A module may
import only from its own layer's package or a lower layer (:data:`LAYERS`), and no import circle may close,
even through an import inside a function: such an import may defer a heavy or optional dependency
(transformers, cvxpy, dask, matplotlib, the CLI's commands), never break a circle.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import types
from dataclasses import dataclass
from pathlib import Path

import pytest

import attndyn

SRC = Path(attndyn.__file__).parent

#: The layers, lowest first: a module imports from its own package or from a lower layer, never upward.
#: Packages named in one layer are siblings and do not import each other. ``attndyn._`` stands for every
#: top-level module of the package (the core: ``attention``, ``margins``, ``solvers``, ``_kernels``, ``_hardmax``,
#: ``_softmax``, ``_adaptive``, ``_dynamics``, ``_loop``, ``_options``, ``_trajectory``, ``_io``,
#: ``_threads``, ``_devices``, ``_validation``, ``_errors``, ``_lazy``, ``_progress``, ...). Plotting sits above
#: control because it draws control's results; the experiments' registry sits above sentiment because one of
#: its cells reads a trained sentiment model (every cell registers where it is defined); the package's root
#: (its public face) re-exports the sentiment estimator, so it sits above sentiment. The sphere wing sits just
#: above analysis: below experiments (whose cells run it) and plotting (which draws its phase diagrams).
LAYERS: list[tuple[str, ...]] = [
    ("attndyn._",),
    ("attndyn.analysis",),
    ("attndyn.sphere",),
    ("attndyn.control",),
    ("attndyn.plotting",),
    ("attndyn.sentiment",),
    ("attndyn.experiments",),
    ("attndyn",),
    ("attndyn.pretrained",),
    ("attndyn.reproduce", "attndyn.sweep"),
    ("attndyn.explore",),
    ("attndyn.cli",),
    ("attndyn.__main__",),  # `python -m attndyn`: the command line, run
]

#: Temporary: offending imports (importer, imported) that live in another change's area, each with the
#: reason. The test fails when an entry no longer offends, so the list only shrinks.
ALLOWED: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Import:
    """``importer`` imports ``imported`` at ``line``; ``where`` is ``module``, ``function`` or ``typing``."""

    importer: str
    imported: str
    line: int
    where: str


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


def _module_name(path: Path, root: Path) -> str:
    parts = ("attndyn", *path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


class _Finder(ast.NodeVisitor):
    """Every import of one module, at any depth, resolved to absolute names."""

    def __init__(self, me: str, package: str, names: set[str]) -> None:
        self.me, self.package, self.names = me, package, names
        self.functions = self.typing = 0
        self.found: list[tuple[str, int, str]] = []  # (absolute name, line, where)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        self.functions += 1
        self.generic_visit(node)
        self.functions -= 1

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_If(self, node: ast.If) -> None:
        test = node.test
        if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
            isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
        ):
            self.typing += 1
            for stmt in node.body:
                self.visit(stmt)
            self.typing -= 1
            for stmt in node.orelse:
                self.visit(stmt)
        else:
            self.generic_visit(node)

    def _add(self, name: str, line: int) -> None:
        where = "function" if self.functions else "typing" if self.typing else "module"
        self.found.append((name, line, where))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            parts = self.package.split(".")
            target = ".".join(parts[: len(parts) - (node.level - 1)] + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        for alias in node.names:
            full = f"{target}.{alias.name}"
            self._add(full if full in self.names else target, node.lineno)


def _scan(root: Path) -> tuple[list[Import], list[str]]:
    """The attndyn imports of every module under ``root``, and the modules."""
    files = {_module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    names = set(files)
    imports: list[Import] = []
    for me, path in files.items():
        package = me if path.name == "__init__.py" else me.rpartition(".")[0]
        finder = _Finder(me, package, names)
        finder.visit(ast.parse(path.read_text(encoding="utf-8")))
        imports += [Import(me, n, line, w) for n, line, w in finder.found if n in names and n != me]
    return imports, list(files)


def _layer(module: str) -> tuple[int, str]:
    """(layer index, package) of ``module``: its longest prefix named in :data:`LAYERS`."""
    best = (-1, "")
    for k, packages in enumerate(LAYERS):
        for p in packages:
            if (module == p or module.startswith(p + ".")) and len(p) > len(best[1]):
                best = (k, p)
    if best[1] == "attndyn" and module != "attndyn":
        if module.count(".") > 1:
            raise AssertionError(f"{module} is in no layer: add its package to LAYERS")
        return 0, "attndyn._"  # a top-level module: the core
    return best


def _against_the_layers(imports: list[Import]) -> list[Import]:
    bad = []
    for imp in imports:
        (low, mine), (high, theirs) = _layer(imp.importer), _layer(imp.imported)
        sibling = low == high and mine != theirs and len(LAYERS[low]) > 1
        if high > low or sibling:
            bad.append(imp)
    return bad


def _circles(imports: list[Import]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    graph: dict[str, set[str]] = {}
    for imp in imports:
        graph.setdefault(imp.importer, set()).add(imp.imported)
        graph.setdefault(imp.imported, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = [stack.pop()]
            while component[-1] != v:
                component.append(stack.pop())
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return sorted(out)


def _repeated_inside_functions(imports: list[Import]) -> list[Import]:
    """Imports inside functions of a module that the importer imports at module level already: they defer
    nothing, so they only hide an edge from a reader."""
    top = {_key(i) for i in imports if i.where == "module"}
    return [i for i in imports if i.where == "function" and _key(i) in top]


def _offending(found: list[Import]) -> list[str]:
    return sorted({f"{i.importer} -> {i.imported} (line {i.line}, {i.where})" for i in found if _key(i) not in ALLOWED})


def _key(imp: Import) -> tuple[str, str]:
    return (imp.importer, imp.imported)


@pytest.fixture(scope="module")
def graph() -> tuple[list[Import], list[str]]:
    return _scan(SRC)


def test_every_module_has_a_layer(graph):
    imports, modules = graph
    assert len(modules) > 100 and len(imports) > 500  # the walk found the package
    for module in modules:
        _layer(module)  # raises for a module in no layer


def test_no_import_against_the_layers(graph):
    imports, _ = graph
    offenders = _offending(_against_the_layers(imports))
    assert not offenders, "imports against the layers (import from your layer or below):\n" + "\n".join(offenders)


def test_no_import_circles_even_through_functions(graph):
    imports, _ = graph
    assert _circles([i for i in imports if _key(i) not in ALLOWED]) == []


def test_no_import_inside_a_function_repeats_a_module_level_one(graph):
    imports, _ = graph
    offenders = _offending(_repeated_inside_functions(imports))
    assert not offenders, "imported at the top already:\n" + "\n".join(offenders)


def test_every_allowed_import_still_offends(graph):
    imports, _ = graph
    offending = {_key(i) for i in _against_the_layers(imports) + _repeated_inside_functions(imports)}
    in_circles = {_key(i) for c in _circles(imports) for i in imports if i.importer in c and i.imported in c}
    stale = sorted(set(ALLOWED) - offending - in_circles)
    assert stale == [], f"no longer offending: remove from ALLOWED: {stale}"


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    pkg = tmp_path / "attndyn"
    for name, text in {"__init__.py": "", **files}.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text)
    return pkg


def test_the_circle_finder_finds_a_circle_through_a_function(tmp_path):
    pkg = _tree(tmp_path, {"a.py": "from .b import x\n", "b.py": "def f():\n    from .a import y\nx = 1\n"})
    imports, _ = _scan(pkg)
    assert _circles(imports) == [["attndyn.a", "attndyn.b"]]
    assert Import("attndyn.b", "attndyn.a", 2, "function") in imports


def test_an_upward_import_is_found_at_any_depth(tmp_path):
    files = {
        "io.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from attndyn.cli import app\n",
        "analysis/__init__.py": "",
        "analysis/geometry.py": "class C:\n    def m(self):\n        from ..sweep import store\n",
        "sweep/__init__.py": "",
        "sweep/store.py": "from ..reproduce import runner\n",
        "reproduce/__init__.py": "",
        "reproduce/runner.py": "from attndyn.analysis import geometry\n",
        "cli/__init__.py": "app = 1\n",
    }
    imports, _ = _scan(_tree(tmp_path, files))
    assert sorted((i.importer, i.imported, i.where) for i in _against_the_layers(imports)) == [
        ("attndyn.analysis.geometry", "attndyn.sweep.store", "function"),
        ("attndyn.io", "attndyn.cli", "typing"),
        ("attndyn.sweep.store", "attndyn.reproduce.runner", "module"),  # siblings in one layer
    ]


def test_a_function_import_that_repeats_a_module_import_is_found(tmp_path):
    files = {
        "io.py": "import json\n",
        "margins.py": "from . import io\ndef f():\n    from .io import json\n",
        "trajectory.py": "def g():\n    from . import io\n",
    }
    imports, _ = _scan(_tree(tmp_path, files))
    assert _repeated_inside_functions(imports) == [Import("attndyn.margins", "attndyn.io", 3, "function")]

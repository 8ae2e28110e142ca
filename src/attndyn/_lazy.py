"""Import a package's public names on first use (scientific-python SPEC 1, as ``lazy_loader.attach_stub`` does).

A package ``__init__`` lists its public names as imports under ``if TYPE_CHECKING:`` -- what type checkers
and readers see -- and ends with ``__getattr__, __dir__ = attach(__name__, __file__)``: the same imports
then run when a name is first looked up, so ``import attndyn`` costs nothing until ``attndyn.hardmax`` is
used, and a command imports only what it uses.

>>> import attndyn
>>> attndyn.hardmax.__module__
'attndyn._hardmax'
>>> "hardmax" in dir(attndyn)
True
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["attach"]


def _type_checking_imports(init_file: str, package: str) -> dict[str, tuple[str, str]]:
    """``{public name: (absolute module, name there)}`` from the ``if TYPE_CHECKING:`` block of ``init_file``."""
    tree = ast.parse(Path(init_file).read_text(encoding="utf-8"))
    names: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
            continue
        for stmt in node.body:
            if not isinstance(stmt, ast.ImportFrom):
                continue
            if stmt.level == 1 and stmt.module is None:  # from . import analysis: a submodule
                for alias in stmt.names:
                    names[alias.asname or alias.name] = (f"{package}.{alias.name}", "")
                continue
            module = "." * stmt.level + (stmt.module or "")
            target = importlib.util.resolve_name(module, package)
            for alias in stmt.names:
                names[alias.asname or alias.name] = (target, alias.name)
    return names


def attach(package: str, init_file: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Module ``__getattr__`` and ``__dir__`` for ``package`` whose ``__init__`` is ``init_file``.

    A name of the ``TYPE_CHECKING`` imports is imported from its module on first use (then kept in the
    package's namespace); any other name that is a submodule of the package is imported as one."""
    names = _type_checking_imports(init_file, package)

    def __getattr__(name: str) -> Any:
        import sys

        if name in names:
            module, attr = names[name]
            value = importlib.import_module(module)
            if attr:
                value = getattr(value, attr)
        elif not name.startswith("__") and importlib.util.find_spec(f"{package}.{name}") is not None:
            value = importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        import sys

        return sorted(set(vars(sys.modules[package])) | set(names))

    return __getattr__, __dir__

"""The shape of the code: no function of the package longer than about 60 lines.

A function's length is its code lines: ``end_lineno - lineno + 1`` of its ``def`` (decorators not
counted, nested functions counted inside the function that holds them) minus the lines of its
docstring. Every function of ``src/attndyn`` is measured, methods and nested functions included.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

MAX_LINES = 60
PACKAGE = Path(__file__).resolve().parents[1] / "src" / "attndyn"

# Functions allowed to be longer, each with the reason. Keys: (path under src/attndyn, qualified name).
EXEMPT: dict[tuple[str, str], str] = {
    # Compiled numba kernels: one call per sequence; splitting them into helpers called per sequence costs
    # as much as the work itself (measured when the engines were split).
    ("_kernels.py", "_dense_one"): "numba kernel, a call per sequence costs as much as the work",
    # scikit-learn's estimator contract: __init__ stores every parameter, one line each, and nothing else.
    (
        "sentiment/estimator.py",
        "HardmaxSentimentClassifier.__init__",
    ): "scikit-learn stores every parameter in __init__",
}


def code_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from ``def`` to the function's last line, less its docstring's lines."""
    assert node.end_lineno is not None  # ast.parse sets it
    n = node.end_lineno - node.lineno + 1
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        assert first.end_lineno is not None
        n -= first.end_lineno - first.lineno + 1
    return n


def function_lengths(source: str) -> dict[str, int]:
    """Qualified name (``Class.method``, ``outer.inner``) -> code lines, for every function in ``source``."""
    out: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out[prefix + child.name] = code_lines(child)
                visit(child, prefix + child.name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return out


def _package_functions() -> dict[tuple[str, str], int]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        for name, n in function_lengths(path.read_text(encoding="utf-8")).items():
            found[(rel, name)] = n
    return found


def test_no_function_longer_than_60_lines() -> None:
    functions = _package_functions()
    assert len(functions) > 500  # the walk found the package
    too_long = sorted(
        f"{rel}: {name} has {n} code lines"
        for (rel, name), n in functions.items()
        if n > MAX_LINES and (rel, name) not in EXEMPT
    )
    assert not too_long, f"split these into helpers of at most {MAX_LINES} lines:\n" + "\n".join(too_long)


def test_every_exemption_names_a_long_function_that_exists() -> None:
    functions = _package_functions()
    for key, reason in EXEMPT.items():
        assert key in functions, f"{key} is exempt ({reason}) but no longer exists: remove it from EXEMPT"
        assert functions[key] > MAX_LINES, f"{key} has {functions[key]} lines: remove it from EXEMPT"


def test_code_lines_exclude_the_docstring_and_count_nested_functions_inside() -> None:
    source = textwrap.dedent(
        '''
        import functools


        @functools.cache
        def documented(x):
            """One line
            and another."""
            y = x + 1
            return y


        def bare():
            return 1


        class C:
            def method(self):
                """Doc."""

                def inner():
                    return 2

                return inner()
        '''
    )
    # blank lines inside a function count (C.method: def, blank, def inner, return 2, blank, return)
    assert function_lengths(source) == {"documented": 3, "bare": 2, "C.method": 6, "C.method.inner": 2}


def test_a_long_function_is_reported() -> None:
    body = "\n".join(f"    x{k} = {k}" for k in range(MAX_LINES))
    lengths = function_lengths(f'def long():\n    """Doc."""\n{body}\n    return 0\n')
    assert lengths == {"long": MAX_LINES + 2}

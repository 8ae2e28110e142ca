"""Typed input of the explorer: matrices from the text a reader types (index lists:
:func:`attndyn._validation.parse_indices`, which the command line uses too).

A matrix is typed as rows separated by ``;`` or new lines, entries by spaces or commas
(``"2 1; 1 1"``), or as JSON (``"[[2, 1], [1, 1]]"``). Errors are :class:`attndyn.InputError`
naming the field, the value and the fix; the page shows them as one line.
"""

from __future__ import annotations

import json
import re

import numpy as np

from .._validation import InputError

__all__ = ["parse_matrix", "matrix_text"]


def _rows(text: str, name: str) -> list[list[float]]:
    stripped = text.strip()
    if not stripped:
        raise InputError(f"{name} is empty; type rows separated by ';', e.g. '1 0; 0 1'")
    if stripped.startswith("["):
        try:
            data = json.loads(stripped)
        except ValueError:
            raise InputError(f"{name} {stripped!r} is not valid JSON; type e.g. [[1, 0], [0, 1]]") from None
        data = data if isinstance(data, list) and data and isinstance(data[0], list) else [data]
        rows = [list(r) if isinstance(r, list) else [r] for r in data]
    else:
        rows = [re.split(r"[\s,]+", r.strip()) for r in re.split(r"[;\n]", stripped) if r.strip()]
    out = []
    for r in rows:
        try:
            out.append([float(v) for v in r])
        except (TypeError, ValueError):
            raise InputError(f"{name} has an entry that is not a number in row {r!r}; type numbers only") from None
    return out


def parse_matrix(text: str, name: str, *, d: int | None = None) -> np.ndarray:
    """A finite square matrix from typed text (``d``: its required size).

    >>> parse_matrix("2 1; 1 1", "A").tolist()
    [[2.0, 1.0], [1.0, 1.0]]
    >>> parse_matrix("[[1, 0], [0, 1]]", "V", d=2).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    rows = _rows(text, name)
    widths = {len(r) for r in rows}
    if not widths or widths == {0}:
        raise InputError(f"{name}: no numbers typed; type a square matrix, rows split by ';', e.g. 1 0; 0 1")
    if len(widths) != 1:
        raise InputError(f"{name}: the rows have different lengths {sorted(widths)}; type a square matrix")
    M = np.array(rows, dtype=np.float64)
    if M.shape[0] != M.shape[1]:
        raise InputError(f"{name} is {M.shape[0]} x {M.shape[1]}; type a square matrix")
    if d is not None and M.shape[0] != d:
        raise InputError(f"{name} is {M.shape[0]} x {M.shape[0]} but the tokens have d = {d}; type a {d} x {d} matrix")
    if not np.isfinite(M).all():
        raise InputError(f"{name} has a non-finite entry ({M[~np.isfinite(M)][0]}); type finite numbers")
    return M


def matrix_text(M: np.ndarray) -> str:
    """The typed form of a matrix, rows joined by ``;``: each entry in the fewest digits that read back to the same
    float (:func:`parse_matrix` gives ``M`` bit for bit; six digits changed a control answer's leaders).

    >>> matrix_text(np.array([[2.0, 1.0], [1.0, 0.1 + 0.2]]))
    '2 1; 1 0.30000000000000004'
    """
    return "; ".join(" ".join(_shortest(v) for v in row) for row in np.asarray(M, dtype=np.float64))


def _shortest(v: float) -> str:
    text = repr(float(v))  # the shortest string that round-trips
    return text[:-2] if text.endswith(".0") else text

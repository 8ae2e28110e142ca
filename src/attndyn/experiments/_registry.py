"""The registry of experiments: a cell function, its typed parameters and its typed outputs.

A *cell* is one grid point and one seed. Its function is pure: ``fn(seed, **params) -> dict``
draws everything random from ``numpy.random.default_rng(seed)``, so any row of a sweep can be
recomputed by hand. Parameters and outputs are declared with their types, so that a spec is
checked before anything runs and every Parquet batch has the same schema (a failed cell has
nulls in its outputs).

Registered names are written as on the command line: lowercase words joined by hyphens, a paper's
numbers as the paper writes them (``good-triple``, ``theorem-1.1``; the report's sections are named
alike, ``hardmax-theorem-1.1``). The names of earlier releases (:data:`RENAMED`) are accepted for one
release with a :class:`FutureWarning`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .._validation import InputError

__all__ = [
    "Param",
    "Experiment",
    "EXPERIMENTS",
    "CellFailed",
    "experiment",
    "get_experiment",
    "registered",
    "RENAMED",
    "identity_name",
    "OUTPUT_TYPES",
    "STATUSES",
]

REQUIRED = object()
OUTPUT_TYPES = ("bool", "int64", "float64", "string")
# A row's status: the cell's outputs; it raised (retried once: it may be a fault of the machine); its computation
# failed in a way it reports itself (CellFailed: the same inputs fail again, so it is not retried).
STATUSES = ("ok", "error", "failed")


class CellFailed(Exception):
    """Raised by a cell function whose computation failed (a solve that diverged, an output that is NaN): the
    cell is recorded with ``status = "failed"`` and this message as its reason, and is not retried (a cell is a
    pure function of its parameters and seed, so it would fail again)."""


_KIND_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}


@dataclass(frozen=True)
class Param:
    """One parameter of a cell function: its type, default (or required), allowed values, range.

    ``minimum`` and ``maximum`` bound a number (inclusive); the shipped experiments declare both for every
    numeric parameter, so that no spec can ask for a cell that runs for hours or exhausts memory.
    Values of a grid are numbered in this order: numbers ascending, strings in the order of ``choices``
    (else alphabetically), false before true.
    """

    kind: type
    default: Any = REQUIRED
    choices: tuple | None = None
    minimum: float | None = None
    help: str = ""
    maximum: float | None = None

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    @property
    def arrow_type(self) -> str:
        return {int: "int64", float: "float64", str: "string", bool: "bool"}[self.kind]

    def check(self, value: Any, where: str) -> Any:
        """``value`` converted to this parameter's type, or an :class:`InputError` naming ``where``."""
        kind = self.kind
        ok = (
            isinstance(value, bool)
            if kind is bool
            else isinstance(value, int) and not isinstance(value, bool)
            if kind is int
            else isinstance(value, (int, float)) and not isinstance(value, bool)
            if kind is float
            else isinstance(value, str)
        )
        if not ok:
            raise InputError(f"{where} = {value!r} must be {_KIND_NAMES[kind]}")
        value = kind(value)
        if self.choices is not None and value not in self.choices:
            raise InputError(f"{where} = {value!r} is not allowed; choose among {', '.join(map(repr, self.choices))}")
        if kind is float and not math.isfinite(value):
            raise InputError(f"{where} = {value!r} is not a finite number; give a number")
        if self.minimum is not None and value < self.minimum:
            raise InputError(f"{where} = {value!r} must be >= {self.minimum}")
        if self.maximum is not None and value > self.maximum:
            raise InputError(f"{where} = {value!r} must be <= {self.maximum} (the range this experiment declares)")
        return value

    def sort_key(self, value: Any) -> Any:
        """Where ``value`` stands among this parameter's values in a canonical grid (see the class)."""
        if self.kind is str and self.choices is not None:
            return (self.choices.index(value), value)
        return value


@dataclass(frozen=True)
class Experiment:
    """A registered cell function with its parameters, outputs and the output the summary plots first.

    ``reference`` is a claim of a paper about the primary output, drawn beside the measurement when
    ``param`` is the first grid parameter and the ``where`` conditions hold:
    ``{"param": "d", "x": 128, "value": 0.14, "label": "...", "where": {"ensemble": "ginibre"}}``.
    """

    name: str
    fn: Callable[..., dict]
    params: dict[str, Param]
    outputs: dict[str, str]
    primary: str
    title: str = ""
    reference: dict | None = None

    def __post_init__(self) -> None:
        bad = {k: v for k, v in self.outputs.items() if v not in OUTPUT_TYPES}
        if bad:
            raise ValueError(f"experiment {self.name!r}: output types {bad} not among {OUTPUT_TYPES}")
        if self.primary not in self.outputs:
            raise ValueError(f"experiment {self.name!r}: primary output {self.primary!r} is not an output")
        clash = set(self.params) & (set(self.outputs) | set(RESERVED) | set(SUMMARY_COLUMNS))
        if clash:
            raise ValueError(
                f"experiment {self.name!r}: {sorted(clash)} are both parameters and outputs/reserved columns"
            )

    def arguments(self, params: dict[str, Any], where: str = "params") -> dict[str, Any]:
        """Every parameter the cell function receives: ``params`` checked (:meth:`Param.check`) with the declared
        defaults filled in; an unknown or missing required name is an :class:`InputError` naming ``where``."""
        unknown = sorted(set(params) - set(self.params))
        if unknown:
            raise InputError(
                f"{where}.{unknown[0]}: experiment {self.name!r} has no parameter {unknown[0]!r}; "
                f"its parameters: {', '.join(self.params)}"
            )
        out = {}
        for name, p in self.params.items():
            if name in params:
                out[name] = p.check(params[name], f"{where}.{name}")
            elif p.required:
                raise InputError(f"experiment {self.name!r} needs parameter {name!r} ({p.help}); give {where}.{name}")
            else:
                out[name] = p.default
        return out

    def __call__(self, seed: int, params: dict[str, Any]) -> dict:
        """The cell's outputs; :class:`CellFailed` if the function says its computation failed or a number
        output is NaN (a NaN is a failed computation, never a measurement)."""
        row = self.fn(seed, **params)
        missing = set(self.outputs) - set(row)
        extra = set(row) - set(self.outputs)
        if missing or extra:
            raise RuntimeError(
                f"cell function {self.name!r} returned outputs {sorted(row)}; declared {sorted(self.outputs)}"
            )
        nan = [
            k for k, t in self.outputs.items() if t == "float64" and isinstance(row[k], float) and math.isnan(row[k])
        ]
        if nan:
            raise CellFailed(f"output {nan[0]} is NaN")
        return row


# Columns every row has besides the grid parameters and the outputs.
RESERVED = {
    "cell": "int64",
    "cell_id": "string",
    "seed": "int64",
    "status": "string",
    "error": "string",
    "attempts": "int64",
    "seconds": "float64",
}

# Columns of a summary besides the grid parameters and the statistics.
SUMMARY_COLUMNS = ("cells_ok", "cells_failed", "seeds")

#: The cells renamed to the one naming style, old name -> new name. The old names are accepted, with a
#: FutureWarning, until the next release; a cell's identity keeps hashing the old name (:func:`identity_name`).
RENAMED = {
    "good_triple": "good-triple",
    "theorem_1_1": "theorem-1.1",
    "table_1": "table-1",
    "sentiment_leaders": "sentiment-leaders",
}
_FIRST_NAMES = {new: old for old, new in RENAMED.items()}


def identity_name(name: str) -> str:
    """The name hashed into the identity of a cell of experiment ``name`` (``attndyn.sweep``'s ``cell_id``): the
    name it was first published under, so that renaming an experiment never orphans the rows already computed.

    >>> identity_name("good-triple"), identity_name("my-study")
    ('good_triple', 'my-study')
    """
    return _FIRST_NAMES.get(name, name)


def _renamed(name: str) -> str:
    new = RENAMED[name]
    warnings.warn(
        f"experiment {name!r} is now called {new!r}; the old name goes in the next release", FutureWarning, stacklevel=4
    )
    return new


class _Registry(dict[str, Experiment]):
    """The registry: a dict by name that still finds a renamed experiment under its old name (with a warning)."""

    def __missing__(self, name: str) -> Experiment:
        if isinstance(name, str) and name in RENAMED:
            return self[_renamed(name)]
        raise KeyError(name)


#: Every registered cell function by name.
EXPERIMENTS: dict[str, Experiment] = _Registry()


def experiment(
    name: str,
    *,
    params: dict[str, Param],
    outputs: dict[str, str],
    primary: str,
    title: str = "",
    reference: dict | None = None,
) -> Callable:
    """Decorator registering ``fn(seed, **params) -> dict`` under ``name``."""

    def register(fn: Callable[..., dict]) -> Callable[..., dict]:
        EXPERIMENTS[name] = Experiment(
            name, fn, dict(params), dict(outputs), primary, title or (fn.__doc__ or "").split("\n")[0], reference
        )
        return fn

    return register


def get_experiment(name: Any) -> Experiment:
    """The registered experiment ``name`` (an old name of :data:`RENAMED` with a FutureWarning), or an
    :class:`InputError` listing the registered ones."""
    if not isinstance(name, str) or (name not in EXPERIMENTS and name not in RENAMED):
        raise InputError(
            f"experiment = {name!r} is not a registered experiment; choose among {', '.join(sorted(EXPERIMENTS))}"
        )
    return EXPERIMENTS[name]


@contextmanager
def registered(exp: Experiment) -> Iterator[Experiment]:
    """Register ``exp`` for the duration of a ``with`` block (tests, notebooks)."""
    old = EXPERIMENTS.get(exp.name)
    EXPERIMENTS[exp.name] = exp
    try:
        yield exp
    finally:
        if old is None:
            EXPERIMENTS.pop(exp.name, None)
        else:
            EXPERIMENTS[exp.name] = old

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
# failed in a way it reports itself, or its outputs do not match their declaration (CellFailed: the same inputs
# fail again, so it is not retried).
STATUSES = ("ok", "error", "failed")


class CellFailed(Exception):
    """Raised by a cell function whose computation failed (a solve that diverged, an output that is NaN): the
    cell is recorded with ``status = "failed"`` and this message as its reason, and is not retried (a cell is a
    pure function of its parameters and seed, so it would fail again). Outputs that do not match their
    declaration (missing, extra, None, NaN, infinite, of another type) are reported the same way."""


# What a value of each output type is, for the reasons of cells whose outputs are not.
_OUTPUT_KINDS = {
    "bool": "True or False",
    "int64": "an integer in [-2**63, 2**63)",
    "float64": "a finite number",
    "string": "a string",
}


def _numpy_kind(value: Any) -> str:
    """The dtype kind of a numpy scalar (``"b"``, ``"i"``, ``"u"``, ``"f"``, ...); "" for anything else."""
    dtype = getattr(value, "dtype", None)
    return dtype.kind if dtype is not None and getattr(value, "shape", None) == () else ""


def output_value(name: str, kind: str, value: Any) -> Any:
    """``value`` of the output ``name`` as the Python value its Parquet column of type ``kind`` stores, or a
    :class:`CellFailed` naming the output, the value and what it must be. Strict: a bool (numpy's too, never
    0 or 1) for "bool"; an integer in int64's range (not a bool) for "int64"; a finite number for "float64"
    (an integer only when the float equals it); a string for "string". None is never a value.

    >>> output_value("x", "float64", 2), output_value("ok", "bool", True)
    (2.0, True)
    >>> output_value("ok", "bool", 1)
    Traceback (most recent call last):
    ...
    attndyn.experiments._registry.CellFailed: output ok = 1 (int) is not True or False (declared bool)
    """
    numpy = _numpy_kind(value)
    is_int = (isinstance(value, int) and not isinstance(value, bool)) or numpy in ("i", "u")
    if kind == "bool" and (isinstance(value, bool) or numpy == "b"):
        return bool(value)
    if kind == "int64" and is_int and -(2**63) <= int(value) < 2**63:
        return int(value)
    if kind == "float64" and (isinstance(value, float) or numpy == "f" or is_int):
        number = _exact_float(value, is_int)
        if number is not None and math.isfinite(number):
            return number
    if kind == "string" and isinstance(value, str):
        return str(value)
    shown = f"output {name} = {repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + '...'}"
    if kind == "float64" and is_int:
        raise CellFailed(f"{shown} is an integer that float64 cannot hold exactly; return float({name}) to round it")
    raise CellFailed(f"{shown} ({type(value).__name__}) is not {_OUTPUT_KINDS[kind]} (declared {kind})")


def _exact_float(value: Any, is_int: bool) -> float | None:
    """``value`` as a Python float; an integer only when the float equals it exactly (else None)."""
    if not is_int:
        return float(value)
    try:
        number = float(int(value))
    except OverflowError:
        return None
    return number if number == int(value) else None


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
        if kind is float:
            value += 0.0  # -0.0 is 0.0: a cell's id hashes the value's text, and "-0.0" would be another cell
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
    optional: tuple[str, ...] = ()
    requires: Callable[[dict[str, Any]], Any] | None = None  # raises InputError on parameters that do not go together

    def __post_init__(self) -> None:
        object.__setattr__(self, "optional", tuple(self.optional))
        bad = {k: v for k, v in self.outputs.items() if v not in OUTPUT_TYPES}
        if bad:
            k, v = next(iter(bad.items()))
            raise InputError(
                f"experiment {self.name!r}: output {k} has type {v!r}, which is not an output type; "
                f"declare one of {', '.join(map(repr, OUTPUT_TYPES))} (float64 for a number)"
            )
        if self.primary not in self.outputs:
            raise InputError(
                f"experiment {self.name!r}: primary = {self.primary!r} is not an output; "
                f"give one of {', '.join(self.outputs)}"
            )
        unknown = [o for o in self.optional if o not in self.outputs]
        if unknown:
            raise InputError(
                f"experiment {self.name!r}: optional output {unknown[0]!r} is not an output; "
                f"give some of {', '.join(self.outputs)}"
            )
        clash = set(self.params) & (set(self.outputs) | set(RESERVED) | set(SUMMARY_COLUMNS))
        if clash:
            raise InputError(
                f"experiment {self.name!r}: {sorted(clash)} are both parameters and outputs/reserved columns; "
                "rename them"
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
        self.check_together(out, where)
        return out

    def check_together(self, params: dict[str, Any], where: str = "params") -> None:
        """The cross-parameter condition of the experiment (``requires``: values each in range that no cell can run
        together, e.g. a time that is not a whole number of layers), as an :class:`InputError` naming ``where``."""
        if self.requires is None:
            return
        try:
            self.requires(params)
        except InputError as exc:
            raise InputError(f"{where}: {exc}") from None

    def __call__(self, seed: int, params: dict[str, Any]) -> dict:
        """The cell's outputs, each as its declared type stores it (:func:`output_value`); :class:`CellFailed`
        if the function says its computation failed, or returns outputs that do not match the declaration:
        missing or extra names, None (except for the ``optional`` outputs, not measured at some parameters),
        a number output that is NaN or infinite (a failed computation, never a measurement), a value of another
        type. Such a cell would fail again, so it is not retried."""
        row = self.fn(seed, **params)
        if not isinstance(row, dict) or set(row) != set(self.outputs):
            got = sorted(row) if isinstance(row, dict) else f"a {type(row).__name__}"
            raise CellFailed(f"cell function {self.name!r} returned outputs {got}; declared {sorted(self.outputs)}")
        out: dict[str, Any] = {}
        for name, kind in self.outputs.items():
            value = row[name]
            if value is None and name in self.optional:
                out[name] = None
            elif value is None:
                raise CellFailed(f"output {name} is None; return {_OUTPUT_KINDS[kind]} (declared {kind})")
            elif kind == "float64" and _is_nan(value):
                raise CellFailed(f"output {name} is NaN")
            else:
                out[name] = output_value(name, kind, value)
        return out


def _is_nan(value: Any) -> bool:
    try:
        return math.isnan(value)
    except (TypeError, ValueError, OverflowError):
        return False


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
    optional: tuple[str, ...] = (),
    requires: Callable[[dict[str, Any]], Any] | None = None,
) -> Callable:
    """Decorator registering ``fn(seed, **params) -> dict`` under ``name``.

    ``outputs`` maps each output to its type, one of :data:`OUTPUT_TYPES` (``"bool"``, ``"int64"``,
    ``"float64"``, ``"string"``); ``optional`` names the outputs a cell may leave None (not measured at some
    parameters); ``requires(params)`` raises an :class:`InputError` where parameters each in range cannot run
    together (checked on every grid point when a sweep's spec is read, and by :meth:`Experiment.arguments`). A bad
    declaration is an :class:`InputError` when the decorator runs."""

    def register(fn: Callable[..., dict]) -> Callable[..., dict]:
        title_ = title or (fn.__doc__ or "").split("\n")[0]
        EXPERIMENTS[name] = Experiment(
            name, fn, dict(params), dict(outputs), primary, title_, reference, tuple(optional), requires
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

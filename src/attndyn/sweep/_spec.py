"""Sweep specs: a TOML file naming an experiment, a grid, a number of seeds and fixed parameters.

```toml
experiment = "good-triple"        # a registered cell function
[grid]                            # the Cartesian product of these values
d = [8, 16, 32, 64, 128]
[monte_carlo]
seeds = 1000                      # seeds 0..999 for every grid point (first_seed = 0 by default)
[fixed]                           # passed to every cell unchanged
ensemble = "ginibre"
```

A spec is *canonical* once checked: the grid's parameters in the experiment's declared order, each one's
values in their canonical order (:meth:`Param.sort_key`), the fixed parameters with their defaults, so that
two files that differ only in the order of their keys or values are the same spec and number their cells
the same way. Cells are numbered seed-major (every grid point for seed 0, then for seed 1, ...), so a
partial sweep (``max_cells``, or one that was stopped) has every grid point at about the same depth; the
last grid parameter varies fastest. Cell ``i`` is computed from ``i`` (:meth:`SweepSpec.cell`), never
looked up in a list, so a sweep of 10^9 cells takes no more memory than one of ten. A cell's identity is
its parameter values and seed (:meth:`SweepSpec.cell_id`, a sha256), which every row carries.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._validation import InputError
from ..experiments._registry import RENAMED, Experiment, get_experiment, identity_name

__all__ = ["SweepSpec", "Cell", "load_spec", "parse_spec", "spec_differences", "spec_from_record", "FORMAT", "MAX_SEED"]

_TOP = {"experiment", "title", "grid", "monte_carlo", "fixed"}
_MC = {"seeds", "first_seed"}
FORMAT = 2  # of spec.json and the rows: 2 = canonical spec, cell_id per row, checksummed parts
MAX_SEED = 2**53  # seeds and cell numbers stay below this: exact in int64, float64 and every JSON reader


@dataclass(frozen=True)
class Cell:
    """One grid point and one seed; ``index`` is its place in the sweep's order."""

    index: int
    seed: int
    point: dict[str, Any]


@dataclass(frozen=True)
class SweepSpec:
    """A checked sweep spec, canonical (see the module): ``grid`` in the experiment's parameter order with
    its values in canonical order; ``fixed`` includes the defaults."""

    experiment: str
    grid: dict[str, tuple]
    seeds: int
    first_seed: int = 0
    fixed: dict[str, Any] | None = None
    title: str = ""

    def __post_init__(self) -> None:
        params = self.exp.params
        order = [k for k in params if k in self.grid] + [k for k in self.grid if k not in params]
        grid = {
            k: tuple(sorted(self.grid[k], key=params[k].sort_key)) if k in params else tuple(self.grid[k])
            for k in order
        }
        object.__setattr__(self, "grid", grid)
        object.__setattr__(self, "fixed", dict(sorted((self.fixed or {}).items())))

    @property
    def exp(self) -> Experiment:
        return get_experiment(self.experiment)

    @property
    def n_points(self) -> int:
        return math.prod(len(v) for v in self.grid.values())

    @property
    def points(self) -> list[dict[str, Any]]:
        """The grid points in order (the last grid parameter varies fastest); a list, for summaries."""
        return [self.point(p) for p in range(self.n_points)]

    def point(self, p: int) -> dict[str, Any]:
        """Grid point number ``p`` (0 <= p < n_points), from its mixed-radix digits."""
        out = {}
        for name, values in reversed(self.grid.items()):
            p, digit = divmod(p, len(values))
            out[name] = values[digit]
        return dict(reversed(out.items()))

    @property
    def n_cells(self) -> int:
        return self.n_points * self.seeds

    def cell(self, index: int) -> Cell:
        """Cell number ``index``: seed ``first_seed + index // n_points`` at grid point ``index % n_points``."""
        s, p = divmod(int(index), self.n_points)
        return Cell(int(index), self.first_seed + s, self.point(p))

    def cells(self, indices: Iterable[int] | None = None) -> Iterator[Cell]:
        """Cells in sweep order (seed-major), or those with the given indices; lazily."""
        for i in range(self.n_cells) if indices is None else indices:
            yield self.cell(i)

    def params(self, point: dict[str, Any]) -> dict[str, Any]:
        """Everything the cell function receives besides the seed: fixed values, defaults, the point."""
        return {**(self.fixed or {}), **point}

    def point_key(self, point: dict[str, Any]) -> str:
        """Canonical JSON of the experiment (its :func:`~attndyn.experiments._registry.identity_name`, which a
        rename does not change) and every parameter of a cell at ``point`` (sorted keys)."""
        return json.dumps(
            {"experiment": identity_name(self.experiment), "params": self.params(point)},
            sort_keys=True,
            separators=(",", ":"),
            allow_nan=False,
        )

    def cell_id(self, seed: int, point: dict[str, Any], key: str | None = None) -> str:
        """A cell's identity: sha256 of its canonical parameters (:meth:`point_key`) and seed, 32 hex digits.
        It depends on the values only, never on the cell's number or on the order of the spec's keys."""
        text = f"{self.point_key(point) if key is None else key}|{int(seed)}"
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def record(self) -> dict:
        """JSON-able canonical form written to OUT/spec.json and compared on resume."""
        return {
            "format": FORMAT,
            "experiment": self.experiment,
            "title": self.title,
            "grid": {k: list(v) for k, v in self.grid.items()},
            "monte_carlo": {"seeds": self.seeds, "first_seed": self.first_seed},
            "fixed": dict(self.fixed or {}),
        }


def spec_from_record(record: Any, where: str = "spec.json") -> SweepSpec:
    """The spec of a record written by :meth:`SweepSpec.record` (OUT/spec.json); InputError naming ``where``
    if it is not one, or one of an older format."""
    if not isinstance(record, dict) or "experiment" not in record:
        raise InputError(
            f"{where} does not hold a sweep spec (got {_short(record)}); restore it, or start a new folder"
        )
    if record.get("format") != FORMAT:
        raise InputError(
            f"{where} is of sweep format {record.get('format', 1)!r}, not {FORMAT} (written by another version of "
            "attndyn, whose rows carry no cell identities or checksums); run the spec again into a new folder"
        )
    record = {k: v for k, v in record.items() if k != "format"}
    if isinstance(record["experiment"], str):  # a folder written before a rename: its name is not the user's to fix
        record["experiment"] = RENAMED.get(record["experiment"], record["experiment"])
    try:
        return parse_spec(record)
    except InputError as exc:
        raise InputError(
            f"{where} does not hold a valid sweep spec ({exc}); restore it, or start a new folder"
        ) from None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def load_spec(path: str | os.PathLike) -> SweepSpec:
    """Read and check a TOML spec file; problems raise :class:`InputError` naming the key."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"SPEC file {str(p)!r} does not exist" if not p.exists() else f"SPEC {str(p)!r} is not a file")
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"SPEC file {str(p)!r} is not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"SPEC file {str(p)!r} could not be read: {exc}") from None
    return parse_spec(data)


def _table(data: dict, key: str, required: bool) -> dict:
    value = data.get(key, None)
    if value is None:
        if required:
            raise InputError(f"the spec has no [{key}] table; add one")
        return {}
    if not isinstance(value, dict):
        raise InputError(f"{key} must be a table ([{key}]), got {value!r}")
    return value


def _monte_carlo(mc: dict) -> tuple[int, int]:
    """``(seeds, first_seed)`` of the [monte_carlo] table, checked: every seed in [0, 2**53)."""
    seeds, first = mc.get("seeds"), mc.get("first_seed", 0)
    if isinstance(seeds, bool) or not isinstance(seeds, int) or not 1 <= seeds <= MAX_SEED:
        raise InputError(
            f"monte_carlo.seeds = {seeds!r} must be an integer from 1 to 2**53 (the number of seeds per grid point)"
        )
    if isinstance(first, bool) or not isinstance(first, int) or first < 0:
        raise InputError(f"monte_carlo.first_seed = {first!r} must be an integer >= 0")
    if first + seeds > MAX_SEED:
        raise InputError(
            f"monte_carlo.first_seed = {first!r} with seeds = {seeds} goes past the last seed, 2**53 - 1; "
            "give a smaller first_seed"
        )
    return seeds, first


def parse_spec(data: dict) -> SweepSpec:
    """Check a spec given as a dict (the parsed TOML) against the experiment's declared parameters.

    >>> spec = parse_spec({"experiment": "good-triple", "grid": {"d": [8, 16]}, "monte_carlo": {"seeds": 3}})
    >>> spec.n_cells, spec.fixed
    (6, {'ensemble': 'ginibre', 'qk': 'identity'})
    >>> spec.cell(3), spec.cell_id(1, {"d": 16})
    (Cell(index=3, seed=1, point={'d': 16}), '66ce62af921a127f44d504d37fa52e8a')
    >>> parse_spec({"experiment": "good-triple", "grid": {"d": []}, "monte_carlo": {"seeds": 3}})
    Traceback (most recent call last):
    ...
    attndyn._validation.InputError: grid.d is an empty list; give at least one value
    """
    if not isinstance(data, dict):
        raise InputError(
            f"the spec must be a table (a dict of experiment, grid, monte_carlo, fixed), got a {type(data).__name__}"
        )
    unknown = sorted(set(data) - _TOP)
    if unknown:
        raise InputError(f"unknown key {unknown[0]!r} in the spec; allowed: {', '.join(sorted(_TOP))}")
    if "experiment" not in data:
        raise InputError('the spec names no experiment; add experiment = "good-triple" (or another registered one)')
    exp = get_experiment(data["experiment"])
    title = data.get("title", "")
    if not isinstance(title, str):
        raise InputError(f"title = {title!r} must be a string")
    grid_in, mc, fixed_in = _table(data, "grid", True), _table(data, "monte_carlo", True), _table(data, "fixed", False)
    if not grid_in:
        raise InputError("[grid] is empty; give at least one parameter with a list of values, e.g. d = [8, 16]")
    bad = sorted(set(mc) - _MC)
    if bad:
        raise InputError(f"unknown key monte_carlo.{bad[0]}; allowed: {', '.join(sorted(_MC))}")
    seeds, first = _monte_carlo(mc)
    known = ", ".join(exp.params)
    grid: dict[str, tuple] = {}
    for table, values in (("grid", grid_in), ("fixed", fixed_in)):
        for name in values:
            if name not in exp.params:
                raise InputError(
                    f"{table}.{name}: experiment {exp.name!r} has no parameter {name!r}; its parameters: {known}"
                )
    for name, values in grid_in.items():
        if name in fixed_in:
            raise InputError(f"{name!r} is both in [grid] and in [fixed]; keep it in one of them")
        if not isinstance(values, list):
            raise InputError(f"grid.{name} = {values!r} must be a list of values, e.g. {name} = [{values!r}]")
        if not values:
            raise InputError(f"grid.{name} is an empty list; give at least one value")
        checked = tuple(exp.params[name].check(v, f"grid.{name}[{i}]") for i, v in enumerate(values))
        if len(set(checked)) != len(checked):
            raise InputError(f"grid.{name} = {values!r} repeats a value; each grid value must appear once")
        grid[name] = checked
    fixed: dict[str, Any] = {}
    for name, p in exp.params.items():
        if name in grid:
            continue
        if name in fixed_in:
            fixed[name] = p.check(fixed_in[name], f"fixed.{name}")
        elif p.required:
            raise InputError(
                f"experiment {exp.name!r} needs parameter {name!r} ({p.help}); put it in [grid] or [fixed]"
            )
        else:
            fixed[name] = p.default
    spec = SweepSpec(exp.name, grid, seeds, first, fixed, title)
    if spec.n_cells >= MAX_SEED:
        raise InputError(f"the spec has {spec.n_cells} cells, more than 2**53; give fewer grid values or seeds")
    if exp.requires is not None:  # values each in range that no cell can run together: refused now, not per cell
        for point in spec.points:
            exp.check_together({**fixed, **point}, "grid point " + ", ".join(f"{k} = {v!r}" for k, v in point.items()))
    return spec


def spec_differences(old: dict, new: dict, prefix: str = "") -> list[str]:
    """Human descriptions of what differs between two spec records, e.g. ``"grid.d: [8] -> [8, 16]"``."""
    out = []
    for key in list(old) + [k for k in new if k not in old]:
        a, b = old.get(key, "(absent)"), new.get(key, "(absent)")
        if isinstance(a, dict) and isinstance(b, dict):
            out += spec_differences(a, b, f"{prefix}{key}.")
        elif a != b:
            out.append(f"{prefix}{key}: {a!r} -> {b!r}")
    return out

"""Sweep specs: a TOML file naming an experiment, a grid, a number of seeds and fixed parameters.

```toml
experiment = "good_triple"        # a registered cell function
[grid]                            # the Cartesian product of these values
d = [8, 16, 32, 64, 128]
[monte_carlo]
seeds = 1000                      # seeds 0..999 for every grid point (first_seed = 0 by default)
[fixed]                           # passed to every cell unchanged
ensemble = "ginibre"
```

Cells are ordered seed-major (every grid point for seed 0, then for seed 1, ...), so a partial
sweep (``max_cells``, or one that was stopped) has every grid point at about the same depth.
"""

from __future__ import annotations

import itertools
import os
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._validation import InputError
from .registry import Experiment, get_experiment

__all__ = ["SweepSpec", "Cell", "load_spec", "parse_spec", "spec_differences"]

_TOP = {"experiment", "title", "grid", "monte_carlo", "fixed"}
_MC = {"seeds", "first_seed"}


@dataclass(frozen=True)
class Cell:
    """One grid point and one seed; ``index`` is its place in the sweep's order."""

    index: int
    seed: int
    point: dict[str, Any]


@dataclass(frozen=True)
class SweepSpec:
    """A checked sweep spec. ``grid`` keeps the order of the file; ``fixed`` includes the defaults."""

    experiment: str
    grid: dict[str, tuple]
    seeds: int
    first_seed: int = 0
    fixed: dict[str, Any] | None = None
    title: str = ""

    @property
    def exp(self) -> Experiment:
        return get_experiment(self.experiment)

    @property
    def points(self) -> list[dict[str, Any]]:
        """The grid points in order (the last grid parameter varies fastest)."""
        names = list(self.grid)
        return [dict(zip(names, values)) for values in itertools.product(*self.grid.values())]

    @property
    def n_cells(self) -> int:
        return len(self.points) * self.seeds

    def cells(self, indices: Any = None) -> Iterator[Cell]:
        """Cells in sweep order (seed-major), or those with the given indices."""
        pts = self.points
        for i in range(self.n_cells) if indices is None else indices:
            s, p = divmod(int(i), len(pts))
            yield Cell(int(i), self.first_seed + s, pts[p])

    def params(self, point: dict[str, Any]) -> dict[str, Any]:
        """Everything the cell function receives besides the seed: fixed values, defaults, the point."""
        return {**(self.fixed or {}), **point}

    def record(self) -> dict:
        """JSON-able form written to OUT/spec.json and compared on resume."""
        return {
            "experiment": self.experiment,
            "title": self.title,
            "grid": {k: list(v) for k, v in self.grid.items()},
            "monte_carlo": {"seeds": self.seeds, "first_seed": self.first_seed},
            "fixed": dict(self.fixed or {}),
        }


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


def parse_spec(data: dict) -> SweepSpec:
    """Check a spec given as a dict (the parsed TOML) against the experiment's declared parameters.

    >>> spec = parse_spec({"experiment": "good_triple", "grid": {"d": [8, 16]}, "monte_carlo": {"seeds": 3}})
    >>> spec.n_cells, spec.fixed
    (6, {'ensemble': 'ginibre', 'qk': 'identity'})
    >>> parse_spec({"experiment": "good_triple", "grid": {"d": []}, "monte_carlo": {"seeds": 3}})
    Traceback (most recent call last):
    ...
    attndyn._validation.InputError: grid.d is an empty list; give at least one value
    """
    unknown = sorted(set(data) - _TOP)
    if unknown:
        raise InputError(f"unknown key {unknown[0]!r} in the spec; allowed: {', '.join(sorted(_TOP))}")
    if "experiment" not in data:
        raise InputError('the spec names no experiment; add experiment = "good_triple" (or another registered one)')
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
    seeds, first = mc.get("seeds"), mc.get("first_seed", 0)
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        raise InputError(f"monte_carlo.seeds = {seeds!r} must be an integer >= 1 (the number of seeds per grid point)")
    if isinstance(first, bool) or not isinstance(first, int) or first < 0:
        raise InputError(f"monte_carlo.first_seed = {first!r} must be an integer >= 0")
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
    return SweepSpec(exp.name, grid, seeds, first, fixed, title)


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

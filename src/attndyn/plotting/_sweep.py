"""A sweep summary as a figure: one statistic against the first grid parameter, with its 95%
interval, one line per combination of the other grid parameters, and the paper's claim if any."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ._style import color, new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["sweep_figure"]


# What the figure reads of a sweep, as structural types: plotting sits below sweep and takes its data in.
class _Experiment(Protocol):
    @property
    def outputs(self) -> Mapping[str, str]: ...
    @property
    def primary(self) -> str: ...
    @property
    def reference(self) -> dict | None: ...


class _Spec(Protocol):
    @property
    def exp(self) -> _Experiment: ...
    @property
    def experiment(self) -> str: ...
    @property
    def grid(self) -> Mapping[str, Sequence[Any]]: ...
    @property
    def fixed(self) -> dict[str, Any] | None: ...
    @property
    def title(self) -> str: ...


class _Summary(Protocol):
    @property
    def spec(self) -> _Spec: ...
    @property
    def table(self) -> Any: ...  # a pandas DataFrame, one row per grid point


def sweep_figure(summary: _Summary, output: str | None = None, *, title: str | None = None) -> Figure:
    """Plot ``output`` (default: the experiment's primary output) of a
    :class:`attndyn.sweep.SweepSummary` against the first grid parameter."""
    spec, table = summary.spec, summary.table
    exp = spec.exp
    output = output or exp.primary
    stat = "frac" if exp.outputs[output] == "bool" else "mean"
    names = list(spec.grid)
    xname, others = names[0], names[1:]
    xs = list(spec.grid[xname])
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in xs)
    pos = np.asarray(xs, dtype=float) if numeric else np.arange(len(xs), dtype=float)
    fig = new_figure(6.4, 4.0)
    ax = fig.add_subplot()
    combos = list(itertools.product(*(spec.grid[o] for o in others))) or [()]
    for j, combo in enumerate(combos):
        sel = np.ones(len(table), dtype=bool)
        for name, v in zip(others, combo):
            sel &= (table[name] == v).to_numpy()
        part = table[sel]
        y = np.array([part.loc[part[xname] == x, f"{output}_{stat}"].squeeze() for x in xs], dtype=float)
        lo = np.array([part.loc[part[xname] == x, f"{output}_lo"].squeeze() for x in xs], dtype=float)
        hi = np.array([part.loc[part[xname] == x, f"{output}_hi"].squeeze() for x in xs], dtype=float)
        shift = (j - (len(combos) - 1) / 2) * (0.08 if not numeric else 0.0)
        label = ", ".join(f"{n} = {v}" for n, v in zip(others, combo)) or None
        ax.errorbar(
            pos + shift,
            y,
            yerr=[np.nan_to_num(y - lo), np.nan_to_num(hi - y)],
            marker="o",
            ms=4,
            capsize=3,
            lw=1.2,
            color=color(j),
            label=label,
        )
    ref = exp.reference
    if ref and ref.get("param") == xname and output == exp.primary and _applies(ref, spec):
        ax.plot([ref["x"]], [ref["value"]], marker="*", ms=14, color="#333333", ls="none", label=ref["label"])
    if numeric and min(xs) > 0 and max(xs) / min(xs) >= 8:
        ax.set_xscale("log", base=2)
        ax.set_xticks(xs, [str(x) for x in xs])
    elif not numeric:
        ax.set_xticks(pos, [str(x) for x in xs])
    ax.set_xlabel(xname)
    ax.set_ylabel(f"{'fraction' if stat == 'frac' else 'mean'} {output} (95% interval)")
    n = int(table["cells_ok"].min()) if len(table) else 0
    ax.set_title(
        title or f"{spec.title or f'{spec.experiment}: {output} against {xname}'} (n >= {n} per point)", fontsize=10
    )
    ax.grid(alpha=0.3, lw=0.5)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    return fig


def _applies(ref: dict[str, Any], spec: _Spec) -> bool:
    """The reference's conditions hold for some grid point (a grid value or the fixed value)."""
    return all(
        v in spec.grid[k] if k in spec.grid else (spec.fixed or {}).get(k) == v for k, v in ref.get("where", {}).items()
    )

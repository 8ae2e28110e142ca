"""What an experiment is, what it returns, and the registry that ``attndyn reproduce`` walks.

An experiment is a function ``run(ctx) -> ExperimentResult`` registered under a short name
with :func:`experiment`. It simulates (the only place in ``reproduce`` that does), measures
with :mod:`attndyn.analysis`, draws with :mod:`attndyn.plotting`, and sets every measured
number beside the paper's value in a :class:`Check`.
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..plotting import render_frames, save_figure
from ..plotting.animation import animate, frame_indices

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..trajectory import Trajectory

__all__ = ["Check", "FigureRef", "Slider", "ExperimentResult", "Experiment", "Context", "EXPERIMENTS", "experiment"]


@dataclass(frozen=True)
class Check:
    """One claim of a paper set beside what we measured.

    ``passed`` is None for numbers that are shown but not judged (e.g. "typically").
    """

    claim: str
    paper: str
    measured: str
    passed: bool | None

    def record(self) -> dict[str, Any]:
        return {"claim": self.claim, "paper": self.paper, "measured": self.measured, "passed": self.passed}


@dataclass(frozen=True)
class FigureRef:
    """A saved figure: its caption and the written files (paths relative to the output folder)."""

    caption: str
    files: tuple[str, ...]

    @property
    def png(self) -> str | None:
        return next((f for f in self.files if f.endswith(".png")), None)

    def record(self) -> dict[str, Any]:
        return {"caption": self.caption, "files": list(self.files)}


@dataclass(frozen=True)
class Slider:
    """PNG frames (bytes) of a run for the report's layer/time slider, with one label per frame."""

    caption: str
    frames: tuple[bytes, ...]
    labels: tuple[str, ...]


@dataclass
class ExperimentResult:
    """The record of one experiment: claims and measurements, parameters, seed, figures."""

    name: str
    title: str
    source: str
    summary: str
    checks: list[Check] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    figures: list[FigureRef] = field(default_factory=list)
    sliders: list[Slider] = field(default_factory=list)
    animations: list[str] = field(default_factory=list)
    skipped: str | None = None
    runtime_s: float = 0.0

    @property
    def status(self) -> str:
        """``"skipped"``, ``"fail"`` (some judged check failed), ``"pass"`` or ``"info"`` (nothing judged)."""
        if self.skipped is not None:
            return "skipped"
        judged = [c.passed for c in self.checks if c.passed is not None]
        if not judged:
            return "info"
        return "pass" if all(judged) else "fail"

    def record(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "source": self.source,
            "summary": self.summary,
            "status": self.status,
            "skipped": self.skipped,
            "checks": [c.record() for c in self.checks],
            "params": self.params,
            "seed": self.seed,
            "figures": [f.record() for f in self.figures],
            "animations": self.animations,
            "runtime_s": round(self.runtime_s, 3),
        }

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{html.escape(c.claim)}</td><td>{html.escape(c.paper)}</td><td>{html.escape(c.measured)}</td>"
            f"<td>{'—' if c.passed is None else ('pass' if c.passed else 'FAIL')}</td></tr>"
            for c in self.checks
        )
        return (
            f"<div><strong>{html.escape(self.title)}</strong> ({html.escape(self.status)})"
            f"<table><tr><th>claim</th><th>paper</th><th>measured</th><th></th></tr>{rows}</table></div>"
        )


@dataclass
class Context:
    """What an experiment may use: settings, its seed, and helpers that write figures into ``out``."""

    out: Path
    quick: bool
    seed: int = 0
    formats: tuple[str, ...] = ("png", "svg", "pdf")
    animations: bool = True
    sentiment_run: Path | None = None
    max_frames: int = 12

    def pick(self, quick: Any, full: Any) -> Any:
        """The quick or the full value of a setting."""
        return quick if self.quick else full

    def rng(self, offset: int = 0) -> np.random.Generator:
        return np.random.default_rng(self.seed + offset)

    def figure(self, fig: Figure, stem: str, caption: str) -> FigureRef:
        paths = save_figure(fig, self.out / "figures" / stem, formats=self.formats)
        return FigureRef(caption=caption, files=tuple(str(p.relative_to(self.out)) for p in paths))

    def slider(
        self,
        traj: Trajectory,
        caption: str,
        *,
        title: str | None = None,
        sequence: int | None = None,
        gif_stem: str | None = None,
        result: ExperimentResult | None = None,
    ) -> Slider:
        """Frames of ``traj`` for the HTML slider; also written as a GIF when animations are on."""
        from ..trajectory import HardmaxTrajectory

        idx = frame_indices(traj, self.max_frames)
        frames = render_frames(traj, idx, sequence=sequence, title=title)
        ts = traj.ts.detach().cpu().numpy()
        hard = isinstance(traj, HardmaxTrajectory)
        labels = tuple(f"layer {int(round(ts[k]))}" if hard else f"t = {ts[k]:.3g}" for k in idx)
        if self.animations and gif_stem and result is not None:
            p = animate(traj, self.out / "animations" / f"{gif_stem}.gif", frames=frames, fps=3)
            result.animations.append(str(p.relative_to(self.out)))
        return Slider(caption=caption, frames=tuple(frames), labels=labels)


@dataclass(frozen=True)
class Experiment:
    name: str
    title: str
    source: str
    run: Callable[[Context], ExperimentResult]
    needs: str | None = None  # e.g. "sentiment_run"
    cell: str | None = None  # the registered cell this Monte Carlo claim samples (see CELLS)


EXPERIMENTS: dict[str, Experiment] = {}

# The Monte Carlo claims and the cell of attndyn.experiments.EXPERIMENTS whose instances and per-instance check
# each uses (``attndyn sweep`` runs that cell over grids).
CELLS = {"hardmax-theorem-1.1": "theorem_1_1", "softmax-table1": "table_1", "softmax-ginibre": "good_triple"}


def experiment(
    name: str, *, title: str, source: str, needs: str | None = None
) -> Callable[[Callable[[Context, ExperimentResult], None]], Callable[[Context], ExperimentResult]]:
    """Register ``run(ctx, result)``; the wrapper creates the result and times the run."""

    def wrap(fn: Callable[[Context, ExperimentResult], None]) -> Callable[[Context], ExperimentResult]:
        def run(ctx: Context) -> ExperimentResult:
            res = ExperimentResult(name=name, title=title, source=source, summary=(fn.__doc__ or "").strip())
            t0 = time.perf_counter()
            fn(ctx, res)
            res.runtime_s = time.perf_counter() - t0
            return res

        EXPERIMENTS[name] = Experiment(
            name=name, title=title, source=source, run=run, needs=needs, cell=CELLS.get(name)
        )
        return run

    return wrap


def fmt(x: float, digits: int = 3) -> str:
    """A number as short text."""
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    return f"{float(x):.{digits}g}"

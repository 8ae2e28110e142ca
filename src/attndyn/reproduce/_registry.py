"""The sections of the ``attndyn reproduce`` report: what each one is, what it returns, and their list.

A section is a function ``run(ctx) -> SectionResult`` registered under a short name with
:func:`section`. It simulates (the only place in ``reproduce`` that does), measures with
:mod:`attndyn.analysis`, draws with :mod:`attndyn.plotting`, and sets every measured number beside
the paper's value in a :class:`Check`. A Monte Carlo claim names the cell function of the one
registry of experiments (:data:`attndyn.experiments.EXPERIMENTS`) it is made of (``cell=``) and runs
its random instances as cells of it (:meth:`Context.cells`), so ``attndyn sweep`` recomputes any of
them and runs the same experiment over grids.
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..experiments._registry import get_experiment
from ..experiments._run import run_cells
from ..plotting import save_figure
from ..plotting._animation import animate, frame_indices, render_frames
from ._evidence import Sample
from ._markup import inline_markup

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .._trajectory import Trajectory

__all__ = [
    "Check",
    "yes_no",
    "FigureRef",
    "Slider",
    "SectionResult",
    "Section",
    "Context",
    "SECTIONS",
    "section",
    "monte_carlo",
    "cell_inputs",
]


@dataclass(frozen=True)
class Check:
    """One claim of a paper set beside what we measured.

    ``passed`` is None for numbers that are shown but not judged (e.g. "typically"). ``sample``: in a quick run,
    the random instances a Monte Carlo verdict rests on (:meth:`Context.sample`), written beside the verdict.
    """

    claim: str
    paper: str
    measured: str
    passed: bool | None
    sample: Sample | None = None

    @property
    def outcome(self) -> str:
        """ "pass", "fail" or "shown" (not judged)."""
        return "shown" if self.passed is None else ("pass" if self.passed else "fail")

    @property
    def verdict(self) -> str:
        """The outcome with, in a quick run, the sample beside it: "pass (N = 4: too small to tell; the full run
        uses 100)"."""
        return self.outcome if self.sample is None else f"{self.outcome} ({self.sample.note()})"

    def record(self) -> dict[str, Any]:
        rec = {"claim": self.claim, "paper": self.paper, "measured": self.measured, "passed": self.passed}
        return rec if self.sample is None else {**rec, "sample": self.sample.record()}


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
class SectionResult:
    """The record of one section: claims and measurements, parameters, seed, figures."""

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
            **{key: getattr(self, key) for key in ("name", "title", "source", "summary")},
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
            "<tr>"
            + "".join(f"<td>{inline_markup(t)}</td>" for t in (c.claim, c.paper, c.measured, c.verdict))
            + "</tr>"
            for c in self.checks
        )
        return (
            f"<div><strong>{html.escape(self.title)}</strong> ({html.escape(self.status)})"
            f"<table><tr><th>claim</th><th>paper</th><th>measured</th><th>verdict</th></tr>{rows}</table></div>"
        )


@dataclass
class Context:
    """What a section may use: settings, its seed, and helpers that write figures into ``out``."""

    out: Path
    quick: bool
    seed: int = 0
    formats: tuple[str, ...] = ("png", "svg", "pdf")
    animations: bool = True
    sentiment_run: Path | None = None
    max_frames: int = 12
    client: Any = None  # a dask.distributed.Client that runs the cells (run_cells); None: this process

    def pick(self, quick: Any, full: Any) -> Any:
        """The quick or the full value of a setting."""
        return quick if self.quick else full

    def sample(self, n: int, *, full: int, decided: bool) -> Sample | None:
        """In a quick run, the ``n`` random instances a verdict rests on (the full run uses ``full``) and whether
        they tell the claim from its negation (:mod:`.evidence`), for :class:`Check`; None in the full run."""
        return Sample(n, full, decided) if self.quick else None

    def rng(self, offset: int = 0, result: SectionResult | None = None) -> np.random.Generator:
        """A generator seeded with ``seed + offset`` (each section has its own offset); that seed is recorded as
        ``result.seed`` when a result is given."""
        if result is not None:
            result.seed = self.seed + offset
        return np.random.default_rng(self.seed + offset)

    def cells(self, experiment: str, cells: list[tuple[int, dict[str, Any]]]) -> list[dict[str, Any]]:
        """Rows of the registered cell function ``experiment`` (:data:`attndyn.experiments.EXPERIMENTS`) for
        each ``(seed, params)``: :func:`attndyn.experiments._run.run_cells`, on the dask client when there is
        one. A cell that raised (status "error") is a fault of the code, not a measurement: RuntimeError; a cell
        whose computation failed (status "failed", e.g. a solve that diverged) is returned for the claim to count."""
        rows = run_cells(experiment, cells, client=self.client)
        bad = next((r for r in rows if r["status"] == "error"), None)
        if bad is not None:
            raise RuntimeError(f"{experiment} cell with seed {bad['seed']} raised: {bad['error']}")
        return rows

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
        result: SectionResult | None = None,
    ) -> Slider:
        """Frames of ``traj`` for the HTML slider; also written as a GIF when animations are on."""
        from .._trajectory import HardmaxTrajectory

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
class Section:
    """One section of the report, registered by :func:`section`: its name (what ``--only`` takes), title,
    source in the papers, its ``run``, what it needs (``"sentiment_run"``) and the cell function of
    :data:`attndyn.experiments.EXPERIMENTS` its Monte Carlo claim runs."""

    name: str
    title: str
    source: str
    run: Callable[[Context], SectionResult]
    needs: str | None = None  # e.g. "sentiment_run"
    cell: str | None = None  # the cell function of attndyn.experiments a Monte Carlo claim runs


#: The report's sections by name, in report order.
SECTIONS: dict[str, Section] = {}


def monte_carlo(cell: str) -> Callable[[Callable], Callable]:
    """Declare, under :func:`section`, the registered cell function (:data:`attndyn.experiments.EXPERIMENTS`)
    whose cells a Monte Carlo claim runs (:meth:`Context.cells`)."""
    get_experiment(cell)

    def mark(fn: Callable) -> Callable:
        fn.cell = cell  # type: ignore[attr-defined]
        return fn

    return mark


def section(
    name: str, *, title: str, source: str, needs: str | None = None
) -> Callable[[Callable[[Context, SectionResult], None]], Callable[[Context], SectionResult]]:
    """Register ``run(ctx, result)``; the wrapper creates the result and times the run."""

    def wrap(fn: Callable[[Context, SectionResult], None]) -> Callable[[Context], SectionResult]:
        def run(ctx: Context) -> SectionResult:
            res = SectionResult(name=name, title=title, source=source, summary=(fn.__doc__ or "").strip())
            t0 = time.perf_counter()
            fn(ctx, res)
            res.runtime_s = time.perf_counter() - t0
            return res

        SECTIONS[name] = Section(
            name=name, title=title, source=source, run=run, needs=needs, cell=getattr(fn, "cell", None)
        )
        return run

    return wrap


def cell_inputs(experiment: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The seed and every parameter of each cell row (what a report records so that ``attndyn sweep`` or
    ``attndyn.experiments.EXPERIMENTS[experiment](seed, params)`` recomputes the instance)."""
    names = ("seed", *get_experiment(experiment).params)
    return [{k: r[k] for k in names} for r in rows]


def yes_no(x: bool) -> str:
    """The report's one spelling of a measured truth value: "yes" or "no" (as the paper column says "yes")."""
    return "yes" if x else "no"


def fmt(x: float, digits: int = 3) -> str:
    """A number as short text (a truth value as :func:`yes_no`)."""
    if isinstance(x, (bool, np.bool_)):
        return yes_no(bool(x))
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    return f"{float(x):.{digits}g}"

"""Run the report's sections and write results, figures and the HTML report."""

from __future__ import annotations

import html
import os
import platform
import shutil
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import param
from .._io import check_writable, write_json, write_text
from .._progress import progress_bar
from .._threads import limit_threads
from .._validation import InputError
from ..experiments._run import check_scheduler, connect
from ..plotting._save import FORMATS
from ._html import render_html
from ._registry import SECTIONS, Check, Context, SectionResult

__all__ = ["ReproduceConfig", "ReproduceReport", "reproduce", "section_names"]


def section_names() -> list[str]:
    """Names of the report's sections, in report order."""
    return list(SECTIONS)


@dataclass(frozen=True)
class ReproduceConfig:
    """Settings of one ``attndyn reproduce`` run; checks itself on construction.

    Args:
        only: names of the sections to run (None: all). Unknown names are rejected with the list of known ones.
        out: output folder (created); must be writable.
        quick: small settings (seconds; what the test suite runs) instead of the full ones.
        sentiment_run: a folder written by ``attndyn sentiment train`` for the hardmax paper's Figs. 8-10.
        seed: base seed; each section adds its own fixed offset.
        formats: figure formats among png, svg, pdf (default: png, svg and pdf; png only with ``quick``).
        animations: also write GIFs of the slider runs.
        scheduler: address of a dask scheduler (``tcp://host:8786``) whose workers run the cells of the Monte Carlo
            claims (:func:`attndyn.experiments._run.run_cells`; the sweep extra); None runs them in this process.
            Either way the numbers are the same.
    """

    only: tuple[str, ...] | None = None
    out: Path = Path("attndyn-reproduce")
    quick: bool = False
    sentiment_run: Path | None = None
    seed: int = 0
    formats: tuple[str, ...] | None = None
    animations: bool = True
    scheduler: str | None = None

    def __post_init__(self) -> None:
        formats = (("png",) if self.quick else FORMATS) if self.formats is None else tuple(self.formats)
        object.__setattr__(self, "formats", formats)
        if self.only is not None:
            names = tuple(n.strip() for item in self.only for n in str(item).split(",") if n.strip())
            unknown = [n for n in names if n not in SECTIONS]
            if unknown or not names:
                raise InputError(
                    f"{param('only', 'only')} {', '.join(map(repr, unknown)) or '(empty)'}: unknown section; "
                    f"choose among {', '.join(SECTIONS)}"
                )
            object.__setattr__(self, "only", names)
        object.__setattr__(self, "out", Path(self.out))
        if self.sentiment_run is not None:
            p = Path(self.sentiment_run)
            if not p.is_dir():
                raise InputError(
                    f"{param('sentiment_run', 'sentiment_run')} {str(p)!r} is not a folder; give the folder written "
                    "by `attndyn sentiment train --run DIR`"
                )
            object.__setattr__(self, "sentiment_run", p)
        bad = [f for f in formats if f not in FORMATS]
        if bad or not formats:
            raise InputError(f"formats {formats!r}: choose among {', '.join(FORMATS)}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise InputError(f"seed must be a non-negative integer, got {self.seed!r}")
        if self.scheduler is not None:
            check_scheduler(self.scheduler)

    @property
    def names(self) -> list[str]:
        return list(self.only) if self.only is not None else list(SECTIONS)

    def record(self) -> dict[str, Any]:
        return {
            "only": list(self.only) if self.only else None,
            "out": str(self.out),
            "quick": self.quick,
            "sentiment_run": None if self.sentiment_run is None else str(self.sentiment_run),
            "seed": self.seed,
            "formats": list(self.formats or ()),
            "animations": self.animations,
            "scheduler": self.scheduler,
            "experiments": self.names,
        }


def _check_writable(out: Path) -> None:
    check_writable(out, param("out", "out"))


@dataclass
class ReproduceReport:
    """What a reproduce run produced: one :class:`SectionResult` per section, and the files."""

    config: ReproduceConfig
    results: list[SectionResult]
    runtime_s: float
    files: dict[str, Path] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """No section failed (skipped and informational ones do not count)."""
        return all(r.status != "fail" for r in self.results)

    def __getitem__(self, name: str) -> SectionResult:
        for r in self.results:
            if r.name == name:
                return r
        raise KeyError(name)

    def record(self) -> dict[str, Any]:
        return {
            "config": self.config.record(),
            "runtime_s": round(self.runtime_s, 3),
            "passed": self.passed,
            "experiments": [r.record() for r in self.results],
        }

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{html.escape(r.name)}</td><td>{html.escape(r.status)}</td><td>{r.runtime_s:.2f} s</td></tr>"
            for r in self.results
        )
        where = html.escape(str(self.files.get("report", "")))
        return (
            f"<div><strong>attndyn reproduce</strong> ({'quick' if self.config.quick else 'full'}, "
            f"{self.runtime_s:.1f} s) — report: <code>{where}</code><table>{rows}</table></div>"
        )


def _environment() -> dict[str, str]:
    import matplotlib
    import numpy
    import torch

    from .. import __version__

    return {
        "attndyn": __version__,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "matplotlib": matplotlib.__version__,
        "machine": platform.machine(),
    }


def reproduce(config: ReproduceConfig | None = None, *, progress: bool = False, **kwargs: Any) -> ReproduceReport:
    """Run the sections of ``config`` (or ``ReproduceConfig(**kwargs)``) and write into ``config.out``:

    ``config.json`` (the resolved configuration), ``figures/`` (PNG, SVG, PDF),
    ``animations/`` (GIF), ``results.json`` (every claim, paper value, measured value, verdict,
    parameters, seed) and ``report.html`` (self-contained). Everything is written first into
    ``out/.reproduce-partial`` and moved into ``out`` once the report is written, so a run that stops half-way
    (an error, Ctrl-C) leaves an earlier run's files as they were.

    A section that raises is recorded as failed with the error and the others still run.
    """
    config = ReproduceConfig(**kwargs) if config is None else config
    out = config.out
    client = None if config.scheduler is None else connect(config.scheduler)  # refused: nothing created yet
    try:
        _check_writable(out)
        return _run(config, client, progress)
    finally:
        if client is not None:
            client.close()


#: Where a run writes until it ends: a run stopped half-way leaves the earlier run's report as it was.
STAGING = ".reproduce-partial"


def _run(config: ReproduceConfig, client: Any, progress: bool) -> ReproduceReport:
    """Run into ``out/.reproduce-partial`` (:func:`_run_into`), then move what it wrote into ``out``: an earlier
    run's report, results and figures stay untouched until this one has written all of its own."""
    out = config.out
    staging = out / STAGING
    shutil.rmtree(staging, ignore_errors=True)  # a run stopped half-way before this one
    staging.mkdir()
    try:
        report = _run_into(config, client, progress, staging)
        last = ("config.json", "results.json", "report.html")  # the figures first, the report last
        files = sorted(
            (p for p in staging.rglob("*") if p.is_file()),
            key=lambda p: (p.name in last, last.index(p.name) if p.name in last else 0, p),
        )
        for path in files:
            target = out / path.relative_to(staging)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, target)
        report.files = {k: out / v.relative_to(staging) for k, v in report.files.items()}
        return report
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _run_into(config: ReproduceConfig, client: Any, progress: bool, out: Path) -> ReproduceReport:
    """Every section of ``config`` run with its figures written under ``out``; then config.json, results.json
    and report.html there."""
    assert config.formats is not None  # resolved by ReproduceConfig.__post_init__
    ctx = Context(
        out=out,
        quick=config.quick,
        seed=config.seed,
        formats=config.formats,
        animations=config.animations,
        sentiment_run=config.sentiment_run,
        max_frames=4 if config.quick else 30,
        client=client,
    )
    results: list[SectionResult] = []
    t0 = time.perf_counter()
    # The sections' tensors are tiny (n <= 40): threads only cost (docs/benchmarks.md, "Threads").
    with (
        limit_threads(torch_threads=1, blas_threads=1),
        progress_bar(len(config.names), "reproduce", enabled=progress) as advance,
    ):
        for name in config.names:
            exp = SECTIONS[name]
            t1 = time.perf_counter()
            try:
                res = exp.run(ctx)
            except InputError:
                raise
            except Exception as exc:  # record and go on: one broken section must not hide the others
                res = SectionResult(name=name, title=exp.title, source=exp.source, summary="")
                res.checks.append(Check("the section runs", "-", f"{type(exc).__name__}: {exc}", False))
                res.params = {"traceback": traceback.format_exc(limit=6)}
                res.runtime_s = time.perf_counter() - t1
            results.append(res)
            advance(1)
    runtime = time.perf_counter() - t0
    report = ReproduceReport(config=config, results=results, runtime_s=runtime)
    report.files["config"] = write_json(out / "config.json", config.record())
    report.files["results"] = write_json(out / "results.json", report.record())
    page = render_html(results, out=out, config=config.record(), runtime_s=runtime, environment=_environment())
    report.files["report"] = write_text(out / "report.html", page)
    return report

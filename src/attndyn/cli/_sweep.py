"""``attndyn sweep SPEC --out DIR`` and ``attndyn sweep summarize DIR``.

``sweep`` is a group of two commands, ``run`` and ``summarize``; a first argument that is not a command's
name is a spec, run by ``run`` (``attndyn sweep SPEC ...`` is ``attndyn sweep run SPEC ...``), so that
each command has its own help and usage line.
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from .._errors import InputError
from ._groups import run_by_default
from ._interrupt import Interrupted

if TYPE_CHECKING:
    from types import FrameType

__all__ = ["app", "run_cmd", "summarize_cmd", "register"]


app = run_by_default(
    "sweep",
    "SPEC --out DIR [OPTIONS] | summarize DIR",
    "Seeded parameter studies on dask.distributed, resumable: attndyn sweep SPEC --out DIR runs a spec "
    "(the same as attndyn sweep run SPEC --out DIR); attndyn sweep summarize DIR gives fractions with 95% "
    'Wilson intervals per grid point and a plot. Needs the sweep extra: pip install -e ".\\[sweep]".',
)


@app.command("run")
def run_cmd(
    spec: str = typer.Argument(..., metavar="SPEC", help="A TOML sweep spec (see docs/sweeps.md)."),
    out: Path | None = typer.Option(
        None, "--out", help="Sweep folder: rows/*.parquet and spec.json (created; rerunning resumes)."
    ),
    workers: int | None = typer.Option(
        None,
        "--workers",
        help="Worker processes of a local dask cluster (default 2, at most the cores here; 0: run in this "
        "process without dask).",
    ),
    scheduler: str | None = typer.Option(
        None,
        "--scheduler",
        help="Address of a running dask scheduler, e.g. tcp://10.0.0.5:8786 (instead of --workers).",
    ),
    max_cells: int | None = typer.Option(None, "--max-cells", help="Run at most this many of the cells left."),
    chunk: int = typer.Option(8, "--chunk", help="Cells per dask task (1-10000)."),
    batch: int = typer.Option(1000, "--batch", help="Rows per Parquet file (also written every 10 s)."),
    retry_failed: bool = typer.Option(False, "--retry-failed", help="Also rerun cells recorded as failed."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar (standard error)."),
) -> None:
    """Run the cells of a sweep spec not yet finished in --out, on dask.distributed; rerun to resume.
    Ctrl-C or SIGTERM keeps what finished and says how to resume (exit status 130)."""
    if out is None:
        raise InputError("give the output folder: attndyn sweep SPEC --out DIR")
    if workers is not None and scheduler is not None:
        raise InputError("give --workers N or --scheduler ADDRESS, not both")
    from ..sweep import SweepInterrupted, load_spec, run_sweep
    from ..sweep._runner import cores

    spec_ = load_spec(spec)
    n = 2 if workers is None else workers
    if scheduler is None and n > cores():
        typer.echo(
            f"--workers {n} is more than the {cores()} cores here; using {cores()} "
            "(--scheduler ADDRESS runs on a cluster of any size)",
            err=True,
        )
        n = cores()
    # SIGTERM (a batch system ending the job) stops like Ctrl-C: the rows in memory are written first
    old = signal.signal(signal.SIGTERM, _interrupt) if threading.current_thread() is threading.main_thread() else None
    try:
        run = run_sweep(
            spec_,
            out,
            workers=n,
            scheduler=scheduler,
            max_cells=max_cells,
            chunk=chunk,
            batch=batch,
            retry_failed=retry_failed,
            progress=progress,
        )
    except SweepInterrupted as exc:
        raise Interrupted(str(exc)) from None  # attndyn prints the line once and exits 130
    finally:
        if old is not None:
            signal.signal(signal.SIGTERM, old)
    typer.echo(f"{run.ran} cells run ({run.failed} failed), {run.left} left of {run.total}; folder {run.out}")


@app.command("summarize")
def summarize_cmd(
    folder: Path | None = typer.Argument(None, metavar="DIR", help="A sweep folder (the --out of a sweep)."),
) -> None:
    """Summarize a sweep folder: per grid point, fractions with 95% Wilson intervals and means with 95%
    intervals; prints the table and writes DIR/summary.csv, summary.json and summary.png. Every part is
    checked first: a damaged one is named, with the fix."""
    if folder is None:
        raise InputError("give the sweep folder: attndyn sweep summarize DIR")
    from ..sweep import summarize

    summary = summarize(folder)
    typer.echo(summary.text())
    typer.echo("written: " + ", ".join(str(p) for p in summary.files.values()))


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def register(parent: typer.Typer) -> None:
    """Add the ``sweep`` commands to the ``attndyn`` app."""
    parent.add_typer(app, name="sweep")

"""``attndyn sweep SPEC --out DIR`` and ``attndyn sweep summarize DIR``."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from .._validation import InputError

if TYPE_CHECKING:
    from types import FrameType

__all__ = ["sweep_cmd", "register"]


def sweep_cmd(
    target: str = typer.Argument(..., metavar="SPEC | summarize", help="A TOML sweep spec, or the word 'summarize'."),
    folder: Path | None = typer.Argument(None, metavar="[DIR]", help="With 'summarize': the sweep folder."),
    out: Path | None = typer.Option(
        None, "--out", help="Sweep folder: rows/*.parquet and spec.json (created; rerunning resumes)."
    ),
    workers: int | None = typer.Option(
        None,
        "--workers",
        help="Worker processes of a local dask cluster (default 2; 0: run in this process without dask).",
    ),
    scheduler: str | None = typer.Option(
        None,
        "--scheduler",
        help="Address of a running dask scheduler, e.g. tcp://10.0.0.5:8786 (instead of --workers).",
    ),
    max_cells: int | None = typer.Option(None, "--max-cells", help="Run at most this many of the cells left."),
    chunk: int = typer.Option(8, "--chunk", help="Cells per dask task."),
    batch: int = typer.Option(1000, "--batch", help="Rows per Parquet file (also written every 10 s)."),
    retry_failed: bool = typer.Option(False, "--retry-failed", help="Also rerun cells recorded as failed."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar (standard error)."),
) -> None:
    """Run a seeded parameter study on dask.distributed, resumably (attndyn sweep SPEC --out DIR), or
    summarize a sweep folder: fractions with 95% Wilson intervals per grid point and a plot
    (attndyn sweep summarize DIR)."""
    if target == "summarize":
        if folder is None:
            raise InputError("give the sweep folder: attndyn sweep summarize DIR")
        from ..sweep import summarize

        summary = summarize(folder)
        typer.echo(summary.text())
        typer.echo("written: " + ", ".join(str(p) for p in summary.files.values()))
        return
    if folder is not None:
        raise InputError(f"unexpected argument {str(folder)!r}; give the output folder with --out DIR")
    if out is None:
        raise InputError("give the output folder: attndyn sweep SPEC --out DIR")
    if workers is not None and scheduler is not None:
        raise InputError("give --workers N or --scheduler ADDRESS, not both")
    from ..sweep import load_spec, run_sweep

    spec = load_spec(target)
    # SIGTERM (a batch system ending the job) stops like Ctrl-C: the rows in memory are written first
    old = signal.signal(signal.SIGTERM, _interrupt) if threading.current_thread() is threading.main_thread() else None
    try:
        run = run_sweep(
            spec,
            out,
            workers=2 if workers is None else workers,
            scheduler=scheduler,
            max_cells=max_cells,
            chunk=chunk,
            batch=batch,
            retry_failed=retry_failed,
            progress=progress,
        )
    finally:
        if old is not None:
            signal.signal(signal.SIGTERM, old)
    typer.echo(f"{run.ran} cells run ({run.failed} failed), {run.left} left of {run.total}; folder {run.out}")


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def register(app: typer.Typer) -> None:
    """Add the ``sweep`` command to the ``attndyn`` app."""
    app.command("sweep")(sweep_cmd)

"""``attndyn reproduce``: regenerate the papers' figures and claims into one folder and one HTML page."""

from __future__ import annotations

from pathlib import Path

import typer

from ._interrupt import on_interrupt

__all__ = ["reproduce_cmd", "register"]


def reproduce_cmd(
    only: list[str] | None = typer.Option(
        None, "--only", help="Run only this section of the report (repeat, or comma-separate; see --list)."
    ),
    out: Path = typer.Option(Path("attndyn-reproduce"), "--out", help="Output folder (created)."),
    quick: bool = typer.Option(False, "--quick", help="Small settings: the whole run takes well under a minute."),
    sentiment_run: Path | None = typer.Option(
        None, "--sentiment-run", help="A trained sentiment run folder, for the hardmax paper's Figs. 8-10."
    ),
    seed: int = typer.Option(0, help="Base seed of the random instances."),
    formats: str | None = typer.Option(
        None, help="Figure formats, comma-separated, among png, svg, pdf (default png,svg,pdf; png with --quick)."
    ),
    animations: bool = typer.Option(True, "--animations/--no-animations", help="Also write GIFs of the slider runs."),
    list_: bool = typer.Option(False, "--list", help="List the report's sections and exit."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar (standard error)."),
    scheduler: str | None = typer.Option(
        None,
        "--scheduler",
        help="Run the Monte Carlo claims' cells on this dask scheduler (tcp://host:8786; the sweep extra). "
        "The numbers are the same as without it.",
    ),
) -> None:
    """Regenerate every figure and computable claim of the hardmax and softmax papers, each beside the measured value, with a self-contained HTML report (OUT/report.html)."""
    from ..reproduce import SECTIONS, ReproduceConfig, reproduce

    if list_:
        for name, exp in SECTIONS.items():
            typer.echo(f"{name:26s} {exp.title}")
        return
    from ._dynamics import check_out_folder

    check_out_folder(out, "--out")  # empty ('' wrote into this folder), a file, or below a file
    config = ReproduceConfig(
        only=tuple(only) if only else None,
        out=out,
        quick=quick,
        sentiment_run=sentiment_run,
        seed=seed,
        formats=None if formats is None else tuple(f.strip() for f in formats.split(",") if f.strip()),
        animations=animations,
        scheduler=scheduler,
    )
    with on_interrupt(
        lambda: (
            f"interrupted before the report was written ({str(out)!r} may hold some figures); rerun the same command to run the sections again"
        )
    ):
        report = reproduce(config, progress=progress)
    for r in report.results:
        typer.echo(f"{r.status:8s} {r.name:26s} {r.runtime_s:7.2f} s  {r.title}")
        if r.skipped is not None:
            typer.echo(f"{'':8s} {'':26s} skipped because {r.skipped}")
    typer.echo(f"{len(report.results)} sections in {report.runtime_s:.1f} s; report: {report.files['report']}")
    if not report.passed:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add the ``reproduce`` command to the ``attndyn`` app."""
    app.command("reproduce")(reproduce_cmd)

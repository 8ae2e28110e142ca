"""``attndyn explore``: the papers' pictures live in a local, offline web page (the ``explore`` extra)."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import typer

from .._errors import InputError

__all__ = ["explore_cmd", "register"]


def explore_cmd(
    port: int = typer.Option(0, "--port", help="Port on localhost (0: a free one)."),
    no_browser: bool = typer.Option(False, "--no-browser", help="Do not open a browser; print the address."),
    model: Path | None = typer.Option(
        None,
        "--model",
        help="A trained sentiment run folder (attndyn sentiment train --run RUN) for the Sentiment tab.",
    ),
) -> None:
    """Start the explorer: hardmax playground, softmax regimes, control and sentiment, at http://localhost:PORT/.

    Needs the \\[explore] extra (pip install -e ".\\[explore]"); everything is served from the installed
    packages, with no network. Stop it with Ctrl-C."""
    t0 = time.perf_counter()
    if importlib.util.find_spec("panel") is None:
        raise InputError('attndyn explore needs Panel: pip install -e ".[explore]" (or pip install panel)')
    if not 0 <= port <= 65535:
        raise InputError(f"--port {port}: choose 0 (a free port) to 65535")
    if model is not None and not model.is_dir():
        raise InputError(
            f"--model {str(model)!r} is not a folder; give a run folder written by attndyn sentiment train"
        )
    from ..explore._app import serve

    server = serve(port, open_browser=not no_browser, model=model)
    server.start()
    typer.echo(
        f"attndyn explore: http://localhost:{server.port}/ (up {time.perf_counter() - t0:.1f} s after the command began; Ctrl-C stops)"
    )
    try:
        server.io_loop.start()
    except KeyboardInterrupt:
        server.stop()
        raise


def register(app: typer.Typer) -> None:
    app.command("explore")(explore_cmd)

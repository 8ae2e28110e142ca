"""``attndyn explore``: the papers' pictures live in a local, offline web page (the ``explore`` extra)."""

from __future__ import annotations

import errno
import importlib.util
import os
import signal
import sys
import threading
import time
from pathlib import Path

import typer

from .._errors import InputError

__all__ = ["explore_cmd", "register", "process_age"]


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
    if importlib.util.find_spec("panel") is None:
        raise InputError('attndyn explore needs Panel: pip install -e ".[explore]" (or pip install panel)')
    if not 0 <= port <= 65535:
        raise InputError(f"--port {port}: choose 0 (a free port) to 65535")
    _check_model(model)
    from ..explore._app import serve

    try:
        server = serve(port, open_browser=not no_browser, model=model)
    except OSError as exc:
        if exc.errno not in (errno.EADDRINUSE, errno.EACCES):
            raise
        raise InputError(
            f"--port {port} cannot be used ({exc.strerror}); give another port, or --port 0 for a free one"
        ) from None
    server.start()
    if threading.current_thread() is threading.main_thread():
        # Panel's handler only stops the loop (the command then ended silently with status 0): Ctrl-C is
        # KeyboardInterrupt again, as SIGTERM is under `attndyn` (attndyn.cli), and ends below with one line
        signal.signal(signal.SIGINT, signal.default_int_handler)
    age, since = process_age()
    typer.echo(f"attndyn explore: http://localhost:{server.port}/ (up {age:.1f} s after {since}; Ctrl-C stops)")
    try:
        server.io_loop.start()
    except KeyboardInterrupt:
        server.stop()
        # The one line of an interrupted command, then the process ends at once: there is nothing to save, an edit
        # still running in a worker thread would otherwise be waited for, and tearing down torch, numba and Bokeh
        # takes 1-2 s more on a busy machine.
        print("interrupted", file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)


def _check_model(model: Path | None) -> None:
    """A --model that is not a trained run folder is refused before the server starts. A folder without
    config.json is named so at once; any other is loaded the way ``attndyn sentiment predict --model`` loads it
    (the same checks: config.json, vocab.json and the weights, their sha256, no training in progress)."""
    if model is None:
        return
    from ..sentiment._layout import CONFIG

    fix = "give a run folder written by attndyn sentiment train --run RUN"
    if not model.is_dir():
        raise InputError(f"--model {str(model)!r} is not a folder; {fix}")
    if not (model / CONFIG).is_file():
        raise InputError(f"--model {str(model)!r} has no {CONFIG}, so it is not a trained run folder; {fix}")
    from ..explore._sentiment_view import load_model
    from ._flags import FLAGS

    try:
        load_model(model)
    except InputError as exc:
        raise InputError(f"--model: {exc.worded(FLAGS)}") from None


def process_age() -> tuple[float, str]:
    """Seconds since this process started and the words for that moment: from Linux's /proc (the process's
    start time, field 22 of /proc/self/stat, against /proc/uptime), else since :mod:`attndyn.cli` was imported.

    >>> age, since = process_age()
    >>> age >= 0 and since in ("the process started", "attndyn's command line loaded")
    True
    """
    try:
        stat = Path("/proc/self/stat").read_text()
        start_ticks = int(stat.rsplit(")", 1)[1].split()[19])  # field 22; the name in (...) may hold spaces
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK")), "the process started"
    except (OSError, ValueError, IndexError, AttributeError):  # not Linux
        from . import LOADED_AT

        return time.monotonic() - LOADED_AT, "attndyn's command line loaded"


def register(app: typer.Typer) -> None:
    app.command("explore")(explore_cmd)

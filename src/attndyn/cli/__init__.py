"""The ``attndyn`` command line: a thin layer over the Python API.

Every command builds the same objects the API takes; bad input ends with one line on
standard error and exit status 2, never a traceback.
"""

from __future__ import annotations

import sys
import warnings
from typing import TextIO

import typer

from .._validation import HypothesisWarning, InputError

app = typer.Typer(
    name="attndyn",
    help="What self-attention does to tokens: hardmax and softmax attention dynamics.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        from .._version import __version__

        print(f"attndyn {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", help="Print the version and exit.", callback=_print_version, is_eager=True
    ),
) -> None:
    """What self-attention does to tokens: hardmax and softmax attention dynamics."""


from .dynamics import register as _register_dynamics  # noqa: E402

_register_dynamics(app)  # hardmax, softmax, demo

# ---- sub-command groups (one line each) -------------------------------------------------
# (sentiment and reproduce register here)
from .sentiment import app as _sentiment_app, data_app as _data_app

app.add_typer(_sentiment_app, name="sentiment")
app.add_typer(_data_app, name="data")  # noqa: E402,E702
from .reproduce import register as _register_reproduce

_register_reproduce(app)  # noqa: E402,E702
from .control import register as _register_control

_register_control(app)  # noqa: E402,E702
from .sweep import register as _register_sweep

_register_sweep(app)  # noqa: E402,E702
from .pretrained import app as _pretrained_app

app.add_typer(_pretrained_app, name="pretrained")  # noqa: E402,E702
from .explore import register as _register_explore

_register_explore(app)  # noqa: E402,E702


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    prefix = "warning" if issubclass(category, HypothesisWarning) else category.__name__
    print(f"{prefix}: {message}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``attndyn`` script; returns the exit status."""
    with warnings.catch_warnings():
        warnings.simplefilter("always", HypothesisWarning)  # shown as one line, never raised
        warnings.showwarning = _show_warning
        return _run(argv)


def _run(argv: list[str] | None) -> int:
    try:
        rv = app(args=argv, standalone_mode=False)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        rv = 2
    except typer.Exit as exc:
        rv = exc.exit_code
    except (typer.Abort, KeyboardInterrupt):
        print("interrupted", file=sys.stderr)
        rv = 130
    except (OSError, MemoryError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        rv = 2
    except RuntimeError as exc:  # torch's out-of-memory errors (CPU and CUDA) are RuntimeErrors
        if not _out_of_memory(exc):
            raise
        print(
            "error: not enough memory for this run; use fewer or smaller inputs, or keep fewer states", file=sys.stderr
        )
        rv = 2
    except Exception as exc:
        # Usage errors of click (or typer's vendored click): one line, exit status 2.
        if not (hasattr(exc, "format_message") and hasattr(exc, "exit_code")):
            raise
        if type(exc).__name__ == "NoArgsIsHelpError" and hasattr(exc, "show"):
            exc.show()
            return _finish(0, argv)
        print(f"error: {exc.format_message()}", file=sys.stderr)
        rv = 2
    return _finish(rv, argv)


def _out_of_memory(exc: RuntimeError) -> bool:
    import torch

    text = str(exc)
    return isinstance(exc, torch.OutOfMemoryError) or "can't allocate memory" in text or "out of memory" in text


def _finish(rv: object, argv: list[str] | None) -> int:
    code = rv if isinstance(rv, int) else 0
    if argv is None:
        sys.exit(code)
    return code

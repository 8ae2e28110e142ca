"""The ``attndyn`` command line: a thin layer over the Python API.

Every command builds the same objects the API takes; bad input ends with one line on
standard error and exit status 2, never a traceback. Ctrl-C and SIGTERM end a command with one
line saying what was kept and how to go on, and exit status 130.

A command's module is imported when the command runs or shows its help (as click's lazy groups
and scientific-python SPEC 1 do): ``attndyn --version`` and ``attndyn --help`` import neither torch
nor numpy.
"""

from __future__ import annotations

import importlib
import signal
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, TextIO

import typer
from typer.core import TyperCommand, TyperGroup, TyperOption

from .._errors import HypothesisWarning, InputError
from ._compiling import with_compile_notice
from ._flags import FLAGS
from ._interrupt import Interrupted

__all__ = ["app", "main", "Interrupted"]

#: When the command line was imported (time.monotonic()): where a process started, when /proc cannot tell.
LOADED_AT = time.monotonic()

#: The commands in the order ``attndyn --help`` lists them: the module that registers each (its
#: ``register(app)``), and the line ``attndyn --help`` shows without importing it (a test checks it
#: against the command's own help).
COMMANDS: dict[str, tuple[str, str]] = {
    "hardmax": (
        "dynamics",
        "Run the hardmax dynamics (hardmax paper eq. 1.1); report leaders, clusters and Theorem 1.1.",
    ),
    "softmax": (
        "dynamics",
        "Run the softmax self-attention dynamics (softmax paper eqs. 1-4); report the limit geometry.",
    ),
    "demo": ("dynamics", "The main job on built-in defaults: the papers' configurations, their leaders and clusters."),
    "reproduce": (
        "reproduce",
        "Regenerate every figure and computable claim of the hardmax and softmax papers, each beside the "
        "measured value, with a self-contained HTML report (OUT/report.html).",
    ),
    "control": (
        "control",
        "Choose A so that exactly the named tokens lead (hardmax paper eq. 1.1), then verify with the exact engine.",
    ),
    "sweep": (
        "sweep",
        "Seeded parameter studies on dask.distributed, resumable: attndyn sweep SPEC --out DIR runs a spec (the "
        "same as attndyn sweep run SPEC --out DIR); attndyn sweep summarize DIR gives fractions with 95% Wilson "
        'intervals per grid point and a plot. Needs the sweep extra: pip install -e ".\\[sweep]".',
    ),
    "sphere": (
        "sphere",
        "Tokens on the unit sphere (arXiv 2312.10794): attndyn sphere TOKENS --beta B --time T runs SA or USA (or "
        "normalised layers) and reports clusters, energy and the theorems' verdicts; attndyn sphere phase --out DIR "
        "draws a phase diagram over (t, beta).",
    ),
    "sentiment": ("sentiment", "Interpretable IMDb sentiment analysis with a hardmax transformer."),
    "data": ("sentiment", "Datasets: fetch them when you have a network."),
    "pretrained": (
        "pretrained",
        "Leaders, clusters and value spectra of a pretrained BERT-family model (default: MiniLM, "
        "offline; needs the \\[pretrained] extra).",
    ),
    "explore": (
        "explore",
        "Start the explorer: hardmax playground, softmax regimes, control and sentiment, at http://localhost:PORT/.",
    ),
}

_SETTINGS: dict[str, Any] = {"add_completion": False, "pretty_exceptions_enable": False}


class _FlagOption(TyperOption):
    """typer's option, shown without a value type when it is a plain flag (``--help``, ``--json``): typer's help
    showed ``--version <bool>``, as if the flag took a value."""

    def display_type_rich(self, ctx: Any) -> str | None:
        if self.is_flag:  # --x and --x/--no-x take no value
            return None
        return super().display_type_rich(ctx)


def _plain_flags(command: Any) -> Any:
    """``command`` (and the commands below it) with its flag options shown as :class:`_FlagOption`."""
    helper = command.get_help_option(typer.Context(command))  # made once, then kept by the command
    for p in [*command.params, *([helper] if helper is not None else [])]:
        if type(p) is TyperOption:
            p.__class__ = _FlagOption
    for sub in getattr(command, "commands", {}).values():
        _plain_flags(sub)
    return command


def load_command(name: str) -> Any:
    """The click command ``name`` of the root, built by typer from its module (imported now).

    The sentiment commands pin torch's CPU code paths first (:func:`attndyn.sentiment.pin_kernels`: the
    same model on every processor), before their module imports torch."""
    if COMMANDS[name][0] == "sentiment":
        from ..sentiment._pinning import pin_kernels

        pin_kernels()
    module = importlib.import_module(f"._{COMMANDS[name][0]}", __name__)
    host = typer.Typer(**_SETTINGS)
    host.callback()(lambda: None)  # a callback makes typer build a group even for one command
    module.register(host)
    return _notice_compiling(_plain_flags(typer.main.get_command(host).commands[name]))  # type: ignore[attr-defined]


def _notice_compiling(command: Any) -> Any:
    """``command`` with each of its leaf commands' functions run inside :func:`._compiling.compile_notice` (a line on
    the terminal while the kernels compile); a group's own callback, run before a subcommand's help, is left as is."""
    subcommands = getattr(command, "commands", None)
    if subcommands is not None:
        for sub in subcommands.values():
            _notice_compiling(sub)
    elif command.callback is not None:
        command.callback = with_compile_notice(command.callback)
    return command


class _LazyGroup(TyperGroup):
    """The root group: each command is a placeholder (its name and first help line) until it is run or
    asked for its help; then its module is imported and typer builds it, the same command as ever."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        _plain_flags(self)
        self._listing = False
        self._placeholders = set(COMMANDS)
        for name, (_, short) in COMMANDS.items():
            self.commands[name] = TyperCommand(name=name, help=short)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name in self._placeholders and not self._listing:
            self.commands[cmd_name] = load_command(cmd_name)
            self._placeholders.discard(cmd_name)
        return self.commands.get(cmd_name)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing = True  # the command list shows the placeholders: nothing is imported
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


app = typer.Typer(
    name="attndyn",
    help="What self-attention does to tokens: hardmax and softmax attention dynamics.",
    no_args_is_help=True,
    cls=_LazyGroup,
    **_SETTINGS,
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


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    prefix = "warning" if issubclass(category, HypothesisWarning) else category.__name__
    text = message.worded(FLAGS) if isinstance(message, HypothesisWarning) else message
    print(f"{prefix}: {text}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``attndyn`` script; returns the exit status."""
    with warnings.catch_warnings(), _sigterm_interrupts():
        warnings.simplefilter("always", HypothesisWarning)  # shown as one line, never raised
        warnings.showwarning = _show_warning
        return _run(argv)


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM (a batch system or ``kill`` ending the job) stops a command the way Ctrl-C does."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _run(argv: list[str] | None) -> int:
    try:
        rv = app(args=argv, standalone_mode=False)
        if rv == 130:  # typer hands back Ctrl-C (a KeyboardInterrupt no command turned into its own line) as 130
            print("interrupted", file=sys.stderr)
    except InputError as exc:
        print(f"error: {exc.worded(FLAGS)}", file=sys.stderr)
        rv = 2
    except Interrupted as exc:  # a command's own line: what was kept, how to go on
        print(str(exc), file=sys.stderr)
        rv = 130
    except typer.Exit as exc:
        rv = exc.exit_code
    except (typer.Abort, KeyboardInterrupt) as exc:
        if isinstance(exc.__cause__, EOFError):  # click turns an EOFError (a file read past its end) into Abort
            print(
                f"error: an input file ended early ({exc.__cause__ or 'EOF'}); check the files given", file=sys.stderr
            )
            return _finish(2, argv)
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

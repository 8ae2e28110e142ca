"""One line on a terminal when a command starts compiling attndyn's kernels.

The compiled kernels (numba) are compiled for the processor on the first run of each kind after an installation
and kept on disk for later runs (README, "Speed, threads and GPUs"). On a small host a first run waits tens of
seconds for it: without a word, a terminal that shows nothing for that long looks hung. So while a command runs,
:func:`compile_notice` listens to numba's ``numba:compile`` event (it fires only when no compiled version is found
in memory or on disk) and writes one line to standard error when the first of attndyn's kernels starts compiling;
nothing when standard error is not a terminal (pipes, files, tests), and numba is not imported for that.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

__all__ = ["NOTICE", "compile_notice", "with_compile_notice"]

#: The line a command writes when its first kernel starts compiling.
NOTICE = (
    "compiling attndyn's kernels for this processor: once per kind of run after an installation, "
    "it can take a minute or more; they are kept on disk for later runs"
)


def _on_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


@contextmanager
def compile_notice(stream: TextIO | None = None) -> Iterator[None]:
    """While the block runs, write :data:`NOTICE` once to ``stream`` (standard error as it is when the line is
    written, so that a progress bar that redirects it keeps its place) when one of attndyn's kernels starts
    compiling; nothing at all unless the stream is a terminal."""
    if not _on_terminal(sys.stderr if stream is None else stream):
        yield
        return
    from numba.core import event

    class Notice(event.Listener):
        shown = False

        def on_start(self, ev: Any) -> None:
            dispatcher = (ev.data or {}).get("dispatcher")
            module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
            if not self.shown and module.split(".")[0] == "attndyn":
                self.shown = True
                print(NOTICE, file=sys.stderr if stream is None else stream, flush=True)

        def on_end(self, ev: Any) -> None:
            pass

    with event.install_listener("numba:compile", Notice()):
        yield


def with_compile_notice(callback: Callable[..., Any]) -> Callable[..., Any]:
    """``callback`` (a command's function) run inside :func:`compile_notice`."""

    def run(*args: Any, **kwargs: Any) -> Any:
        with compile_notice():
            return callback(*args, **kwargs)

    run.__wrapped__ = callback  # type: ignore[attr-defined]
    return run

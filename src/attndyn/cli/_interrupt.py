"""How a command says it was interrupted (Ctrl-C, or SIGTERM, which ``attndyn`` turns into Ctrl-C).

A command that keeps something worth naming -- the epochs of a training, the cells of a sweep -- turns
the KeyboardInterrupt into :class:`Interrupted` with its own line; ``attndyn`` prints the line on
standard error and exits with status 130. Any other command ends with the line ``interrupted``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["Interrupted", "on_interrupt"]


class Interrupted(Exception):
    """A command stopped by Ctrl-C or SIGTERM; the message is the one line to print (what was kept, what next)."""


@contextmanager
def on_interrupt(line: Callable[[], str]) -> Iterator[None]:
    """Inside the block, Ctrl-C (or SIGTERM) ends the command with ``line()``: called after the interrupt, so
    it can say what was kept."""
    try:
        yield
    except KeyboardInterrupt:
        raise Interrupted(line()) from None

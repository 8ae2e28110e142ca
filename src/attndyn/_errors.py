"""The package's two exception types, in a module that imports nothing heavy (the command line catches them
before it has imported torch), and :func:`param`, how an InputError's message names a parameter so that the
command line can name its flag instead.

Both keep ``attndyn._validation`` as their module name: that is where they are documented, pickled and shown
in tracebacks (``_validation`` imports them from here), the way NumPy sets ``__module__`` of its functions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["InputError", "HypothesisWarning", "param", "plain"]

_PARAM = re.compile("\x1e([^\x1e\x1f]*)\x1f([^\x1e]*)\x1e")


def param(key: str, words: str) -> str:
    """A parameter named in an :class:`InputError`'s message: shown as ``words`` (the library's own name, e.g.
    ``url=``), while a command line shows its flag for ``key`` instead (:meth:`InputError.worded`).

    >>> err = InputError(f"{param('url', 'url')} must be an http(s) address")
    >>> str(err), err.worded({"url": "--url"})
    ('url must be an http(s) address', '--url must be an http(s) address')
    """
    return f"\x1e{key}\x1f{words}\x1e"


def plain(text: str) -> str:
    """``text`` with each :func:`param` mark shown as the library's words (what ``str`` of an InputError gives).

    >>> plain(f"use {param('step', 'step')} <= 0.01")
    'use step <= 0.01'
    """
    return _PARAM.sub(lambda m: m[2], text)


class _Worded:
    """A message that may name parameters with :func:`param`: shown as the library names them, and
    :meth:`worded` by a command line's own words."""

    def __init__(self, *args: object) -> None:
        self.template = args[0] if args and isinstance(args[0], str) else None
        if self.template is not None:
            args = (plain(self.template), *args[1:])
        super().__init__(*args)

    def worded(self, words: Mapping[str, str]) -> str:
        """The message with each parameter :func:`param` marked named by ``words[key]`` where given (the command
        line passes its flags), else as the library names it."""
        if self.template is None:
            return str(self)
        return _PARAM.sub(lambda m: words.get(m[1], m[2]), self.template)


class InputError(_Worded, ValueError):
    """A user-supplied value is unusable; the message names it and says how to fix it.

    The message names the library's parameters; a command line words them as its flags with :meth:`worded`."""


class HypothesisWarning(_Worded, UserWarning):
    """The input is legal but outside the hypotheses of the theorem being illustrated (a command line words the
    parameters it names as its flags, as for :class:`InputError`)."""


InputError.__module__ = HypothesisWarning.__module__ = "attndyn._validation"

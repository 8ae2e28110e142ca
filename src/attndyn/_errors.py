"""The package's two exception types, in a module that imports nothing heavy (the command line catches them
before it has imported torch).

Both keep ``attndyn._validation`` as their module name: that is where they are documented, pickled and shown
in tracebacks (``_validation`` imports them from here), the way NumPy sets ``__module__`` of its functions.
"""

from __future__ import annotations

__all__ = ["InputError", "HypothesisWarning"]


class InputError(ValueError):
    """A user-supplied value is unusable; the message names it and says how to fix it."""


class HypothesisWarning(UserWarning):
    """The input is legal but outside the hypotheses of the theorem being illustrated."""


InputError.__module__ = HypothesisWarning.__module__ = "attndyn._validation"

"""How the command line names the parameters the library's errors name (:func:`attndyn._errors.param`).

The library words an :class:`~attndyn.InputError` for a Python caller (``url=``, ``overwrite=True``); the
command line prints :meth:`~attndyn.InputError.worded` with these words, its own flags, instead.
"""

from __future__ import annotations

__all__ = ["FLAGS"]

#: The parameter keys of the library's errors, and the flags (or phrases) the command line shows for them.
FLAGS = {
    "imdb.run": "--sentiment-run",
    "reviews": "--reviews ",
    "retrain": "retrain the run (attndyn sentiment train --run NEW ...)",
}

"""One line for an exception raised by user input (the explorer never prints a traceback for it)."""

from __future__ import annotations

__all__ = ["quiet_error"]


def quiet_error(exc: BaseException) -> str:
    """``error: ...`` in one line: the library's message for bad input, the type and message otherwise.

    >>> from attndyn import InputError
    >>> quiet_error(InputError("alpha=-1 must be positive"))
    'error: alpha=-1 must be positive'
    >>> quiet_error(ZeroDivisionError("division by zero"))
    'error: ZeroDivisionError: division by zero'
    """
    from .._validation import InputError

    text = " ".join(str(exc).split())
    return f"error: {text}" if isinstance(exc, InputError) else f"error: {type(exc).__name__}: {text}"

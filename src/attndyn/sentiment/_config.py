"""JSON round-trip shared by the sentiment configuration dataclasses, and the number checks they use."""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict
from typing import Any, Self

import numpy as np

from .._validation import InputError


class JsonConfig:
    """Mixin for frozen config dataclasses: ``to_dict`` and a ``from_dict`` that rejects unknown keys."""

    _kind = "config"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        fields = cls.__dataclass_fields__  # type: ignore[attr-defined]
        if not isinstance(data, dict):
            raise InputError(
                f"a {cls._kind} must be a JSON object with keys {sorted(fields)}, got {type(data).__name__}"
            )
        unknown = set(data) - set(fields)
        if unknown:
            raise InputError(f"unknown {cls._kind} keys {sorted(unknown)}; allowed: {sorted(fields)}")
        return cls(**data)


def check_number(
    value: Any,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    allow_none: bool = False,
) -> float | None:
    """A finite real number (not a bool, not a string) in the given interval, else an InputError
    naming ``name``, the value and the interval.

    >>> check_number(0.5, "word_dropout", low=0, high=1, high_open=True)
    0.5
    >>> check_number("0.5", "alpha_min", low=0)
    Traceback (most recent call last):
    ...
    attndyn._validation.InputError: alpha_min must be a number >= 0, got '0.5' (a str); pass a number such as 0.5, not a string
    """
    if value is None and allow_none:
        return None
    if low is not None and high is not None:
        want = f"a number in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    elif low == 0 and low_open:
        want = "a positive number"
    elif low is not None:
        want = f"a number {'>' if low_open else '>='} {low:g}"
    elif high is not None:
        want = f"a number {'<' if high_open else '<='} {high:g}"
    else:
        want = "a finite number"
    if allow_none:
        want += " or None"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        hint = f"; pass a number such as {value}, not a string" if isinstance(value, str) and _is_float(value) else ""
        raise InputError(f"{name} must be {want}, got {value!r} (a {type(value).__name__}){hint}")
    v = float(value)
    bad = (
        not math.isfinite(v)
        or (low is not None and (v <= low if low_open else v < low))
        or (high is not None and (v >= high if high_open else v > high))
    )
    if bad:
        raise InputError(f"{name} must be {want}, got {value!r}")
    return v


def check_integer(
    value: Any, name: str, *, low: int = 0, high: int | None = None, allow_none: bool = False
) -> int | None:
    """An integer (Python or NumPy, not a bool) >= ``low`` (and <= ``high`` when given), else an InputError
    naming ``name``."""
    if value is None and allow_none:
        return None
    bad = isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer))
    if bad or value < low or (high is not None and value > high):
        extra = " or None" if allow_none else ""
        want = f">= {low}" if high is None else f"from {low} to {high}"
        raise InputError(f"{name} must be an integer {want}{extra}, got {value!r}")
    return int(value)


def _is_float(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False

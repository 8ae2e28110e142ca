"""How much a Monte Carlo verdict rests on: the sample beside a quick run's verdict, and whether it can tell the
claim from its negation.

A quick run (``attndyn reproduce --quick``) checks its claims on a handful of random instances (4 per row of the
softmax paper's Table 1 instead of 100). Its verdicts say so: :class:`Sample` is written beside each one, with
"too small to tell" when the 99% interval of what was measured holds both values the claim allows and values
that would refute it. The functions below decide that for the three kinds of claim the report makes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..experiments._statistics import wilson_interval

__all__ = ["Sample", "CONFIDENCE", "EVERY_NEGATION", "every_instance_decided", "fraction_decided", "mean_decided"]

#: The level of every interval that decides whether a sample tells a claim from its negation.
CONFIDENCE = 0.99

#: "Every instance satisfies X" is told from its negation once the interval of the fraction of instances
#: satisfying X excludes this fraction, one instance in ten failing. (No finite sample excludes every fraction
#: below 1; one failure refutes the claim outright.)
EVERY_NEGATION = 0.9


@dataclass(frozen=True)
class Sample:
    """The ``n`` random instances a quick run's verdict rests on, the ``full`` run's count, and whether they tell
    the claim from its negation (``decided``)."""

    n: int
    full: int
    decided: bool

    def note(self) -> str:
        """What the report writes beside the verdict, e.g. "N = 4: too small to tell; the full run uses 100".

        >>> Sample(4, 100, decided=False).note()
        'N = 4: too small to tell; the full run uses 100'
        """
        small = "" if self.decided else ": too small to tell"
        return f"N = {self.n}{small}; the full run uses {self.full}"

    def record(self) -> dict[str, Any]:
        return {"n": self.n, "full": self.full, "decided": self.decided}


def every_instance_decided(k: int, n: int) -> bool:
    """Whether ``k`` of ``n`` instances satisfying a claim made of every instance decide it: a failure does (a
    counterexample); n passes do when the 99% Wilson interval of the fraction lies above :data:`EVERY_NEGATION`.

    >>> every_instance_decided(4, 4), every_instance_decided(100, 100), every_instance_decided(3, 4)
    (False, True, True)
    """
    if n == 0:
        return False
    if k < n:
        return True
    return wilson_interval(n, n, confidence_level=CONFIDENCE)[0] > EVERY_NEGATION


def fraction_decided(interval: tuple[float, float], allowed: tuple[float, float]) -> bool:
    """Whether the interval of a measured fraction decides a claim that the fraction lies in ``allowed``: it lies
    inside ``allowed`` (the claim holds) or wholly outside (it is refuted); else it holds values of both kinds.

    >>> fraction_decided((0.046, 0.204), (0.12, 0.16)), fraction_decided((0.125, 0.151), (0.12, 0.16))
    (False, True)
    """
    (lo, hi), (a, b) = interval, allowed
    return (a <= lo and hi <= b) or hi < a or lo > b


def mean_decided(values: Sequence[float]) -> bool:
    """Whether ``values`` decide the sign of their mean (a claim "mean <= 0"): the 99% Student t interval of the
    mean lies on one side of 0. Fewer than two values decide nothing; equal values decide.

    >>> mean_decided([-3.0, -2.5, -3.5, -2.0]), mean_decided([-1.0, 2.0, 0.5]), mean_decided([-1.0])
    (True, False, False)
    """
    n = len(values)
    if n < 2:
        return False
    mean = math.fsum(values) / n
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    if sd == 0.0:
        return mean != 0.0
    from scipy.stats import t  # deferred: scipy.stats takes a second to import

    half = float(t.ppf((1 + CONFIDENCE) / 2, n - 1)) * sd / math.sqrt(n)
    return mean - half > 0.0 or mean + half <= 0.0

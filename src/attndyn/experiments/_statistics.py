"""Interval estimates the studies report beside their measured fractions."""

from __future__ import annotations

import math
import numbers

from .._validation import InputError

__all__ = ["wilson_interval"]


def wilson_interval(k: int, n: int, *, confidence_level: float = 0.95) -> tuple[float, float]:
    r"""Wilson score interval of a binomial proportion :math:`\hat p = k/n` at ``confidence_level`` (95% by
    default, the level of every sweep summary):
    :math:`\big(\hat p + \tfrac{z^2}{2n} \pm z\sqrt{\hat p(1-\hat p)/n + z^2/(4n^2)}\big) / (1 + z^2/n)`,
    z the ``(1 + confidence_level) / 2`` quantile of N(0, 1), computed by
    ``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")``; ``(nan, nan)`` when n = 0.

    >>> [round(v, 4) for v in wilson_interval(14, 100)]
    [0.0853, 0.2214]
    >>> wilson_interval(0, 10, confidence_level=0.99)[0]
    0.0
    """
    for name, v in (("k", k), ("n", n)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 0:
            raise InputError(f"{name} = {v!r} must be a count (an integer >= 0)")
    if k > n:
        raise InputError(f"k = {k} successes out of n = {n} trials: k must be at most n")
    level = confidence_level
    if isinstance(level, bool) or not isinstance(level, numbers.Real) or not 0 < level < 1:
        raise InputError(f"confidence_level = {level!r} must be a number strictly between 0 and 1 (e.g. 0.95)")
    if n == 0:
        return math.nan, math.nan
    from scipy.stats import binomtest  # deferred: scipy.stats takes a second to import

    ci = binomtest(int(k), int(n)).proportion_ci(confidence_level=float(level), method="wilson")
    return float(ci.low), float(ci.high)

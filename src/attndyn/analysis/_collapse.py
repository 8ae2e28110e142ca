r"""How fast the tokens collapse to the origin when V = -I (softmax paper, Theorem C.5).

Theorem C.5 (Table 1, last row): with :math:`V = -I_d` and :math:`Q^\top K = I_d`, every token of
the original dynamics (1) tends to 0. The paper states the limit, not the rate; the rate follows
from the dynamics near the origin. There :math:`\langle Qx_i, Kx_j\rangle = \langle x_i, x_j\rangle`
is small, so :math:`P_{ij} = \tfrac1n\,(1 + \langle x_i, x_j - \bar x\rangle) + O(|x|^2)` and

.. math::

    \dot x_i = -\sum_j P_{ij} x_j = -\bar x - C x_i + O(|x|^3),
    \qquad C = \tfrac1n \textstyle\sum_j (x_j - \bar x)(x_j - \bar x)^\top .

The mean decays exponentially (:math:`\dot{\bar x} = -(I + C)\bar x`), but the deviations
:math:`y_i = x_i - \bar x` obey :math:`\dot y_i = -C y_i` with :math:`\dot C = -2C^2`, so
:math:`C(t) = C_0 (I + 2tC_0)^{-1}` and :math:`y_i(t) = (I + 2tC_0)^{-1/2} y_i(0)`: the radius
of the cloud decays *algebraically*, :math:`r(t) \sim t^{-1/2}`. A straight-line fit of
:math:`\log r` against :math:`\log t` over the late part of the run measures that exponent
(an exponential fit, :math:`\log r` against :math:`t`, leaves residuals tens of times larger).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._trajectory import Trajectory
from .._validation import InputError
from ._leaders import _one_sequence

__all__ = [
    "COLLAPSE_EXPONENT",
    "COLLAPSE_EXPONENT_ATOL",
    "COLLAPSE_FIT_FROM",
    "RadiusDecay",
    "radius_decay",
    "collapse_decay",
]

# Predicted exponent p of r(t) ~ t^p near the origin (derived in the module docstring).
COLLAPSE_EXPONENT = -0.5
# The fitted exponent matches the prediction when |p - COLLAPSE_EXPONENT| <= this. A radius that
# stalls at a nonzero value fits p ~ 0 and fails; so does an exponential decay (the slope of
# log r against log t then grows with t and the late window fits p << -1/2).
COLLAPSE_EXPONENT_ATOL = 0.1
# The fit uses the kept times t >= COLLAPSE_FIT_FROM * T: the early, nonlinear transient is left out.
COLLAPSE_FIT_FROM = 0.25
# Fewer kept times than this in the window: no exponent is fitted.
MIN_FIT_POINTS = 3


@dataclass(frozen=True)
class RadiusDecay:
    r"""The radius :math:`r(t) = \max_i \lVert x_i(t)\rVert_\infty` at the kept times and its power-law fit.

    ``exponent`` and ``log_prefactor`` are the least-squares line :math:`\log r = a + p \log t` over
    ``fit_window``; ``fit_rms`` is the root-mean-square residual of that line (in log units). They
    are None when the window holds fewer than three kept times or the radius reached 0.
    """

    times: tuple[float, ...]
    radius: tuple[float, ...]
    exponent: float | None
    log_prefactor: float | None
    fit_rms: float | None
    fit_window: tuple[float, float]
    untested: str | None = None  # why the rate does not apply to this run (no fit then), e.g. identical tokens

    @property
    def has_fit(self) -> bool:
        """An exponent was fitted (the window held at least three kept times with a nonzero radius)."""
        return self.exponent is not None

    @property
    def reached_origin(self) -> bool:
        """The last kept radius is exactly 0."""
        return self.radius[-1] == 0.0

    @property
    def matches(self) -> bool:
        """The fitted exponent is within ``COLLAPSE_EXPONENT_ATOL`` of -1/2 (or the tokens reached 0)."""
        if self.reached_origin:
            return True
        return self.exponent is not None and abs(self.exponent - COLLAPSE_EXPONENT) <= COLLAPSE_EXPONENT_ATOL

    def fitted(self, t: ArrayLike) -> np.ndarray:
        """The fitted radius :math:`e^a t^p` at times ``t`` (NaN when there is no fit)."""
        t = np.asarray(t, dtype=np.float64)
        if self.exponent is None or self.log_prefactor is None:
            return np.full_like(t, np.nan)
        return np.exp(self.log_prefactor) * t**self.exponent

    def radius_at(self, fractions: tuple[float, ...] = (0.0, 1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0)) -> dict[str, float]:
        """The radius at the kept times nearest to the given fractions of the run, ``{"t": r}``."""
        ts = np.asarray(self.times)
        out: dict[str, float] = {}
        for f in fractions:
            k = int(np.argmin(np.abs(ts - f * ts[-1])))
            out[f"{ts[k]:.4g}"] = self.radius[k]
        return out

    def record(self) -> dict[str, Any]:
        """JSON-ready summary (the kept radii are summarised by :meth:`radius_at`)."""
        return {
            "radius_at": self.radius_at(),
            "decay_exponent": self.exponent,
            "decay_exponent_predicted": COLLAPSE_EXPONENT,
            "decay_exponent_atol": COLLAPSE_EXPONENT_ATOL,
            "fit_window": list(self.fit_window),
            "fit_rms": self.fit_rms,
            "decay_matches": self.matches if self.has_fit or self.reached_origin else None,
            "rate_untested": self.untested,
        }


def radius_decay(times: ArrayLike, radius: ArrayLike, *, fit_from: float = COLLAPSE_FIT_FROM) -> RadiusDecay:
    r"""Fit :math:`\log r(t) = a + p \log t` over the kept times :math:`t \ge` ``fit_from`` :math:`\cdot T`.

    >>> t = [0.0, 1.0, 2.0, 4.0, 8.0, 16.0]
    >>> fit = radius_decay(t, [3.0] + [2.0 / s**0.5 for s in t[1:]])
    >>> round(fit.exponent, 6), fit.matches, fit.fit_window
    (-0.5, True, (4.0, 16.0))
    >>> radius_decay(t, [3.0, 2.0, 1.0, 1.0, 1.0, 1.0]).matches   # stalls: exponent 0
    False
    """
    ts, r = _decay_input(times, radius, fit_from)
    window = (ts >= fit_from * ts[-1]) & (ts > 0) & (r > 0)
    start = float(ts[window][0]) if window.any() else float(ts[-1])
    exponent = prefactor = rms = None
    if int(window.sum()) >= MIN_FIT_POINTS:
        lt, lr = np.log(ts[window]), np.log(r[window])
        p, a = np.polyfit(lt, lr, 1)
        exponent, prefactor = float(p), float(a)
        rms = float(np.sqrt(np.mean((lr - (a + p * lt)) ** 2)))
    return RadiusDecay(
        times=tuple(float(t) for t in ts),
        radius=tuple(float(v) for v in r),
        exponent=exponent,
        log_prefactor=prefactor,
        fit_rms=rms,
        fit_window=(start, float(ts[-1])),
    )


def _decay_input(times: ArrayLike, radius: ArrayLike, fit_from: Any) -> tuple[np.ndarray, np.ndarray]:
    """Times (finite, >= 0, nondecreasing) and radii (finite, >= 0) as two equal 1-d arrays, and ``fit_from`` in
    [0, 1], checked (InputError)."""
    try:
        ts, r = np.asarray(times, dtype=np.float64), np.asarray(radius, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError("times and radius must be sequences of numbers") from None
    if ts.ndim != 1 or ts.shape != r.shape or ts.size == 0:
        raise InputError(f"times and radius must be two equal, non-empty 1-d sequences, got {ts.shape} and {r.shape}")
    if not (np.isfinite(ts).all() and np.isfinite(r).all()) or (ts < 0).any() or (r < 0).any():
        raise InputError("times and radius must be finite numbers >= 0 (a radius is a norm)")
    if (np.diff(ts) < 0).any():
        raise InputError("times must be in increasing order (the kept times of one run)")
    if isinstance(fit_from, bool) or not isinstance(fit_from, (int, float)) or not 0 <= fit_from <= 1:
        raise InputError(f"fit_from must be a fraction of the run in [0, 1], got {fit_from!r}")
    return ts, r


def collapse_decay(
    traj: Trajectory, sequence: int | None = None, *, fit_from: float = COLLAPSE_FIT_FROM
) -> RadiusDecay:
    r"""The radius :math:`\max_i \lVert x_i(t)\rVert_\infty` of one sequence's real tokens at every kept
    time, and its power-law fit (:func:`radius_decay`).

    >>> import numpy as np, attndyn
    >>> x = np.random.default_rng(0).standard_normal((20, 2))
    >>> traj = attndyn.softmax(x, time=20.0, V=-np.eye(2), save=attndyn.SaveAt(every=10))
    >>> fit = collapse_decay(traj)
    >>> fit.matches, round(fit.exponent, 1)
    (True, -0.5)

    A causal run is refused: the predicted rate is derived for the full attention (the module docstring).
    """
    if getattr(traj.params, "causal", False):
        raise InputError(
            "collapse_decay() compares the radius with the t^(-1/2) rate derived for the full attention, and this "
            "run used a causal mask (token i attends to j <= i only); use radius_decay(times, radius) to fit it anyway"
        )
    b = _one_sequence(traj, sequence)
    idx = traj.real_tokens(b).numpy()
    states = traj.ys[:, b].detach().cpu().numpy()[:, idx]  # (T, m, d)
    fit = radius_decay(traj.ts.detach().cpu().numpy(), np.abs(states).max(axis=(1, 2)), fit_from=fit_from)
    if not (states[0] != states[0][:1]).any():  # one token, or all equal: C_0 = 0
        why = (
            "the tokens start identical (C_0 = 0): their mean decays exponentially, and the t^(-1/2) law needs a spread"
        )
        return dataclasses.replace(fit, exponent=None, log_prefactor=None, fit_rms=None, untested=why)
    return fit

r"""An adaptive solve over an embedded Runge–Kutta pair, read at increasing output times.

The step from :math:`(t_0, y_0)` of size :math:`h` (:func:`attndyn.solvers.embedded_step`) gives
:math:`y_1` and the error estimate :math:`e = h\sum_s (b_s - \hat b_s) k_s`; it is accepted when

.. math:: r = \Big\lVert \frac{e}{\mathrm{atol} + \mathrm{rtol}\max(|y_0|, |y_1|)} \Big\rVert_{\mathrm{rms}} \le 1,

and the next size is :math:`h\,\min(10, \max(0.9\, r^{-1/p}, 0.2))` (the 0.2 floor only after a
rejection; :math:`p` the pair's order) — Hairer, Nørsett & Wanner, *Solving ODEs I*, Sec. II.4, which
also gives the first step. The state at an output time inside an accepted step is the quartic through
:math:`y_0`, :math:`y(t_0 + h/2)`, :math:`y_1` with slopes :math:`f_0`, :math:`f_1` (dense output), so
output times never shorten the steps. (bosh3's and adaptive_heun's mid-point values are of low order,
so between steps their output is less accurate than at the steps' ends.) A pair of order above 5 (dopri8)
ends a step on each output time instead: the quartic's error, of order :math:`h^5`, is far above the pair's
over the long steps an order-8 pair takes (5e-5 relative at rtol 1e-7 on :math:`\dot y = y`), so there the
output is a step's end, at the pair's accuracy.

This is torchdiffeq's algorithm for its solvers of the same names, with the same arithmetic, so a solve
here equals ``torchdiffeq.odeint(f, y0, times, method=..., rtol=..., atol=...)`` at every output time
(``tests/core/test_adaptive.py``; dopri8's outputs are steps' ends, where torchdiffeq interpolates); unlike ``odeint`` it hands out each output as soon as it is reached,
counts its steps against a budget for the whole solve, and a failure says where it happened.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from .solvers import EmbeddedTableau, TableauTensors, embedded_step

__all__ = ["AdaptiveSolve", "AdaptiveFailure", "RAISE_BUDGET"]

#: The advice that ends the reason of a solve out of steps (a command line names its flag for it instead).
RAISE_BUDGET = "raise max_steps"

_SAFETY, _GROW, _SHRINK = 0.9, 10.0, 0.2  # step-size controller: safety factor, largest growth, largest cut


class AdaptiveFailure(Exception):
    """A step that could not be taken, from ``t`` with size ``dt``."""

    def __init__(self, t: float, dt: float, reason: str):
        super().__init__(reason)
        self.t, self.dt, self.reason = t, dt, reason


def _rms(x: Tensor, mask: Tensor | None = None) -> Tensor:
    """The error norm: the root mean square over each sequence (the first axis of a batch), the largest of them,
    so that one sequence's accuracy does not depend on its batch mates (an RMS over the whole batch gave a moving
    sequence among calm ones about sqrt(B) times the tolerance). With ``mask`` (B, n), True for real tokens of a
    (B, n, d) state, the mean is over the real tokens only: padding, whose error is 0, diluted it (a sequence
    padded to 100 times its length came out 10 times less accurate)."""
    if x.ndim < 2:
        return x.abs().pow(2).mean().sqrt()
    if mask is None or x.ndim != 3:
        return x.abs().pow(2).mean(dim=tuple(range(1, x.ndim))).sqrt().amax()
    m = mask.to(x.abs().dtype)
    total = (x.abs().pow(2) * m[..., None]).sum(dim=(1, 2))
    return (total / (m.sum(dim=1).clamp(min=1.0) * x.shape[-1])).sqrt().amax()


class AdaptiveSolve:
    """The solve of :math:`\\dot y = f(t, y)`, :math:`y(t_0) = y_0`; :meth:`at` gives :math:`y(t)` for increasing t.

    ``f(t, y)`` takes the time as a float. At most ``max_steps`` steps (accepted or rejected) are taken
    over the whole solve; a step past the budget, a step size that underflows or a non-finite error
    estimate raises :class:`AdaptiveFailure`. Starting costs two evaluations of f (the first step's choice).
    """

    def __init__(
        self,
        f: Callable[[float, Tensor], Tensor],
        y0: Tensor,
        t0: float,
        tableau: EmbeddedTableau,
        *,
        rtol: float,
        atol: float,
        max_steps: int,
        mask: Tensor | None = None,
    ) -> None:
        self.mask = mask  # (B, n) real tokens of a (B, n, d) state: the error norm reads them only (_rms)
        self.to_outputs = tableau.order > 5  # steps end on output times (the quartic is below the pair's order)
        self.time_dtype = torch.promote_types(torch.float64, y0.abs().dtype)
        self.real = y0.abs().dtype  # the field sees times in y's real dtype
        self.f, self.order, self.max_steps, self.steps = f, tableau.order, max_steps, 0
        self.coef = TableauTensors.of(tableau, y0)
        self.rtol = torch.as_tensor(rtol, dtype=self.time_dtype, device=y0.device)
        self.atol = torch.as_tensor(atol, dtype=self.time_dtype, device=y0.device)
        t = torch.as_tensor(t0, dtype=self.time_dtype, device=y0.device)
        f0 = self._f(t, y0)
        self.y, self.f0, self.t0, self.t1 = y0, f0, t, t  # the last accepted step [t0, t1] ends at (t1, y, f0)
        self.dt = self._first_step(t, y0, f0)
        self.dense = [y0] * 5

    def _f(self, t: Tensor, y: Tensor) -> Tensor:
        return self.f(float(t.to(self.real)), y)

    @torch.no_grad()
    def _first_step(self, t0: Tensor, y0: Tensor, f0: Tensor) -> Tensor:
        """Hairer, Nørsett & Wanner, II.4: a step whose Euler error is about 0.01 of the tolerance."""
        scale = self.atol + torch.abs(y0) * self.rtol
        d0, d1 = _rms(y0 / scale, self.mask).abs(), _rms(f0 / scale, self.mask).abs()
        h0 = torch.tensor(1e-6, dtype=y0.dtype, device=y0.device) if d0 < 1e-5 or d1 < 1e-5 else 0.01 * d0 / d1
        h0 = h0.abs()
        f1 = self._f(t0 + h0, y0 + h0 * f0)
        d2 = torch.abs(_rms((f1 - f0) / scale, self.mask) / h0)
        if d1 <= 1e-15 and d2 <= 1e-15:
            h1 = torch.max(torch.tensor(1e-6, dtype=y0.dtype, device=y0.device), h0 * 1e-3)
        else:
            h1 = (0.01 / max(d1, d2)) ** (1.0 / float(self.order))
        return torch.min(100 * h0, h1.abs()).to(self.time_dtype)

    def at(self, t: Tensor | float) -> Tensor:
        """y(t), stepping on until a step ends at or after t (t no earlier than the previous call's)."""
        t = torch.as_tensor(t, dtype=self.time_dtype, device=self.y.device)
        while t > self.t1:
            self._step(t if self.to_outputs else None)
        if self.to_outputs and bool(t == self.t1):
            return self.y
        x = ((t - self.t0) / (self.t1 - self.t0)).to(self.y.dtype)  # where t falls in the step, in [0, 1]
        total = self.dense[0] + x * self.dense[1]
        power = x
        for coefficient in self.dense[2:]:
            power = power * x
            total = total + power * coefficient
        return total

    def _step(self, until: Tensor | None = None) -> None:
        """One attempted step from (t1, y): accepted (the solve moves on) or rejected; the next size either way.
        ``until``: an output time the step must not pass (it then ends there)."""
        t0, y0, f0, dt = self.t1, self.y, self.f0, self.dt
        t1 = t0 + dt
        if until is not None and bool(t1 > until):  # the step ends on the output time
            dt, t1 = until - t0, until
        if self.steps >= self.max_steps:
            raise AdaptiveFailure(
                float(t0), float(dt), f"step budget exhausted ({self.max_steps} steps); {RAISE_BUDGET}"
            )
        if not torch.isfinite(y0).all():
            raise AdaptiveFailure(float(t0), float(dt), "non-finite values in the state")
        if not bool(t1 > t0):
            raise AdaptiveFailure(float(t0), float(dt), f"step size underflow (dt={float(dt):.3g})")
        self.steps += 1
        real = self.real
        y1, k = embedded_step(self._f, t0.to(real), y0, f0, dt.to(real), t1.to(real), self.coef)
        error = torch.sum(k * (dt.to(real) * self.coef.error), dim=-1)
        ratio = _rms(error / (self.atol + self.rtol * torch.max(y0.abs(), y1.abs())), self.mask).abs()
        if not bool(torch.isfinite(ratio)):
            raise AdaptiveFailure(float(t0), float(dt), "the error estimate is not finite (the state blew up)")
        if ratio <= 1:
            self.dense = self._dense(y0, y1, k, dt)
            self.y, self.f0, self.t1 = y1, k[..., -1], t1
        self.t0 = t0
        self.dt = self._next_step(dt, ratio)

    @torch.no_grad()
    def _next_step(self, dt: Tensor, ratio: Tensor) -> Tensor:
        """h min(10, max(0.9 r^(-1/p), 0.2)); never a cut after an accepted step, 10 h when r = 0."""
        if ratio == 0:
            return dt * _GROW

        def const(value: float) -> Tensor:
            return torch.tensor(value, dtype=dt.dtype, device=dt.device)

        floor = const(1.0 if ratio < 1 else _SHRINK)
        exponent = const(self.order).reciprocal()
        factor = torch.min(const(_GROW), torch.max(const(_SAFETY) / ratio.type_as(dt) ** exponent, floor))
        return (dt * factor).clamp_min(0)

    def _dense(self, y0: Tensor, y1: Tensor, k: Tensor, dt: Tensor) -> list[Tensor]:
        """Coefficients [e, d, c, b, a] of the quartic e + d x + c x^2 + b x^3 + a x^4 on the step, x in [0, 1]."""
        h = dt.type_as(y0)
        y_mid = y0 + torch.sum(k * (h * self.coef.mid), dim=-1)
        f0, f1 = k[..., 0], k[..., -1]
        a = 2 * h * (f1 - f0) - 8 * (y1 + y0) + 16 * y_mid
        b = h * (5 * f0 - 3 * f1) + 18 * y0 + 14 * y1 - 32 * y_mid
        c = h * (f1 - 4 * f0) - 11 * y0 - 5 * y1 + 16 * y_mid
        return [y0, h * f0, c, b, a]

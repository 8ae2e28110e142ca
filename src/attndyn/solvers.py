"""Integrators: explicit Runge–Kutta schemes as coefficient tables plus one generic step.

A scheme is data (a Butcher tableau); adding one is adding a table. The fixed-step schemes step on
the grid with :func:`rk_step`; the adaptive ones are embedded pairs (:class:`EmbeddedTableau`: a second
set of weights estimates each step's error) run by :mod:`attndyn._adaptive` with :func:`embedded_step`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from ._errors import param

__all__ = [
    "ButcherTableau",
    "EmbeddedTableau",
    "TABLEAUS",
    "ADAPTIVE",
    "STABILITY_INTERVAL",
    "rk_step",
    "embedded_step",
    "unstable_note",
]


@dataclass(frozen=True)
class ButcherTableau:
    """Explicit RK scheme: stages at ``t + c[s] dt`` from ``y + dt * sum_r a[s][r] k_r``; result weights ``b``."""

    c: tuple[float, ...]
    a: tuple[tuple[float, ...], ...]
    b: tuple[float, ...]
    order: int


@dataclass(frozen=True)
class EmbeddedTableau(ButcherTableau):
    r"""An embedded pair for adaptive stepping (Hairer, Nørsett & Wanner, *Solving ODEs I*, II.4).

    The stages are those of :class:`ButcherTableau`; stage 0 of a step is the previous step's last stage,
    which is :math:`f(t_0, y_0)` when ``b`` equals the last row of ``a`` (first same as last: dopri5,
    dopri8, bosh3) and, for adaptive_heun, the slope at the Euler predictor (as in torchdiffeq).
    ``error`` holds :math:`b_s - \hat b_s`, so :math:`h \sum_s \mathrm{error}_s k_s` estimates the step's
    local error; ``mid`` the weights of :math:`y(t_0 + h/2)` for the dense output; ``order`` the order of
    the solution carried on (the step-size controller's exponent is ``1 / order``).
    """

    error: tuple[float, ...] = ()
    mid: tuple[float, ...] = ()


TABLEAUS: dict[str, ButcherTableau] = {
    "euler": ButcherTableau(c=(0.0,), a=((),), b=(1.0,), order=1),
    "midpoint": ButcherTableau(c=(0.0, 0.5), a=((), (0.5,)), b=(0.0, 1.0), order=2),
    "heun": ButcherTableau(c=(0.0, 1.0), a=((), (1.0,)), b=(0.5, 0.5), order=2),
    "rk4": ButcherTableau(
        c=(0.0, 0.5, 0.5, 1.0),
        a=((), (0.5,), (0.0, 0.5), (0.0, 0.0, 1.0)),
        b=(1 / 6, 1 / 3, 1 / 3, 1 / 6),
        order=4,
    ),
}

#: The stability interval of each fixed-step scheme on the negative real axis: the largest :math:`h\lambda` for
#: which a step damps :math:`\dot y = -\lambda y`, :math:`|R(-h\lambda)| \le 1` with R the scheme's stability
#: polynomial (Hairer & Wanner, *Solving Ordinary Differential Equations II*, Section IV.2;
#: tests/sphere/test_stability.py computes R from the tableaus above).
STABILITY_INTERVAL: dict[str, float] = {"euler": 2.0, "midpoint": 2.0, "heun": 2.0, "rk4": 2.785}


def unstable_note(
    method: str, step: float, rate: float, formula: str, *, where: str = "", remedy: str | None = None
) -> str | None:
    """Why a fixed step cannot be trusted on a field of estimated rate ``rate`` (``formula`` says how it was
    estimated), or None: the step times the rate exceeds ``method``'s :data:`STABILITY_INTERVAL`. Adaptive schemes
    and layers are not judged (None). The sentence names the stable step and ``remedy`` (default: an adaptive
    method), with the parameters marked for the command line (:func:`attndyn._errors.param`)."""
    bound = STABILITY_INTERVAL.get(method)
    if bound is None or not step * rate > bound:
        return None
    other = f"an adaptive {param('method', 'method')} (dopri5)" if remedy is None else remedy
    return (
        f"the step {step:g} is beyond {method}'s stability interval for this field{where}: step x rate = "
        f"{step * rate:.3g} > {bound} (rate {rate:.3g} = {formula}), so the run can be integration error, in any "
        f"dtype; use {param('step', 'step')} <= {bound / rate:.2g} or {other}"
    )


# The coefficients below are those torchdiffeq's solvers of the same names use (the same expressions,
# so the same floats); dopri8's mid-point weights are its interpolation polynomials evaluated at 1/2.

_DOPRI5_B = (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0)
_DOPRI8_B = (
    *(14005451 / 335480064, 0.0, 0.0, 0.0, 0.0, -59238493 / 1068277825, 181606767 / 758867731),
    *(561292985 / 797845732, -1041891430 / 1371343529, 760417239 / 1151165299, 118820643 / 751138087),
    *(-528747749 / 2220607170, 1 / 4, 0.0),
)

ADAPTIVE: dict[str, EmbeddedTableau] = {
    # Dormand–Prince 5(4), Shampine's dense output.
    "dopri5": EmbeddedTableau(
        c=(0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0),
        a=(
            (),
            (1 / 5,),
            (3 / 40, 9 / 40),
            (44 / 45, -56 / 15, 32 / 9),
            (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
            (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
            _DOPRI5_B[:6],
        ),
        b=_DOPRI5_B,
        error=(
            35 / 384 - 1951 / 21600,
            0.0,
            500 / 1113 - 22642 / 50085,
            125 / 192 - 451 / 720,
            -2187 / 6784 - -12231 / 42400,
            11 / 84 - 649 / 6300,
            -1.0 / 60.0,
        ),
        mid=(
            *(6025192743 / 30085553152 / 2, 0.0, 51252292925 / 65400821598 / 2, -2691868925 / 45128329728 / 2),
            *(187940372067 / 1594534317056 / 2, -1776094331 / 19743644256 / 2, 11237099 / 235043384 / 2),
        ),
        order=5,
    ),
    # Dormand–Prince 8(7) (Prince & Dormand 1981), as in torchdiffeq.
    "dopri8": EmbeddedTableau(
        c=(
            *(0.0, 1 / 18, 1 / 12, 1 / 8, 5 / 16, 3 / 8, 59 / 400, 93 / 200, 5490023248 / 9719169821, 13 / 20),
            *(1201146811 / 1299019798, 1.0, 1.0, 1.0),
        ),
        a=(
            (),
            (1 / 18,),
            (1 / 48, 1 / 16),
            (1 / 32, 0.0, 3 / 32),
            (5 / 16, 0.0, -75 / 64, 75 / 64),
            (3 / 80, 0.0, 0.0, 3 / 16, 3 / 20),
            (
                *(29443841 / 614563906, 0.0, 0.0, 77736538 / 692538347, -28693883 / 1125000000),
                23124283 / 1800000000,
            ),
            (
                *(16016141 / 946692911, 0.0, 0.0, 61564180 / 158732637, 22789713 / 633445777),
                *(545815736 / 2771057229, -180193667 / 1043307555),
            ),
            (
                *(39632708 / 573591083, 0.0, 0.0, -433636366 / 683701615, -421739975 / 2616292301),
                *(100302831 / 723423059, 790204164 / 839813087, 800635310 / 3783071287),
            ),
            (
                *(246121993 / 1340847787, 0.0, 0.0, -37695042795 / 15268766246, -309121744 / 1061227803),
                *(-12992083 / 490766935, 6005943493 / 2108947869, 393006217 / 1396673457, 123872331 / 1001029789),
            ),
            (
                *(-1028468189 / 846180014, 0.0, 0.0, 8478235783 / 508512852, 1311729495 / 1432422823),
                *(-10304129995 / 1701304382, -48777925059 / 3047939560, 15336726248 / 1032824649),
                *(-45442868181 / 3398467696, 3065993473 / 597172653),
            ),
            (
                *(185892177 / 718116043, 0.0, 0.0, -3185094517 / 667107341, -477755414 / 1098053517),
                *(-703635378 / 230739211, 5731566787 / 1027545527, 5232866602 / 850066563),
                *(-4093664535 / 808688257, 3962137247 / 1805957418, 65686358 / 487910083),
            ),
            (
                *(403863854 / 491063109, 0.0, 0.0, -5068492393 / 434740067, -411421997 / 543043805),
                *(652783627 / 914296604, 11173962825 / 925320556, -13158990841 / 6184727034),
                *(3936647629 / 1978049680, -160528059 / 685178525, 248638103 / 1413531060, 0.0),
            ),
            _DOPRI8_B[:13],
        ),
        b=_DOPRI8_B,
        error=(
            *(14005451 / 335480064 - 13451932 / 455176623, 0.0, 0.0, 0.0, 0.0),
            -59238493 / 1068277825 - -808719846 / 976000145,
            181606767 / 758867731 - 1757004468 / 5645159321,
            561292985 / 797845732 - 656045339 / 265891186,
            -1041891430 / 1371343529 - -3867574721 / 1518517206,
            760417239 / 1151165299 - 465885868 / 322736535,
            118820643 / 751138087 - 53011238 / 667516719,
            -528747749 / 2220607170 - 2 / 45,
            *(1 / 4, 0.0),
        ),
        mid=(
            *(0.04103130360739393, 0.0, 0.0, 0.0, 0.0, 0.05100562801991382, 0.2388930677412202),
            *(0.3096870143996103, -0.2172325471755352, 0.07833405679331928, -0.0018614369715579948),
            *(0.007072844202678841, 0.00690847373200576, -0.013838404349047373),
        ),
        order=8,
    ),
    # Bogacki–Shampine 3(2).
    "bosh3": EmbeddedTableau(
        c=(0.0, 1 / 2, 3 / 4, 1.0),
        a=((), (1 / 2,), (0.0, 3 / 4), (2 / 9, 1 / 3, 4 / 9)),
        b=(2 / 9, 1 / 3, 4 / 9, 0.0),
        error=(2 / 9 - 7 / 24, 1 / 3 - 1 / 4, 4 / 9 - 1 / 3, -1 / 8),
        mid=(0.0, 0.5, 0.0, 0.0),
        order=3,
    ),
    # Heun's method with Euler's as the embedded estimate, 2(1).
    "adaptive_heun": EmbeddedTableau(
        c=(0.0, 1.0),
        a=((), (1.0,)),
        b=(0.5, 0.5),
        error=(0.5, -0.5),
        mid=(0.5, 0.0),
        order=2,
    ),
}


def rk_step(f: Callable[[float, Tensor], Tensor], t: float, y: Tensor, dt: float, tableau: ButcherTableau) -> Tensor:
    """One step of an explicit Runge–Kutta scheme: ``y(t + dt)`` from ``y(t)``."""
    ks: list[Tensor] = []
    for c, row in zip(tableau.c, tableau.a):
        yi = y
        for a, k in zip(row, ks):
            if a != 0.0:
                yi = torch.add(yi, k, alpha=dt * a)
        ks.append(f(t + c * dt, yi))
    out = y
    for b, k in zip(tableau.b, ks):
        if b != 0.0:
            out = torch.add(out, k, alpha=dt * b)
    return out


def embedded_step(
    f: Callable[[Tensor, Tensor], Tensor],
    t0: Tensor,
    y0: Tensor,
    f0: Tensor,
    dt: Tensor,
    t1: Tensor,
    coef: TableauTensors,
) -> tuple[Tensor, Tensor]:
    r"""One step of an embedded pair: ``(y1, k)`` with ``k`` the stages stacked on a last axis, ``k[..., 0] = f0``.

    Stage s is :math:`k_s = f(t_0 + c_s h, y_0 + h\sum_{r<s} a_{sr} k_r)` and
    :math:`y_1 = y_0 + h\sum_s b_s k_s`; a stage at :math:`c_s = 1` is evaluated just before
    :math:`t_1` (the float below it). ``coef`` holds the table's rows as tensors of y's dtype; the times
    are 0-dim tensors of y's real dtype.
    """
    ks = [f0]
    yi = y0
    for c, row in zip(coef.c[1:], coef.a[1:]):
        ti = torch.nextafter(t1, t1 - 1) if c == 1.0 else t0 + c * dt
        yi = y0 + torch.sum(torch.stack(ks, dim=-1) * (row * dt), dim=-1)
        ks.append(f(ti, yi))
    k = torch.stack(ks, dim=-1)  # (..., stages)
    if not coef.first_same_as_last:
        yi = y0 + torch.sum(k * (dt * coef.b), dim=-1)
    return yi, k


@dataclass(frozen=True)
class TableauTensors:
    """An :class:`EmbeddedTableau`'s weights as tensors of one dtype and device (times ``c`` stay floats)."""

    c: tuple[float, ...]
    a: tuple[Tensor, ...]
    b: Tensor
    error: Tensor
    mid: Tensor
    first_same_as_last: bool

    @classmethod
    def of(cls, tableau: EmbeddedTableau, like: Tensor) -> TableauTensors:
        def as_tensor(values: tuple[float, ...]) -> Tensor:
            return torch.tensor(values, dtype=torch.float64, device=like.device).to(like.dtype)

        return cls(
            c=tableau.c,
            a=tuple(as_tensor(row) for row in tableau.a),
            b=as_tensor(tableau.b),
            error=as_tensor(tableau.error),
            mid=as_tensor(tableau.mid),
            first_same_as_last=tableau.b[-1] == 0.0 and tableau.b[:-1] == tableau.a[-1],
        )

r"""Tokens on the sphere: one entry point, :func:`evolve`.

The continuous models SA and USA (arXiv 2312.10794, Section 2) with any fixed-step or adaptive scheme of
:mod:`attndyn.solvers`, or the discrete layers of :mod:`attndyn.sphere._layers`, run by the loop the engines
share (:class:`attndyn._loop.Run`: :class:`~attndyn._options.SaveAt`, :class:`~attndyn._options.StopOnConvergence`,
the step budget, progress, :class:`~attndyn._trajectory.RunStats`).

How the tokens stay on the sphere: the field is tangent and extended off the sphere as a function of
:math:`x/\lVert x\rVert` (:mod:`attndyn.sphere._field`), so a scheme's step leaves the sphere only by its local
error, and every grid state is retracted, :math:`x \leftarrow x/\lVert x\rVert` (projection plus retraction).
A fixed-step scheme retracts after each step (its order is kept: the retraction moves a point by at most its
distance to the sphere); an adaptive solve runs unretracted over [0, T] and each grid state it hands out is
retracted. Either way the recorded tokens have norm 1 to rounding (tested to 1e-12 in float64).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from .._budget import check_memory, kept_count
from .._errors import param
from .._loop import Counted, Run, StepFailure, adaptive_steps, check_options, time_grid
from .._options import SaveAt, StopOnConvergence
from .._validation import (
    InputError,
    as_mask,
    as_matrix,
    as_tokens,
    check_finite_number,
    check_int,
    check_nonnegative,
    check_positive,
    warn_hypothesis,
)
from ..solvers import ADAPTIVE, TABLEAUS, rk_step
from ._field import ATTENTIONS, Heads, SphereAttention, check_usa_range, pow2_scale, tangent, unit
from ._layers import NORMS, resolve_norm
from ._stability import unstable_step
from ._trajectory import SphereParams, SphereTrajectory

__all__ = ["evolve", "METHODS", "NORM_TOLERANCE"]

METHODS = ("discrete", *TABLEAUS, *ADAPTIVE)
#: Tokens whose norm is within this of 1 are taken as on the sphere (and retracted to it exactly).
NORM_TOLERANCE = 1e-6


def evolve(
    tokens: Any,
    *,
    time: float,
    beta: Any = 1.0,
    attention: str = "sa",
    method: str = "rk4",
    step: float = 0.1,
    norm: str | None = None,
    Q: Any = None,
    K: Any = None,
    V: Any = None,
    causal: bool = False,
    mask: Any = None,
    noise: float = 0.0,
    seed: int | None = None,
    normalize: bool = False,
    save: SaveAt = SaveAt(),
    stop: StopOnConvergence | None = None,
    rtol: float = 1e-7,
    atol: float = 1e-9,
    max_steps: int = 100_000,
    max_memory: float | None = None,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
    progress: bool = False,
) -> SphereTrajectory:
    r"""Evolve unit tokens under self-attention on the sphere up to time ``time``.

    .. math:: \dot x_i = \mathbf P^\perp_{x_i}\Big(\sum_j w_{ij} V x_j\Big),\quad
              w_{ij} = \frac{e^{\beta\langle Qx_i, Kx_j\rangle}}{\sum_l e^{\beta\langle Qx_i, Kx_l\rangle}}
              \ (\text{SA}) \ \text{ or } \ \frac{e^{\beta\langle Qx_i, Kx_j\rangle}}{n}\ (\text{USA})

    (arXiv 2312.10794, Section 2; see :mod:`attndyn.sphere._field`).

    Args:
        tokens: one sequence ``(n, d)`` or a batch ``(B, n, d)`` of unit vectors. A token of norm 0 is refused;
            one whose norm differs from 1 by more than :data:`NORM_TOLERANCE` is refused unless ``normalize``
            (then every token is divided by its norm).
        time: final time T > 0 (``method="discrete"``: T/step layers, a whole number of them).
        beta: one inverse temperature, or one per sequence (a ``(B,)`` sequence: a beta grid as one batch).
        attention: ``"sa"`` or ``"usa"``.
        method: ``"discrete"`` (layers, normalised by ``norm``), a fixed-step scheme (``"euler"``, ``"midpoint"``,
            ``"heun"``, ``"rk4"``) or an adaptive pair (``"dopri5"``, ``"dopri8"``, ``"bosh3"``, ``"adaptive_heun"``).
        step: the grid spacing (fixed schemes and layers step on it; adaptive ones report on it).
        norm: ``"post"`` (default), ``"pre"``, ``"peri"`` or ``"ngpt"``, for ``method="discrete"`` only.
        Q, K: ``(d_q, d)``; V: ``(d, d)`` (identities if None); or ``(H, d_q, d)`` / ``(H, d, d)`` stacks of
            heads, summed (:class:`~attndyn.sphere._field.Heads`).
        causal: token i attends to tokens :math:`j \le i` only.
        mask: ``(n,)`` / ``(B, n)`` booleans, True for real tokens (padding is never attended; with ``causal`` a
            token attends to the real tokens j <= i, :func:`attndyn.attention.allowed`).
        noise: :math:`\sigma \ge 0`: after each step, :math:`x \leftarrow N(x + \sigma\sqrt{\Delta t}\,
            \mathbf P^\perp_x \xi)`, :math:`\xi` standard normal (a projected Euler–Maruyama step of the SDE on
            the sphere); fixed-step schemes and post-LN/nGPT layers; ``seed`` seeds it.
        save, stop, rtol, atol, max_steps, max_memory, dtype, device, progress: as for :func:`attndyn.softmax`.

    Returns:
        A :class:`~attndyn.sphere.SphereTrajectory`.

    >>> import math, attndyn.sphere as sp
    >>> traj = sp.evolve([[1.0, 0.0], [0.0, 1.0]], time=1.0, beta=0.0, step=0.01)
    >>> x = traj.final_tokens
    >>> round(float(x[0] @ x[1]), 8) == round(math.tanh(1.0), 8)
    True
    """
    y, batched = as_tokens(tokens, dtype=dtype, device=device)
    B, n, d = y.shape
    y = _on_sphere(y, bool(normalize))
    time, step = check_positive(time, param("time", "time")), check_positive(step, param("step", "step"))
    settings = _check_settings(attention, method, norm, noise, seed, causal, mask)
    method, norm, noise = settings["method"], settings["norm"], settings["noise"]
    max_steps = check_int(max_steps, param("max_steps", "max_steps"), minimum=1)
    rtol, atol = check_positive(rtol, "rtol"), check_positive(atol, "atol")
    check_options(save, stop)
    betas = _betas(beta, B, y)
    Qm, Km, Vm = (
        _matrix(m, name, d, y, square) for m, name, square in ((Q, "Q", False), (K, "K", False), (V, "V", True))
    )
    dyn = _attention(Qm, Km, Vm, betas, attention, as_mask(mask, (B, n), y.device), bool(causal), n)
    Qm, Km, Vm = (m[0] if m.shape[0] == 1 else m for m in (Qm, Km, Vm))  # one head: (d', d), as given
    N, dt = time_grid(time, step, method, max_steps)
    check_memory(
        kept_count(N, save.every) * B * n * d * y.element_size(),
        max_memory,
        y.device,
        f"{kept_count(N, save.every)} kept states of {B} x {n} tokens in dimension {d}",
        param("save.states", "keep fewer states with save=SaveAt(every=None) or SaveAt(every=k)"),
    )
    params = SphereParams(
        Q=Qm, K=Km, V=Vm, beta=betas, attention=attention, method=method, norm=norm, step=dt, time=time,
        causal=bool(causal), noise=noise, seed=settings["seed"],
    )  # fmt: skip
    _warn_unstable(params)
    run = Run(save, stop, N, B)
    record = _SphereRecord(y, dt, _stepper(dyn, y, params, N, rtol, atol, max_steps))
    run.loop(record, description=f"sphere {attention} {method}", progress=progress)
    return record.result(run, batched, dyn.mask, params)


def _warn_unstable(params: SphereParams) -> None:
    """A :class:`HypothesisWarning` for a fixed step beyond its scheme's interval for the field; the run's verdicts
    say undecided for the same reason (:mod:`attndyn.sphere._reports`)."""
    note = unstable_step(params)
    if note is not None:
        warn_hypothesis(note, stacklevel=4)


# ---- input checks -------------------------------------------------------------------------------


def _on_sphere(y: Tensor, normalize: bool) -> Tensor:
    """The tokens retracted onto the sphere; norm 0 refused, norm far from 1 refused unless ``normalize``.

    Each token is first divided by the power of two nearest its largest entry (exact: the same bits as dividing
    by the norm directly), so that its norm neither overflows nor underflows: ``normalize`` works for every
    finite nonzero token, of any size."""
    big = y.abs().amax(dim=-1)  # (B, n)
    if bool((big == 0).any()):
        b, i = (int(v) for v in torch.nonzero(big == 0)[0])
        raise InputError(f"token {i} of sequence {b} has norm 0, so it has no point on the sphere; give nonzero tokens")
    scale = pow2_scale(y)  # (B, n, 1): 2^k > largest entry
    y = y / scale
    norms = torch.linalg.vector_norm(y, dim=-1) * scale[..., 0]  # (B, n): inf where the norm itself overflows
    off = (norms - 1).abs()
    if not normalize and bool((off > NORM_TOLERANCE).any()):
        b, i = (int(v) for v in torch.nonzero(off > NORM_TOLERANCE)[0])
        raise InputError(
            f"token {i} of sequence {b} has norm {float(norms[b, i]):.6g}, not 1: tokens must lie on the unit "
            f"sphere; pass {param('normalize', 'normalize=True')} to divide each token by its norm"
        )
    return unit(y)


def _check_settings(
    attention: Any, method: Any, norm: Any, noise: Any, seed: Any, causal: Any, mask: Any
) -> dict[str, Any]:
    if attention not in ATTENTIONS:
        raise InputError(f"unknown attention {attention!r}; choose 'sa' (softmax) or 'usa' (unnormalized)")
    if method not in METHODS:
        raise InputError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    norm = resolve_norm(method, norm)
    noise = check_nonnegative(noise, param("noise", "noise"))
    if noise > 0 and (method in ADAPTIVE or norm in ("pre", "peri")):
        raise InputError(
            "noise is defined for fixed-step schemes and post-LN/nGPT layers; "
            "use " + param("method.euler", "method='euler'") + f" (or another fixed step) instead of {method!r}"
            f"{f' with norm {norm!r}' if norm else ''}"
        )
    if seed is not None:
        seed = check_int(seed, param("seed.flag", "seed"))
    if noise > 0 and seed is None:
        raise InputError(
            f"noise > 0 needs a seed (randomness is an argument); pass {param('seed', 'seed=0')} or another integer"
        )
    return {"method": method, "norm": norm, "noise": noise, "seed": seed if noise > 0 else None}


def _betas(beta: Any, B: int, y: Tensor) -> Tensor:
    """(B,) inverse temperatures from one number or one per sequence."""
    if isinstance(beta, (int, float)) and not isinstance(beta, bool):
        return torch.full((B,), check_finite_number(beta, param("beta", "beta")), dtype=y.dtype, device=y.device)
    if isinstance(beta, (str, bytes, bool)) or beta is None:
        raise InputError(f"beta must be a finite number or one per sequence, got {beta!r}")
    try:
        t = torch.as_tensor(beta, dtype=torch.float64).to(dtype=y.dtype, device=y.device).reshape(-1)
    except (TypeError, ValueError, RuntimeError):
        raise InputError(f"beta must be a finite number or one per sequence, got {beta!r}") from None
    if t.numel() == 1:
        t = t.expand(B).clone()
    if t.numel() != B:
        raise InputError(f"beta has {t.numel()} values for a batch of {B} sequences; give one number or {B}")
    if not bool(torch.isfinite(t).all()):
        raise InputError("beta contains NaN or inf; give finite numbers")
    return t


def _matrix(m: Any, name: str, d: int, y: Tensor, square: bool) -> Tensor:
    """``(H, d', d)``: one matrix (H = 1) or a stack of heads; the identity if None."""
    if m is None:
        return torch.eye(d, dtype=y.dtype, device=y.device)[None]
    t = as_matrix(m, name, d, dtype=y.dtype, device=y.device, square=square, allow_heads=True)
    return t if t.ndim == 3 else t[None]


def _attention(
    Q: Tensor, K: Tensor, V: Tensor, beta: Tensor, model: str, mask: Tensor | None, causal: bool, n: int
) -> SphereAttention | Heads:
    """The field of the run: one :class:`SphereAttention` per head (identity matrices stored as None, so
    Q = K = V = I costs no matmul), summed by :class:`Heads` when there are several."""
    H = max(Q.shape[0], K.shape[0], V.shape[0])
    for name, m in (("Q", Q), ("K", K), ("V", V)):
        if m.shape[0] not in (1, H):
            raise InputError(f"{name} has {m.shape[0]} heads but another matrix has {H}; give the same number of heads")
    if Q.shape[1] != K.shape[1]:
        raise InputError(f"Q maps to dimension {Q.shape[1]} but K to {K.shape[1]}; they must match")
    A = K.transpose(1, 2) @ Q  # (H', d, d): <Q x, K y> = <A x, y>
    eye = torch.eye(V.shape[-1], dtype=V.dtype, device=V.device)
    heads = []
    for h in range(H):
        a, v = A[min(h, A.shape[0] - 1)], V[min(h, V.shape[0] - 1)]
        a_h, v_h = (None if torch.equal(m, eye) else m for m in (a, v))
        heads.append(SphereAttention(A=a_h, V=v_h, beta=beta, model=model, mask=mask, causal=causal))
        if model == "usa":
            check_usa_range(a_h, beta, n, V.dtype)
    return heads[0] if H == 1 else Heads(tuple(heads))


# ---- stepping -------------------------------------------------------------------------------------

Step = Callable[[int, Tensor], Tensor]


def _stepper(
    dyn: SphereAttention | Heads, y0: Tensor, params: SphereParams, N: int, rtol: float, atol: float, max_steps: int
) -> tuple[Counted, Step]:
    """``(the counted field, step(k, y_k) -> y_{k+1})`` on the grid of ``N`` steps of ``params.step``."""
    f = Counted(dyn)
    dt, method = params.step, params.method
    if method in ADAPTIVE:
        grid = torch.arange(N + 1, dtype=torch.float64) * dt
        adaptive = adaptive_steps(f, y0, method, grid, rtol, atol, max_steps, mask=getattr(dyn, "mask", None))
        return f, lambda k, y: unit(adaptive(k, y))
    if method == "discrete":
        layer = NORMS[params.norm or "post"]

        def discrete(k: int, y: Tensor) -> Tensor:
            f.nfe += 1
            out = layer(dyn.attend, y, dt)
            return out if dyn.mask is None else torch.where(dyn.mask[..., None], out, y)

        base: Step = discrete
    else:
        tableau = TABLEAUS[method]
        base = lambda k, y: unit(rk_step(f, k * dt, y, dt, tableau))  # noqa: E731
    if params.noise == 0:
        return f, base
    gen = torch.Generator(device=y0.device).manual_seed(int(params.seed or 0))
    sigma = params.noise * math.sqrt(dt)

    def noisy(k: int, y: Tensor) -> Tensor:
        x = base(k, y)
        xi = torch.randn(x.shape, generator=gen, dtype=x.dtype, device=x.device)
        kick = sigma * tangent(x, xi)
        return unit(x + (kick if dyn.mask is None else kick * dyn.mask[..., None]))

    return f, noisy


class _SphereRecord:
    """What a run on the sphere records: the grid states (unit tokens), kept when the loop says so."""

    def __init__(self, y: Tensor, dt: float, stepper: tuple[Counted, Step]) -> None:
        self.y, self.dt = y, dt  # the state (the residual stream) at the last grid step reached
        self.f, self.step = stepper
        self.ys: list[Tensor] = []

    def observe(self, k: int, run: Run) -> tuple[Tensor, Tensor] | None:
        if k == 0:
            return None
        y_prev, y = self.y, self.step(k - 1, self.y)
        if not bool(torch.isfinite(y).all()):
            t = (k - 1) * self.dt
            raise StepFailure(t, self.dt, f"non-finite tokens at t={t:.6g}: reduce step, or lower beta")
        self.y = y
        if not run.tests(k):
            return None
        moved = (unit(y) - unit(y_prev)).detach().abs().amax(dim=(1, 2)) / self.dt  # per unit time
        return moved.cpu(), torch.ones(y.shape[0], dtype=moved.dtype)

    def keep(self, k: int) -> None:
        self.ys.append(unit(self.y))

    def result(self, run: Run, batched: bool, mask: Tensor | None, params: SphereParams) -> SphereTrajectory:
        reached = "stopped early, converged" if run.stop_reason == "converged" else "reached"
        message = run.message or f"{reached} t={run.k * self.dt:.6g} in {run.k} steps"
        return SphereTrajectory(
            ts=torch.tensor([j * self.dt for j in run.kept], dtype=self.y.dtype),
            ys=torch.stack(self.ys),
            batched=batched,
            stats=run.stats(function_evals=self.f.nfe, message=message),
            mask=mask,
            params=params,
        )

r"""Softmax self-attention dynamics: one entry point, :func:`softmax`.

Continuous eq. (1) or rescaled eq. (4) of Geshkovski et al. (2023) integrated with a fixed-step
Runge–Kutta scheme or an adaptive embedded pair (:mod:`attndyn._adaptive`); or the discrete transformer, eq. (3) and
Remark 4 (``method="discrete"``); several heads are summed as in Section 6. ``causal=True`` restricts token i's
attention to tokens :math:`j \le i`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import Tensor

from . import attention
from ._budget import check_matrix_memory, check_memory, kept_count
from ._dynamics import SoftmaxAttention
from ._errors import param
from ._loop import Counted, Run, StepFailure, adaptive_steps, check_options, time_grid
from ._options import SaveAt, StopOnConvergence
from ._threads import limit_torch_threads, torch_threads_for
from ._trajectory import SoftmaxParams, SoftmaxTrajectory
from ._validation import (
    InputError,
    as_mask,
    as_matrix,
    as_tokens,
    check_bool,
    check_finite_number,
    check_int,
    check_positive,
    warn_hypothesis,
)
from .solvers import ADAPTIVE, TABLEAUS, rk_step, unstable_note

__all__ = ["softmax", "METHODS"]

METHODS = ("discrete", *TABLEAUS, *ADAPTIVE)

# The (d, d) matrices per head a run holds at once: Q, K, V as given and as tensors, K^T Q, exp(tV) and the
# solver's products: what :func:`attndyn._budget.check_matrix_memory` counts.
MATRIX_COPIES = 10


def _heads(Q: Any, K: Any, V: Any, d: int, dtype: torch.dtype, device: torch.device) -> tuple[Tensor, Tensor, Tensor]:
    eye = torch.eye(d, dtype=dtype, device=device)
    mats = {}
    for name, val, square in (("Q", Q, False), ("K", K, False), ("V", V, True)):
        m = eye if val is None else as_matrix(val, name, d, dtype=dtype, device=device, square=square, allow_heads=True)
        mats[name] = m if m.ndim == 3 else m.unsqueeze(0)
    H = max(m.shape[0] for m in mats.values())
    for name, m in mats.items():
        if m.shape[0] not in (1, H):
            raise InputError(f"{name} has {m.shape[0]} heads but another matrix has {H}; give the same number of heads")
        mats[name] = m.expand(H, *m.shape[1:])
    if mats["Q"].shape[-2] != mats["K"].shape[-2]:
        raise InputError(f"Q maps to dimension {mats['Q'].shape[-2]} but K to {mats['K'].shape[-2]}; they must match")
    return mats["Q"], mats["K"], mats["V"]


def softmax(
    tokens: Any,
    *,
    time: float,
    Q: Any = None,
    K: Any = None,
    V: Any = None,
    beta: float = 1.0,
    method: str = "rk4",
    step: float = 0.1,
    rescaled: bool = False,
    mask: Any = None,
    causal: bool = False,
    save: SaveAt = SaveAt(),
    stop: StopOnConvergence | None = None,
    rtol: float = 1e-7,
    atol: float = 1e-9,
    max_steps: int = 100_000,
    max_memory: float | None = None,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
    progress: bool = False,
) -> SoftmaxTrajectory:
    r"""Evolve tokens under softmax self-attention up to time ``time``.

    .. math:: \dot x_i = \sum_h \sum_{j \in \mathcal A_i} P^h_{ij}\, V_h x_j,\qquad
              P^h_{ij} = \frac{e^{\beta\langle Q_h x_i, K_h x_j\rangle}}
              {\sum_{l \in \mathcal A_i} e^{\beta\langle Q_h x_i, K_h x_l\rangle}}

    (softmax paper eqs. (1)-(2), Section 6), :math:`\mathcal A_i` the real tokens, and with ``causal`` only those
    with :math:`j \le i` (:func:`attndyn.attention.allowed`).

    Args:
        tokens: one sequence ``(n, d)`` or a batch ``(B, n, d)``.
        time: final time T > 0 (for ``method="discrete"``, T/step layers: a whole number of them, else an InputError).
        Q, K: ``(d_q, d)`` query/key matrices or ``(H, d_q, d)`` stacks (identity if None).
        V: ``(d, d)`` value matrix or ``(H, d, d)`` stack (identity if None).
        beta: inverse temperature multiplying the scores, eq. (2).
        method: ``"discrete"`` (eq. (3) / Remark 4), a fixed-step scheme (``"euler"``,
            ``"midpoint"``, ``"heun"``, ``"rk4"``) or an adaptive embedded pair
            (``"dopri5"``, ``"dopri8"``, ``"bosh3"``, ``"adaptive_heun"``).
        step: the grid spacing. Fixed schemes step on it (the step is ``T / ceil(T / step)``);
            adaptive schemes choose their own steps and report on it.
        rescaled: evolve the rescaled tokens :math:`z = e^{-tV}x` of eq. (4) (or Remark 4 when
            discrete) instead of x; one head only.
        mask: ``(n,)`` / ``(B, n)`` booleans, True for real tokens.
        causal: token i attends to tokens :math:`j \le i` only (composed with ``mask``). Token 0 then
            attends only to itself: :math:`x_0(t) = e^{tV} x_0(0)` (one head), and under ``rescaled`` it
            does not move. The theorems of :func:`attndyn.analysis.softmax_geometry` are for the full
            attention: it refuses a causal run.
        save: what to keep; ``SaveAt(every=k)`` keeps every k-th grid time, ``SaveAt(every=None)``
            only the first and last states, ``SaveAt(attention=True)`` the attention matrices too.
        stop: stop once :math:`\max|\Delta y|/\Delta t \le \mathrm{rtol}\max|y|` for every sequence.
        rtol, atol: tolerances of adaptive schemes (positive).
        max_steps: the step budget of the whole run, for every method: a fixed grid of more than
            ``max_steps`` steps is refused before the run; an adaptive solve (one solve over [0, T], read at
            every grid time) may make ``max_steps`` steps of its scheme, accepted or rejected. A
            solve that fails (step size underflow, budget exhausted, non-finite tokens) ends with
            ``stats.stop_reason == "solver_failed"`` and ``stats.failed_at == (t, dt)``, keeping
            what was computed.
        max_memory: bytes the kept states (and attention matrices) may take (default: half of the
            device's memory); a run over it is refused before it starts, naming the estimate.
        dtype: float64 by default; no global setting is changed. Everything is differentiable
            with respect to the tokens and Q, K, V (pass tensors with ``requires_grad``).

    The grid steps are run by the loop both engines share (:class:`attndyn._loop.Run`: saving,
    convergence, the step budget, progress, :class:`~attndyn._trajectory.RunStats`) on a
    :class:`~attndyn._dynamics.SoftmaxAttention`; fixed and adaptive schemes feed the same record.

    Returns:
        A :class:`~attndyn._trajectory.SoftmaxTrajectory`; ``params`` holds the settings
        (:class:`~attndyn._trajectory.SoftmaxParams`).

    >>> import attndyn
    >>> traj = attndyn.softmax([[1.0], [2.0], [-1.0]], time=2.0, V=[[-1.0]])
    >>> bool(traj.final_tokens.abs().max() < traj.initial_tokens.abs().max())
    True
    """
    y, batched = as_tokens(tokens, dtype=dtype, device=device)
    B, n, d = y.shape
    # torch threads: one below TORCH_MIN_WORK multiply-adds per field evaluation (docs/benchmarks.md, "Threads")
    threads = torch_threads_for(B * n * n * d) if y.device.type == "cpu" else torch.get_num_threads()
    with limit_torch_threads(threads):
        time, step = check_positive(time, param("time", "time")), check_positive(step, param("step", "step"))
        beta = check_finite_number(beta, param("beta", "beta"))
        if method not in METHODS:
            raise InputError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
        max_steps = check_int(max_steps, param("max_steps", "max_steps"), minimum=1)
        rtol, atol = check_positive(rtol, "rtol"), check_positive(atol, "atol")
        check_options(save, stop)
        heads = max((m.shape[0] for m in (Q, K, V) if m is not None and np.ndim(m) == 3), default=1)
        check_matrix_memory(d, MATRIX_COPIES * heads, dtype, y.device, max_memory, "Q, K, V and their products")
        Qh, Kh, Vh = _heads(Q, K, V, d, dtype, y.device)
        if rescaled and Vh.shape[0] > 1:
            raise InputError("rescaled=True is defined for one head (eq. (4)); pass single Q, K, V matrices")
        mask_t, causal = as_mask(mask, (B, n), y.device), check_bool(causal, "causal")
        N, dt = time_grid(time, step, method, max_steps)
        layer_step = dt if method == "discrete" and rescaled else None  # Remark 4: the scores see R^k z
        dyn = SoftmaxAttention(
            Q=Qh, K=Kh, V=Vh, beta=beta, rescaled=bool(rescaled), mask=mask_t, causal=causal, layer_step=layer_step
        )
        if layer_step is not None:
            R = torch.eye(d, dtype=dtype, device=y.device) + dt * Vh[0]
            if abs(float(torch.linalg.det(R))) < 1e-12:
                raise InputError("I + step*V is singular, so Remark 4's rescaling is undefined; choose a smaller step")
        _check_softmax_memory(y, Vh.shape[0], N, save, max_memory)
        _check_score_range(dyn, y, time)
        params = SoftmaxParams(
            Q=Qh, K=Kh, V=Vh, beta=beta, rescaled=bool(rescaled), method=method, step=dt, time=time, causal=causal
        )
        _warn_unstable(params)
        run = Run(save, stop, N, B)
        record = _SoftmaxRecord(dyn, y, save, dt, _stepper(dyn, y, method, N, dt, rtol, atol, max_steps))
        run.loop(record, description=f"softmax {method}", progress=progress)
        return record.result(run, batched, params)


def unstable_step(params: SoftmaxParams) -> str | None:
    r"""Why the run's fixed step cannot be trusted, or None (:func:`attndyn.solvers.unstable_note`): the field of
    eq. (1) moves a token by a convex combination of :math:`V_h x_j`, so its rate is estimated by
    :math:`\sum_h \lVert V_h\rVert_2` (with V = -cI the tokens contract at rate c; rk4 with step h diverges once
    :math:`hc > 2.785`). The rescaled field of eq. (4) has the same rate. Layers and adaptive schemes: None."""
    rate = float(torch.linalg.matrix_norm(params.V.detach().double().cpu(), ord=2).sum())
    return unstable_note(params.method, params.step, rate, "||V||" if params.V.shape[0] == 1 else "sum of ||V_h||")


def _warn_unstable(params: SoftmaxParams) -> None:
    """A :class:`HypothesisWarning` for a step beyond its scheme's interval (the run's verdicts are undecided)."""
    note = unstable_step(params)
    if note is not None:
        warn_hypothesis(note, stacklevel=4)


def _check_softmax_memory(y: Tensor, H: int, N: int, save: SaveAt, max_memory: float | None) -> None:
    """Refuse a run whose kept states (and attention matrices) would not fit in ``max_memory``."""
    B, n, d = y.shape
    T = kept_count(N, save.every)
    item = y.element_size()
    check_memory(
        T * B * n * d * item
        + (T + 1) * B * H * n * n * item * bool(save.attention)
        + B * H * n * n * item * bool(save.final_attention),
        max_memory,
        y.device,
        f"{T} kept states of {B} x {n} tokens in dimension {d}"
        + (" with attention matrices" if save.attention else ""),
        param("save.states", "keep fewer states with save=SaveAt(every=None) or SaveAt(every=k)")
        + (", or drop attention=True" if save.attention else ""),
    )


def _check_score_range(dyn: SoftmaxAttention, y: Tensor, time: float) -> None:
    """Refuse a start whose scores beta <Q x_i, K x_j> overflow the dtype (they would give NaN weights)."""
    big = float(y.detach().abs().amax())
    big = big * big * y.shape[-1]  # (a float product overflows to inf; ** would raise)
    norm = max(float(torch.linalg.matrix_norm(a.detach(), ord=2)) if a is not None else 1.0 for a in dyn._A)
    bound = abs(dyn.beta) * norm * big
    if not math.isfinite(bound) or bound > torch.finfo(y.dtype).max / 4:
        raise InputError(
            f"beta times the scores overflow {y.dtype} (up to about {bound:.3g}): the tokens are too large "
            "(largest coordinate {:.3g}); rescale them (the dynamics are not scale-invariant) or lower beta".format(
                float(y.detach().abs().amax())
            )
        )


# ---- stepping: y_k -> y_{k+1} on the grid, fixed-step or one streamed adaptive solve ----------------


def _stepper(
    dyn: SoftmaxAttention, y0: Tensor, method: str, N: int, dt: float, rtol: float, atol: float, max_steps: int
) -> tuple[Counted, Callable[[int, Tensor], Tensor]]:
    """The field, counted, and ``step(k, y_k) -> y_{k+1}``: fixed schemes step on the grid (``"discrete"``:
    eq. (3) / Remark 4; else a Runge–Kutta table); adaptive ones read one :class:`~attndyn._adaptive.AdaptiveSolve`
    over [0, T] at every grid time (no restarts)."""
    f = Counted(dyn)
    if method in ADAPTIVE:
        grid = (torch.arange(N + 1, dtype=y0.dtype, device=y0.device) * dt).to(torch.float64)
        return f, adaptive_steps(f, y0, method, grid, rtol, atol, max_steps, mask=dyn.mask)
    if method == "discrete":

        def discrete(k: int, y: Tensor) -> Tensor:
            f.nfe += 1
            return dyn.discrete_step(k, y, dt)

        return f, discrete
    return f, lambda k, y: rk_step(f, k * dt, y, dt, TABLEAUS[method])


class _SoftmaxRecord:
    """What a softmax run records as it goes (the engine side of :class:`attndyn._loop.Run`): kept states,
    attention, and the leaders tracked at every grid step; the same for fixed and adaptive schemes."""

    def __init__(
        self,
        dyn: SoftmaxAttention,
        y: Tensor,
        save: SaveAt,
        dt: float,
        stepper: tuple[Counted, Callable[[int, Tensor], Tensor]],
    ) -> None:
        B, n, _ = y.shape
        self.dyn, self.save, self.dt = dyn, save, dt
        self.f, self.step = stepper
        self.y = y  # the state at the last grid step reached
        self.ys: list[Tensor] = []
        self.atts: list[Tensor] = []
        self.leader_since = torch.full((B, n), -1, dtype=torch.long)

    def observe(self, k: int, run: Run) -> tuple[Tensor, Tensor] | None:
        """Grid step k: y_k from y_{k-1} (a failed step when not finite), its leaders, its movement when tested."""
        if k == 0:
            self.track_leaders(0, self.y)
            return None
        y_prev, y = self.y, self.step(k - 1, self.y)
        if not bool(torch.isfinite(y).all()):
            t = (k - 1) * self.dt
            rescale = "" if self.dyn.rescaled else (
                ", or use the rescaled dynamics (rescaled=True; --rescaled on the command line)"
            )  # fmt: skip
            raise StepFailure(
                t,
                self.dt,
                f"non-finite tokens at t={t:.6g}: the scores overflowed or the solver diverged; "
                f"reduce step or time{rescale}",
            )
        self.track_leaders(k, y)
        self.y = y
        if not run.tests(k):
            return None
        moved = ((y - y_prev).detach().abs().amax(dim=(1, 2)) / self.dt).cpu()  # per unit time
        return moved, y_prev.detach().abs().amax(dim=(1, 2)).cpu()

    def track_leaders(self, k: int, y: Tensor) -> None:
        """Tokens whose attention row peaks strictly on themselves (first head), and since when without a break."""
        lead = _self_attending(self.dyn, k * self.dt, y).cpu()
        self.leader_since = torch.where(lead, torch.where(self.leader_since < 0, k, self.leader_since), -1)

    def keep(self, k: int) -> None:
        self.ys.append(self.y)
        if self.save.attention:
            self.atts.append(self.dyn.attention(k * self.dt, self.y))

    def result(self, run: Run, batched: bool, params: SoftmaxParams) -> SoftmaxTrajectory:
        k, y = run.k, self.y
        reached = "stopped early, converged" if run.stop_reason == "converged" else "reached"
        message = run.message or f"{reached} t={k * self.dt:.6g} in {k} steps"
        if run.stop_reason == "solver_failed" and not message.startswith(params.method):
            message = f"{params.method} stopped: {message}"
        final = None
        if self.save.attention:
            final = self.atts[-1]
        elif self.save.final_attention:
            final = self.dyn.attention(k * self.dt, y)
        return SoftmaxTrajectory(
            ts=torch.tensor([j * self.dt for j in run.kept], dtype=y.dtype),
            ys=torch.stack(self.ys),
            batched=batched,
            stats=run.stats(function_evals=self.f.nfe, message=message),
            mask=self.dyn.mask,
            params=params,
            attention=torch.stack(self.atts) if self.save.attention else None,
            attention_final=final,
            leader_since=self.leader_since,
        )


def _self_attending(dyn: SoftmaxAttention, t: float, y: Tensor) -> Tensor:
    r"""(B, n) bool: :math:`\beta s_{ii} > \beta s_{ij}` for every j != i that token i may attend (first head; real
    tokens, and :math:`j < i` under a causal mask), computed by row chunks.

    One scratch buffer of at most :func:`attention.chunk_entries` scores serves every chunk, so
    memory stays bounded whatever n (no allocation per chunk).
    """
    x = dyn.effective_tokens(t, y.detach())
    B, n, _ = x.shape
    rows = max(1, attention.chunk_entries(x.device) // max(1, B * n))
    buf = torch.empty(B * min(rows, n) * n, dtype=x.dtype, device=x.device)
    A = dyn._A[0]
    A = None if A is None else A.detach()
    out = []
    for a in range(0, n, rows):
        s = attention.scores(x, A, rows=slice(a, a + rows), out=buf)  # (B, r, n), a view of buf
        if dyn.beta != 1.0:
            s.mul_(dyn.beta)
        r = s.shape[1]
        ar = torch.arange(r, device=s.device)
        own = s[:, ar, ar + a].clone()  # (B, r)
        s[:, ar, ar + a] = -torch.inf
        keep = None  # the keys a token may attend: all (no call), or real and (causal) j <= i
        if dyn.mask is not None or dyn.causal:
            keep = attention.allowed(dyn.mask, n, causal=dyn.causal, rows=slice(a, a + r), device=s.device)
        if keep is not None:
            s.masked_fill_(~keep, -torch.inf)
        lead = own > s.amax(dim=-1)
        if dyn.mask is not None:
            lead &= dyn.mask[:, a : a + r]
        out.append(lead)
    return torch.cat(out, dim=1)

r"""Softmax self-attention dynamics: one entry point, :func:`softmax`.

Continuous eq. (1) or rescaled eq. (4) of Geshkovski et al. (2023) integrated with a fixed-step
Runge–Kutta scheme or an adaptive torchdiffeq scheme; or the discrete transformer, eq. (3) and
Remark 4 (``method="discrete"``); several heads are summed as in Section 6.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from ._validation import InputError, as_mask, as_matrix, as_tokens, check_int, check_positive
from .dynamics import SoftmaxAttention
from .options import SaveAt, StopOnConvergence
from .progress import progress_bar
from .solvers import ADAPTIVE, TABLEAUS, rk_step
from .threads import one_thread_when_small
from .trajectory import RunStats, SoftmaxTrajectory

__all__ = ["softmax", "METHODS"]

METHODS = ("discrete", *TABLEAUS, *ADAPTIVE)


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


class _Counted:
    """Wraps a vector field to count evaluations and remember the last times seen."""

    def __init__(self, f):
        self.f, self.nfe, self.last_t, self.min_dt = f, 0, 0.0, math.inf

    def __call__(self, t, y):
        tf = float(t.detach()) if isinstance(t, torch.Tensor) else float(t)
        if tf != self.last_t:
            self.min_dt = min(self.min_dt, abs(tf - self.last_t))
        self.nfe += 1
        self.last_t = tf
        return self.f(tf, y)


@one_thread_when_small("softmax")  # see attndyn.threads
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
    save: SaveAt = SaveAt(),
    stop: StopOnConvergence | None = None,
    rtol: float = 1e-7,
    atol: float = 1e-9,
    max_steps: int = 100_000,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
    progress: bool = False,
) -> SoftmaxTrajectory:
    r"""Evolve tokens under softmax self-attention up to time ``time``.

    Args:
        tokens: one sequence ``(n, d)`` or a batch ``(B, n, d)``.
        time: final time T > 0 (for ``method="discrete"``, T/step layers are taken).
        Q, K: ``(d_q, d)`` query/key matrices or ``(H, d_q, d)`` stacks (identity if None).
        V: ``(d, d)`` value matrix or ``(H, d, d)`` stack (identity if None).
        beta: inverse temperature multiplying the scores, eq. (2).
        method: ``"discrete"`` (eq. (3) / Remark 4), a fixed-step scheme (``"euler"``,
            ``"midpoint"``, ``"heun"``, ``"rk4"``) or an adaptive torchdiffeq scheme
            (``"dopri5"``, ``"dopri8"``, ``"bosh3"``, ``"adaptive_heun"``).
        step: the grid spacing. Fixed schemes step on it (the step is ``T / ceil(T / step)``);
            adaptive schemes choose their own steps and report on it.
        rescaled: evolve the rescaled tokens :math:`z = e^{-tV}x` of eq. (4) (or Remark 4 when
            discrete) instead of x; one head only.
        mask: ``(n,)`` / ``(B, n)`` booleans, True for real tokens.
        save: what to keep; ``SaveAt(every=k)`` keeps every k-th grid time, ``SaveAt(every=None)``
            only the first and last states, ``SaveAt(attention=True)`` the attention matrices too.
        stop: stop once :math:`\max|\Delta y|/\Delta t \le \mathrm{rtol}\max|y|` for every sequence.
        rtol, atol, max_steps: tolerances and step budget of adaptive schemes. A solve that fails
            (step size underflow, budget exhausted) ends with ``stats.stop_reason ==
            "solver_failed"`` and ``stats.failed_at == (t, dt)``, keeping what was computed.
        dtype: float64 by default; no global setting is changed. Everything is differentiable
            with respect to the tokens and Q, K, V (pass tensors with ``requires_grad``).

    Returns:
        A :class:`~attndyn.trajectory.SoftmaxTrajectory`.

    >>> import attndyn
    >>> traj = attndyn.softmax([[1.0], [2.0], [-1.0]], time=2.0, V=[[-1.0]])
    >>> bool(traj.final_tokens.abs().max() < traj.initial_tokens.abs().max())
    True
    """
    y, batched = as_tokens(tokens, dtype=dtype, device=device)
    B, n, d = y.shape
    time = check_positive(time, "time")
    step = check_positive(step, "step")
    beta = float(beta)
    if not math.isfinite(beta):
        raise InputError(f"beta must be a finite number, got {beta!r}")
    if method not in METHODS:
        raise InputError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    max_steps = check_int(max_steps, "max_steps", minimum=1)
    if not isinstance(save, SaveAt):
        raise InputError(f"save must be a SaveAt(...) object, got {save!r}")
    Qh, Kh, Vh = _heads(Q, K, V, d, dtype, y.device)
    if rescaled and Vh.shape[0] > 1:
        raise InputError("rescaled=True is defined for one head (eq. (4)); pass single Q, K, V matrices")
    m = as_mask(mask, (B, n), y.device)
    dyn = SoftmaxAttention(Q=Qh, K=Kh, V=Vh, beta=beta, rescaled=bool(rescaled), mask=m)
    if method == "discrete" and rescaled:
        R = torch.eye(d, dtype=dtype, device=y.device) + step * Vh[0]
        if abs(float(torch.linalg.det(R))) < 1e-12:
            raise InputError("I + step*V is singular, so Remark 4's rescaling is undefined; choose a smaller step")

    N = max(1, math.ceil(time / step - 1e-9))
    dt = time / N
    f = _Counted(dyn)
    ts, ys, atts = [], [], []
    converged_at = torch.full((B,), -1, dtype=torch.long)
    change = torch.full((B,), float("nan"))
    stop_reason, message, failed_at = "completed", "", None

    def keep(k: int, t: float, state: Tensor) -> None:
        ts.append(t)
        ys.append(state)
        if save.attention:
            atts.append(dyn.attention(t, state))

    keep(0, 0.0, y)
    k = 0
    with progress_bar(total=N, description=f"softmax {method}", enabled=progress) as advance:
        while k < N:
            t = k * dt
            try:
                if method == "discrete":
                    f.nfe += 1
                    y_next = dyn.discrete_step(k, y, dt)
                elif method in TABLEAUS:
                    y_next = rk_step(f, t, y, dt, TABLEAUS[method])
                else:
                    y_next = _adaptive(f, y, t, t + dt, method, rtol, atol, max_steps)
            except _SolverFailure as exc:
                stop_reason, failed_at = "solver_failed", (exc.t, exc.dt)
                message = f"{method} failed at t={exc.t:.6g} with dt={exc.dt:.3g}: {exc.reason}"
                break
            if not bool(torch.isfinite(y_next).all()):
                stop_reason, failed_at = "solver_failed", (t, dt)
                message = f"{method} produced non-finite tokens at t={t:.6g} (dt={dt:.3g}); reduce step or time"
                break
            k += 1
            advance(1)
            if stop is not None or k == N:
                moved = ((y_next - y).detach().abs().amax(dim=(1, 2)) / dt).cpu()
                scale = y.detach().abs().amax(dim=(1, 2)).cpu()
                change = moved / scale.clamp_min(torch.finfo(torch.float64).tiny)
            if stop is not None:
                now = (moved <= stop.rtol * scale) & (converged_at < 0)
                converged_at = torch.where(now, torch.tensor(k), converged_at)
            y = y_next
            done = stop is not None and bool((converged_at >= 0).all())
            if save.keeps(k, N) or done:
                keep(k, k * dt, y)
            if done and k < N:
                stop_reason = "converged"
                break
    if ts[-1] != k * dt and stop_reason == "solver_failed":
        keep(k, k * dt, y)  # what was computed before the failure
    converged = bool((converged_at >= 0).all())
    if not message:
        message = f"{'stopped early, converged' if stop_reason == 'converged' else 'reached'} t={k * dt:.6g} in {k} steps"
    stats = RunStats(
        steps=k,
        function_evals=f.nfe,
        converged=converged,
        converged_at=tuple(int(c) for c in converged_at),
        stop_reason=stop_reason,
        message=message,
        failed_at=failed_at,
        final_change=tuple(float(c) for c in change),
    )
    return SoftmaxTrajectory(
        ts=torch.tensor(ts, dtype=dtype),
        ys=torch.stack(ys),
        batched=batched,
        stats=stats,
        mask=m,
        params={"Q": Qh, "K": Kh, "V": Vh, "beta": beta, "rescaled": bool(rescaled), "method": method, "step": dt, "time": time},
        attention=torch.stack(atts) if save.attention else None,
        attention_final=dyn.attention(k * dt, y),
    )


class _SolverFailure(Exception):
    def __init__(self, t: float, dt: float, reason: str):
        super().__init__(reason)
        self.t, self.dt, self.reason = t, dt, reason


def _adaptive(f: _Counted, y: Tensor, t0: float, t1: float, method: str, rtol: float, atol: float, max_steps: int) -> Tensor:
    from torchdiffeq import odeint

    span = torch.tensor([t0, t1], dtype=y.dtype, device=y.device)
    try:
        return odeint(f, y, span, method=method, rtol=rtol, atol=atol, options={"max_num_steps": max_steps})[-1]
    except (AssertionError, RuntimeError) as exc:
        dt = f.min_dt if math.isfinite(f.min_dt) else t1 - t0
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise _SolverFailure(f.last_t, dt, reason) from None

r"""Softmax self-attention dynamics: one entry point, :func:`softmax`.

Continuous eq. (1) or rescaled eq. (4) of Geshkovski et al. (2023) integrated with a fixed-step
Runge–Kutta scheme or an adaptive torchdiffeq scheme; or the discrete transformer, eq. (3) and
Remark 4 (``method="discrete"``); several heads are summed as in Section 6.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from . import attention
from ._budget import check_memory, kept_count
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


# Vector-field evaluations per step of each adaptive scheme (its stages), for the step budget.
_STAGES = {"dopri5": 6, "dopri8": 13, "bosh3": 3, "adaptive_heun": 2}


class _Counted:
    """Wraps a vector field to count evaluations, remember the last times seen and enforce a budget."""

    def __init__(
        self,
        f: Callable[[float, Tensor], Tensor],
        max_evals: int | None = None,
        on_time: Callable[[float], None] | None = None,
    ) -> None:
        self.f, self.nfe, self.last_t, self.min_dt = f, 0, 0.0, math.inf
        self.max_evals, self.on_time = max_evals, on_time

    def __call__(self, t: Tensor | float, y: Tensor) -> Tensor:
        tf = float(t.detach()) if isinstance(t, torch.Tensor) else float(t)
        if tf != self.last_t:
            self.min_dt = min(self.min_dt, abs(tf - self.last_t))
        self.nfe += 1
        if self.max_evals is not None and self.nfe > self.max_evals:
            raise _SolverFailure(
                tf, self.min_dt, f"step budget exhausted ({self.max_evals} evaluations); raise max_steps"
            )
        self.last_t = tf
        if self.on_time is not None:
            self.on_time(tf)
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
    max_memory: float | None = None,
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
        rtol, atol: tolerances of adaptive schemes (positive).
        max_steps: the step budget of the whole run, for every method: a fixed grid of more than
            ``max_steps`` steps is refused before the run; an adaptive solve (one torchdiffeq solve
            over [0, T], read at every grid time) may make ``max_steps`` steps of its scheme. A
            solve that fails (step size underflow, budget exhausted, non-finite tokens) ends with
            ``stats.stop_reason == "solver_failed"`` and ``stats.failed_at == (t, dt)``, keeping
            what was computed.
        max_memory: bytes the kept states (and attention matrices) may take (default: half of the
            device's memory); a run over it is refused before it starts, naming the estimate.
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
    if isinstance(beta, (str, bytes, bool)):
        raise InputError(f"beta must be a finite number, got {beta!r}")
    try:
        beta = float(beta)
    except (TypeError, ValueError):
        raise InputError(f"beta must be a finite number, got {beta!r}") from None
    if not math.isfinite(beta):
        raise InputError(f"beta must be a finite number, got {beta!r}")
    if method not in METHODS:
        raise InputError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    max_steps = check_int(max_steps, "max_steps", minimum=1)
    rtol = check_positive(rtol, "rtol")
    atol = check_positive(atol, "atol")
    if not isinstance(save, SaveAt):
        raise InputError(f"save must be a SaveAt(...) object, got {save!r}")
    if stop is not None and not isinstance(stop, StopOnConvergence):
        raise InputError(f"stop must be StopOnConvergence(...) or None, got {stop!r}")
    Qh, Kh, Vh = _heads(Q, K, V, d, dtype, y.device)
    if rescaled and Vh.shape[0] > 1:
        raise InputError("rescaled=True is defined for one head (eq. (4)); pass single Q, K, V matrices")
    m = as_mask(mask, (B, n), y.device)
    dyn = SoftmaxAttention(Q=Qh, K=Kh, V=Vh, beta=beta, rescaled=bool(rescaled), mask=m)
    if method == "discrete" and rescaled:
        R = torch.eye(d, dtype=dtype, device=y.device) + step * Vh[0]
        if abs(float(torch.linalg.det(R))) < 1e-12:
            raise InputError("I + step*V is singular, so Remark 4's rescaling is undefined; choose a smaller step")

    N = math.ceil(time / step - 1e-9)
    if method not in ADAPTIVE and N > max_steps:
        raise InputError(
            f"time={time:g} with step={step:g} needs {N:.3g} steps, over max_steps={max_steps}; "
            "raise step, lower time or raise max_steps"
        )
    N = max(1, N)
    dt = time / N
    H = Vh.shape[0]
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
        "keep fewer states with save=SaveAt(every=None) or SaveAt(every=k)"
        + (", or drop attention=True" if save.attention else ""),
    )
    _check_score_range(dyn, y, time)
    run = _Run(dyn, save, stop, N, dt, B, n)
    run.keep(0, y)
    with progress_bar(total=N, description=f"softmax {method}", enabled=progress) as advance:
        if method in ADAPTIVE:
            _integrate_adaptive(run, y, method, rtol, atol, max_steps, advance)
        else:
            _integrate_fixed(run, y, method, advance)
    return run.result(
        batched,
        m,
        {
            "Q": Qh,
            "K": Kh,
            "V": Vh,
            "beta": beta,
            "rescaled": bool(rescaled),
            "method": method,
            "step": dt,
            "time": time,
        },
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


class _Run:
    """What a softmax run records as it goes: kept states, attention, leaders, convergence."""

    def __init__(
        self, dyn: SoftmaxAttention, save: SaveAt, stop: StopOnConvergence | None, N: int, dt: float, B: int, n: int
    ):
        self.dyn, self.save, self.stop, self.N, self.dt = dyn, save, stop, N, dt
        self.ts: list[float] = []
        self.ys: list[Tensor] = []
        self.atts: list[Tensor] = []
        self.k = 0
        self.y: Tensor | None = None
        self.converged_at = torch.full((B,), -1, dtype=torch.long)
        self.change = torch.full((B,), float("nan"))
        self.leader_since = torch.full((B, n), -1, dtype=torch.long)
        self.stop_reason, self.message = "completed", ""
        self.failed_at: tuple[float, float] | None = None
        self.nfe = 0

    def keep(self, k: int, y: Tensor) -> None:
        self.k, self.y = k, y
        self.ts.append(k * self.dt)
        self.ys.append(y)
        if self.save.attention:
            self.atts.append(self.dyn.attention(k * self.dt, y))

    def track_leaders(self, k: int, y: Tensor) -> None:
        """Tokens whose attention row peaks strictly on themselves (first head), and since when without a break."""
        lead = _self_attending(self.dyn, k * self.dt, y).cpu()
        self.leader_since = torch.where(lead, torch.where(self.leader_since < 0, k, self.leader_since), -1)

    def advance(self, k: int, y_prev: Tensor, y: Tensor, span: float) -> bool:
        """Record grid point k (state y, reached from y_prev over time span); True when the run should stop."""
        if not bool(torch.isfinite(y).all()):
            t = (k - 1) * self.dt
            self.fail(
                t,
                span,
                f"non-finite tokens at t={t:.6g}: the scores overflowed or the solver diverged; "
                "reduce step or time, or use rescaled=True",
            )
            return True
        if self.stop is not None or k == self.N:
            moved = ((y - y_prev).detach().abs().amax(dim=(1, 2)) / span).cpu()
            scale = y_prev.detach().abs().amax(dim=(1, 2)).cpu()
            self.change = moved / scale.clamp_min(torch.finfo(torch.float64).tiny)
            if self.stop is not None:
                now = (moved <= self.stop.rtol * scale) & (self.converged_at < 0)
                self.converged_at = torch.where(now, torch.tensor(k), self.converged_at)
        self.track_leaders(k, y)
        done = self.stop is not None and bool((self.converged_at >= 0).all())
        if self.save.keeps(k, self.N) or done:
            self.keep(k, y)
        else:
            self.k, self.y = k, y
        if done and k < self.N:
            self.stop_reason = "converged"
        return done

    def fail(self, t: float, dt: float, reason: str) -> None:
        self.stop_reason, self.failed_at = "solver_failed", (t, dt)
        self.message = reason

    def result(self, batched: bool, mask: Tensor | None, params: dict) -> SoftmaxTrajectory:
        k, y = self.k, self.y
        assert y is not None  # softmax() calls keep(0, y) right after building the run
        if self.ts[-1] != k * self.dt:
            self.keep(k, y)  # what was computed before a failure
        converged = bool((self.converged_at >= 0).all())
        message = self.message or (
            f"{'stopped early, converged' if self.stop_reason == 'converged' else 'reached'} t={k * self.dt:.6g} in {k} steps"
        )
        if self.stop_reason == "solver_failed" and not message.startswith(params["method"]):
            message = f"{params['method']} stopped: {message}"
        stats = RunStats(
            steps=k,
            function_evals=self.nfe,
            converged=converged,
            converged_at=tuple(int(c) for c in self.converged_at),
            stop_reason=self.stop_reason,
            message=message,
            failed_at=self.failed_at,
            final_change=tuple(float(c) for c in self.change),
        )
        final = None
        if self.save.attention:
            final = self.atts[-1]
        elif self.save.final_attention:
            final = self.dyn.attention(k * self.dt, y)
        return SoftmaxTrajectory(
            ts=torch.tensor(self.ts, dtype=y.dtype),
            ys=torch.stack(self.ys),
            batched=batched,
            stats=stats,
            mask=mask,
            params=params,
            attention=torch.stack(self.atts) if self.save.attention else None,
            attention_final=final,
            leader_since=self.leader_since,
        )


def _self_attending(dyn: SoftmaxAttention, t: float, y: Tensor) -> Tensor:
    r"""(B, n) bool: :math:`\beta s_{ii} > \beta s_{ij}` for every real j != i (first head), computed by row chunks.

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
        if dyn.mask is not None:
            s.masked_fill_(~dyn.mask[:, None, :], -torch.inf)
        lead = own > s.amax(dim=-1)
        if dyn.mask is not None:
            lead &= dyn.mask[:, a : a + r]
        out.append(lead)
    return torch.cat(out, dim=1)


def _integrate_fixed(run: _Run, y: Tensor, method: str, advance: Callable[[float], None]) -> None:
    f = _Counted(run.dyn)
    dyn, dt = run.dyn, run.dt
    run.track_leaders(0, y)
    for k in range(run.N):
        t = k * dt
        if method == "discrete":
            f.nfe += 1
            y_next = dyn.discrete_step(k, y, dt)
        else:
            y_next = rk_step(f, t, y, dt, TABLEAUS[method])
        run.nfe = f.nfe
        done = run.advance(k + 1, y, y_next, dt)
        advance(1)
        if run.stop_reason == "solver_failed":
            run.k, run.y = k, y
            return
        y = y_next
        if done:
            return


def _integrate_adaptive(
    run: _Run, y: Tensor, method: str, rtol: float, atol: float, max_steps: int, advance: Callable[[float], None]
) -> None:
    """One torchdiffeq solve over [0, T]; its dense output is read at every grid time (no restarts)."""
    shown = [0]

    def on_time(t: float) -> None:  # the progress bar follows the solver's own time
        k = min(run.N, int(t / run.dt + 1e-9))
        if k > shown[0]:
            advance(k - shown[0])
            shown[0] = k

    f = _Counted(run.dyn, max_evals=max_steps * _STAGES.get(method, 6), on_time=on_time)
    grid = torch.arange(run.N + 1, dtype=y.dtype, device=y.device) * run.dt
    run.track_leaders(0, y)
    try:
        stream = _stream(f, y, grid, method, rtol, atol, max_steps)
        for k in range(1, run.N + 1):
            y_next = stream(grid[k])
            run.nfe = f.nfe
            done = run.advance(k, y, y_next, run.dt)
            if run.stop_reason == "solver_failed":
                run.k, run.y = k - 1, y
                return
            y = y_next
            if done:
                return
    except _SolverFailure as exc:
        run.nfe = f.nfe
        run.fail(exc.t, exc.dt, f"{method} failed at t={exc.t:.6g} with dt={exc.dt:.3g}: {exc.reason}")
    finally:
        advance(max(0, run.N - shown[0]))


def _stream(
    f: _Counted, y: Tensor, grid: Tensor, method: str, rtol: float, atol: float, max_steps: int
) -> Callable[[Tensor], Tensor]:
    """Start one torchdiffeq solve over ``grid`` and return a function giving y(grid[k]) for increasing k."""
    from torchdiffeq._impl.odeint import SOLVERS, _check_inputs

    try:
        _, func, y0, t, rtol_, atol_, method_, options, _, _ = _check_inputs(
            f, y, grid, rtol, atol, method, {"max_num_steps": max_steps}, None, SOLVERS
        )
        solver = SOLVERS[method_](func=func, y0=y0, rtol=rtol_, atol=atol_, **options)
        solver._before_integrate(t)
    except (AssertionError, RuntimeError) as exc:
        raise _SolverFailure(0.0, math.nan, _first_line(exc)) from None

    def at(tk: Tensor) -> Tensor:
        try:
            return solver._advance(tk.to(solver.dtype))
        except (AssertionError, RuntimeError) as exc:
            dt = f.min_dt if math.isfinite(f.min_dt) else float(grid[1] - grid[0])
            raise _SolverFailure(f.last_t, dt, _first_line(exc)) from None

    return at


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


class _SolverFailure(Exception):
    def __init__(self, t: float, dt: float, reason: str):
        super().__init__(reason)
        self.t, self.dt, self.reason = t, dt, reason

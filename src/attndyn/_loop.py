r"""The run loop both engines share: what is kept, when a run has converged, the step budget, progress, RunStats.

An engine is a dynamics object with a step (:class:`attndyn.HardmaxAttention`, eq. (1.1) of the
hardmax paper; :class:`attndyn._dynamics.SoftmaxAttention`, eqs. (1)-(4) of the softmax paper) and a
*record*: the engine-specific part of what a run keeps (tokens, leaders, follow sets, attention). One
:class:`Run` drives the record over the states :math:`k = 0, 1, \dots, K` (``last``) and owns the rest:

* **saving**: state k is kept when ``save.keeps(k, last)`` (:class:`~attndyn._options.SaveAt`), and so is
  the state a run stops at;
* **convergence**: sequence b has converged at step k when the step moved it by
  :math:`\max_i \lVert \Delta z_i\rVert_\infty \le \mathrm{rtol}\,\max_i \lVert z_i\rVert_\infty`
  (:class:`~attndyn._options.StopOnConvergence`), or, when no test was asked for, by exactly 0; the run
  stops once every sequence has converged (only with a test);
* **the step budget**: at most ``last`` steps; a step that cannot be taken (:class:`StepFailure`: a failed
  adaptive solve, non-finite tokens) ends the run with ``stop_reason == "solver_failed"``, keeping the
  last state computed;
* **progress** (one bar over the steps) and the :class:`~attndyn._trajectory.RunStats`;
* **adaptive schemes**: :func:`adaptive_steps` reads one streamed solve at the grid times, and :class:`Counted`
  counts the field's evaluations (the softmax and sphere engines).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Protocol

import torch
from torch import Tensor

from ._adaptive import AdaptiveFailure, AdaptiveSolve
from ._budget import check_run_budget
from ._errors import param
from ._options import SaveAt, StopOnConvergence
from ._progress import progress_bar
from ._trajectory import RunStats
from ._validation import InputError
from .solvers import ADAPTIVE

__all__ = ["Run", "Record", "StepFailure", "Counted", "adaptive_steps", "check_options", "time_grid"]


def check_options(save: Any, stop: Any) -> None:
    """Refuse a ``save`` that is not a SaveAt or a ``stop`` that is neither a StopOnConvergence nor None."""
    if not isinstance(save, SaveAt):
        raise InputError(f"save must be a SaveAt(...) object, got {save!r}")
    if stop is not None and not isinstance(stop, StopOnConvergence):
        raise InputError(f"stop must be StopOnConvergence(...) or None, got {stop!r}")


class StepFailure(Exception):
    """A step that cannot be taken: the run ends with ``stop_reason == "solver_failed"`` at ``(t, dt)``."""

    def __init__(self, t: float, dt: float, reason: str):
        super().__init__(reason)
        self.t, self.dt, self.reason = t, dt, reason


class Record(Protocol):
    """The engine side of a run: it steps the dynamics and keeps what the engine records."""

    def observe(self, k: int, run: Run) -> tuple[Tensor, Tensor] | None:
        """Reach state k and return, per sequence, ``(moved, scale)`` of the step the convergence test
        reads (None when this state is not tested); raise :class:`StepFailure` when it cannot be reached."""
        ...

    def keep(self, k: int) -> None:
        """Keep state k (the last one observed)."""
        ...


class Run:
    """Bookkeeping of one run over the states ``0..last`` of a batch of ``batch`` sequences.

    After :meth:`loop`: ``k`` is the last state reached, ``kept`` the kept state indices,
    ``converged_at`` (B,) the first step at which each sequence met the test (-1 if none),
    ``change`` (B,) the relative change of the last tested step, ``stop_reason``, ``message``
    and ``failed_at`` (set by a failure).
    """

    def __init__(self, save: SaveAt, stop: StopOnConvergence | None, last: int, batch: int) -> None:
        self.save, self.stop, self.last = save, stop, last
        self.k = 0
        self.kept: list[int] = []
        self._converged_at = torch.full((batch,), -1, dtype=torch.long)
        # Without a stop test, the steps' movements are tested together at the end, not one small torch call after
        # each layer (each such call finds torch's code out of cache after a layer's kernel: tens of microseconds).
        self._pending: list[tuple[int, Tensor]] = []
        self._tested: tuple[Tensor, Tensor] | None = None  # (moved, scale) of the last tested step
        self.progress = False
        self.stop_reason = "completed"
        self.message = ""
        self.failed_at: tuple[float, float] | None = None

    def keeps(self, k: int) -> bool:
        """Whether ``save`` keeps state k (a run that stops also keeps the state it stops at)."""
        return self.save.keeps(k, self.last)

    def tests(self, k: int) -> bool:
        """Whether state k needs the convergence test: every state with a stop test, else the last one."""
        return self.stop is not None or k == self.last

    def test(self, k: int, moved: Tensor, scale: Tensor) -> None:
        r"""The convergence test on step k: ``moved`` and ``scale`` (B,) are :math:`\max|\Delta z|` (per unit
        time for continuous dynamics) and :math:`\max|z|`; the test is scale-invariant. (Only the last step's
        relative change is reported: :attr:`change` divides when it is read, not at every step.)"""
        self._tested = (moved, scale)
        if self.stop is None:  # nothing reads the test before the run ends: tested in a batch (converged_at)
            self._pending.append((k, moved))
            if len(self._pending) >= 64:
                self._flush()
            return
        self._met(k, moved <= self.stop.rtol * scale)

    def _met(self, k: int, met: Tensor) -> None:
        self._converged_at.masked_fill_(met & (self._converged_at < 0), k)

    def _flush(self) -> None:
        """Test the steps held back (no stop test: exactly 0 movement), in order."""
        for k, moved in self._pending:
            self._met(k, moved == 0)
        self._pending.clear()

    @property
    def converged_at(self) -> Tensor:
        """(B,) long: the first step at which each sequence met the test, -1 where none did."""
        self._flush()
        return self._converged_at

    @property
    def change(self) -> Tensor:
        r"""(B,) the relative change :math:`\max|\Delta z| / \max|z|` of the last tested step (NaN before any)."""
        if self._tested is None:
            return torch.full((self.converged_at.shape[0],), float("nan"))
        moved, scale = self._tested
        return moved / scale.clamp_min(torch.finfo(torch.float64).tiny)

    @property
    def converged(self) -> bool:
        """Every sequence met the test (:attr:`attndyn._trajectory.RunStats.converged`)."""
        return bool((self.converged_at >= 0).all())

    @property
    def done(self) -> bool:
        """The run should stop: a stop test was asked for and every sequence met it."""
        return self.stop is not None and self.converged

    def loop(self, record: Record, *, description: str, progress: bool) -> None:
        """Observe states 0..last, keep what ``save`` asks for, stop on convergence or on a failed step."""
        self.progress = progress  # (a record may do every step at once where no bar is shown)
        with progress_bar(total=self.last, description=description, enabled=progress) as advance:
            for k in range(self.last + 1):
                try:
                    seen = record.observe(k, self)
                except StepFailure as exc:
                    self.stop_reason, self.failed_at, self.message = "solver_failed", (exc.t, exc.dt), exc.reason
                    break
                if seen is not None:
                    self.test(k, *seen)
                self.k = k
                if self.keeps(k) or self.done:
                    self._keep(record, k)
                if k > 0:
                    advance(1)
                check_run_budget(description, k, self.last)  # the explorer's budget of an edit (if one is set)
                if self.done:
                    if k < self.last:
                        self.stop_reason = "converged"  # stopped early; at the last state it simply completed
                    break
        if not self.kept or self.kept[-1] != self.k:  # a failed run keeps the last state it computed
            self._keep(record, self.k)

    def _keep(self, record: Record, k: int) -> None:
        record.keep(k)
        self.kept.append(k)

    def stats(self, *, function_evals: int, message: str) -> RunStats:
        """The :class:`~attndyn._trajectory.RunStats` of the finished run."""
        return RunStats(
            steps=self.k,
            function_evals=function_evals,
            converged=self.converged,
            converged_at=tuple(self.converged_at.tolist()),  # tolist: one call, not one tensor per sequence
            stop_reason=self.stop_reason,
            message=message,
            failed_at=self.failed_at,
            final_change=tuple(self.change.double().tolist()),
        )


def time_grid(time: float, step: float, method: str, max_steps: int) -> tuple[int, float]:
    """The grid of a run up to ``time``: N = ceil(time / step) steps of time / N, the same for softmax and the
    sphere. A fixed-step ``method`` over ``max_steps`` steps is refused (an adaptive one is counted as it goes), and
    so is a ``"discrete"`` run whose time is not a whole number of layers (its step is the model's, not a grid's)."""
    T, S = param("time", "time"), param("step", "step")  # a command line names its flags (attndyn._errors.param)
    if not math.isfinite(time / step):  # 1e308 / 0.1: no number of steps, and math.ceil(inf) would raise
        raise InputError(
            f"{T}={time:g} with {S}={step:g} needs more steps than a float can count; lower {T} or raise {S}"
        )
    N = math.ceil(time / step - 1e-9)
    if method == "discrete" and abs(time / step - round(time / step)) > 1e-9 * max(1.0, time / step):
        k, discrete = max(1, round(time / step)), param("method.discrete", 'method="discrete"')
        raise InputError(
            f"{discrete} takes whole layers of {S}={step:g} (the step is part of "
            f"the model, eq. (3)), and {T}={time:g} is {time / step:.4g} of them; give {T} = layers x {S}, e.g. "
            f"{T}={k * step:g} for {k} layers"
        )
    if method not in ADAPTIVE and N > max_steps:
        raise InputError(
            f"{T}={time:g} with {S}={step:g} needs {N:.3g} steps, over {param('max_steps.over', 'max_steps=')}{max_steps}; "
            f"lower {T} or raise {S}{param('max_steps.raise', ', or raise max_steps')}"
        )
    N = max(1, N)
    return N, time / N


class Counted:
    """Wraps a vector field to count its evaluations (``nfe``, the run's ``function_evals``)."""

    def __init__(self, f: Callable[[float, Tensor], Tensor]) -> None:
        self.f, self.nfe = f, 0

    def __call__(self, t: float, y: Tensor) -> Tensor:
        self.nfe += 1
        return self.f(t, y)


def adaptive_steps(
    f: Callable[[float, Tensor], Tensor],
    y0: Tensor,
    method: str,
    grid: Tensor,
    rtol: float,
    atol: float,
    max_steps: int,
    mask: Tensor | None = None,
) -> Callable[[int, Tensor], Tensor]:
    """``step(k, y_k) -> y_{k+1}`` of an adaptive ``method``: one :class:`~attndyn._adaptive.AdaptiveSolve` of
    ``f`` from ``y0`` over [0, T], started by the first step (a failed start is a failed step) and read at
    ``grid[k + 1]`` (no restarts); a failed solve is a :class:`StepFailure` at its ``(t, dt)``. ``mask`` (B, n):
    the real tokens, the only ones the error norm reads."""
    solve: list[AdaptiveSolve] = []

    def step(k: int, y: Tensor) -> Tensor:
        try:
            if not solve:
                tab = ADAPTIVE[method]
                solve.append(AdaptiveSolve(f, y0, 0.0, tab, rtol=rtol, atol=atol, max_steps=max_steps, mask=mask))
            return solve[0].at(grid[k + 1])
        except AdaptiveFailure as exc:
            reason = f"{method} failed at t={exc.t:.6g} with dt={exc.dt:.3g}: {exc.reason}"
            raise StepFailure(exc.t, exc.dt, reason) from None

    return step

"""Result objects: what a run recorded, and how it ended.

A trajectory holds the kept states and per-run statistics; analysis functions
(:mod:`attndyn.analysis`) read it, plots draw it, nothing here simulates.
Internally every array is batched, ``(T, B, n, d)`` with time first; the public
properties drop the batch axis when the input was one sequence.
"""

from __future__ import annotations

import html
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, overload

import torch
from torch import Tensor

__all__ = [
    "RunStats",
    "RunParams",
    "HardmaxParams",
    "SoftmaxParams",
    "Trajectory",
    "HardmaxTrajectory",
    "SoftmaxTrajectory",
]


@dataclass(frozen=True)
class RunStats:
    """How a run went.

    Attributes:
        steps: layers (hardmax) or solver steps (softmax) taken.
        function_evals: evaluations of the attention field.
        converged: every sequence met the convergence test (False if no test was asked for
            and the state still moved at the last step).
        converged_at: per sequence, the first step index at which it met the test, or -1.
        stop_reason: ``"converged"``, ``"completed"`` (all layers / the whole time span) or
            ``"solver_failed"``.
        message: a human sentence; for a failed adaptive solve it says where (t, dt).
        failed_at: ``(t, dt)`` of a failed adaptive solve, else None.
        final_change: per sequence, the relative change of the state over the last step,
            ``max|Δy| / max|y|`` (per unit time for softmax): a scale-invariant "still moving".
    """

    steps: int
    function_evals: int
    converged: bool
    converged_at: tuple[int, ...]
    stop_reason: str
    message: str = ""
    failed_at: tuple[float, float] | None = None
    final_change: tuple[float, ...] = ()


_MAPPING_DEPRECATED = (
    "reading run parameters as a mapping (params['alpha'], dict(params), iterating them) is deprecated "
    "and goes in the next release: read the field (params.alpha) or vars(params)"
)


@dataclass(frozen=True, eq=False)  # eq=False: compared as mappings (field name -> value)
class RunParams(Mapping[str, Any]):
    """The settings a run was made with, as typed fields (``traj.params.alpha``; ``vars(traj.params)``
    for all of them as a dict).

    Deprecated: reading them as a mapping (``traj.params["alpha"]``, ``dict(traj.params)``, iterating)
    still works but warns (:class:`DeprecationWarning`) and goes in the next release.
    """

    def _names(self) -> tuple[str, ...]:
        return tuple(f.name for f in fields(self))

    def __getitem__(self, key: str) -> Any:
        warnings.warn(_MAPPING_DEPRECATED, DeprecationWarning, stacklevel=2)
        if key not in self._names():
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        warnings.warn(_MAPPING_DEPRECATED, DeprecationWarning, stacklevel=2)
        return iter(self._names())

    def __len__(self) -> int:
        warnings.warn(_MAPPING_DEPRECATED, DeprecationWarning, stacklevel=2)
        return len(self._names())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Mapping):
            return NotImplemented
        theirs = vars(other) if isinstance(other, RunParams) else dict(other.items())
        return bool(vars(self) == theirs)


@dataclass(frozen=True, eq=False)
class HardmaxParams(RunParams):
    r"""The settings of a hardmax run, eq. (1.1) of the hardmax paper.

    Attributes:
        alpha: step size :math:`\alpha`; a layer moves a token :math:`\alpha/(1+\alpha)` of the way
            to the mean of the tokens it follows.
        A: ``(d, d)`` matrix of the scores :math:`\langle A z_i, z_j\rangle` (identity when none was given).
        tol: tie tolerance (0: the paper's exact rule).
        layers: layers asked for (the run may stop earlier, see ``stats.steps``).
        causal: token i attended to tokens :math:`j \le i` only (the argmax set :math:`C_i` over them).

    >>> import attndyn
    >>> p = attndyn.hardmax([[1.0, 0.0], [0.0, 1.0]], alpha=0.5, layers=2).params
    >>> p.alpha, p.layers, sorted(vars(p))
    (0.5, 2, ['A', 'alpha', 'causal', 'layers', 'tol'])
    """

    alpha: float
    A: Tensor
    tol: float
    layers: int
    causal: bool = False


@dataclass(frozen=True, eq=False)
class SoftmaxParams(RunParams):
    r"""The settings of a softmax run (softmax paper eqs. (1)-(4)).

    Attributes:
        Q, K: ``(H, d_q, d)`` query and key matrices, one per head.
        V: ``(H, d, d)`` value matrices.
        beta: inverse temperature of eq. (2).
        rescaled: the run evolved :math:`z = e^{-tV}x` (eq. (4) or Remark 4), not x.
        method: the integration scheme (``"discrete"``, ``"rk4"``, ``"dopri5"``, ...).
        step: the grid spacing actually used, ``time / ceil(time / step)``.
        time: the final time asked for.
        causal: token i attended to tokens :math:`j \le i` only.
    """

    Q: Tensor
    K: Tensor
    V: Tensor
    beta: float
    rescaled: bool
    method: str
    step: float
    time: float
    causal: bool = False

    @property
    def layer_step(self) -> float | None:
        r"""The :math:`\Delta t` of a rescaled discrete run (Remark 4), whose scores see :math:`R^k z`; else None."""
        return self.step if self.rescaled and self.method == "discrete" else None


def _sequence_of(x: Tensor | None, b: int, *, over_time: bool = False) -> Tensor | None:
    """Sequence ``b`` of the batched tensor ``x``, kept as a batch of one (the batch axis is axis 1 when
    ``over_time``: one row per kept time); None stays None."""
    if x is None:
        return None
    return x[:, b : b + 1] if over_time else x[b : b + 1]


@dataclass(frozen=True, repr=False)  # the short __repr__ of Trajectory; _repr_html_ is the rich view
class Trajectory:
    """Kept states of a run. ``ts`` are layer indices (hardmax) or times (softmax)."""

    ts: Tensor  # (T,)
    ys: Tensor  # (T, B, n, d)
    batched: bool
    stats: RunStats
    mask: Tensor | None = None  # (B, n), True for real tokens
    params: Mapping[str, Any] = field(default_factory=dict)  # the run's settings; typed in the subclasses

    # ---- shapes that mirror the input ------------------------------------------------
    @overload
    def _unbatch(self, t: Tensor, axis: int) -> Tensor: ...
    @overload
    def _unbatch(self, t: None, axis: int) -> None: ...
    def _unbatch(self, t: Tensor | None, axis: int) -> Tensor | None:
        if t is None or self.batched:
            return t
        return t.select(axis, 0)

    @property
    def tokens(self) -> Tensor:
        """Kept states, ``(T, n, d)`` for one sequence or ``(T, B, n, d)`` for a batch."""
        return self._unbatch(self.ys, 1)

    @property
    def final_tokens(self) -> Tensor:
        """The last state, ``(n, d)`` or ``(B, n, d)``."""
        return self._unbatch(self.ys[-1], 0)

    @property
    def initial_tokens(self) -> Tensor:
        return self._unbatch(self.ys[0], 0)

    @property
    def batch_size(self) -> int:
        return self.ys.shape[1]

    @property
    def n_tokens(self) -> int:
        return self.ys.shape[2]

    @property
    def dim(self) -> int:
        return self.ys.shape[3]

    def real_tokens(self, b: int = 0) -> Tensor:
        """Indices of the non-padding tokens of sequence ``b``."""
        if self.mask is None:
            return torch.arange(self.n_tokens)
        return torch.nonzero(self.mask[b]).flatten().cpu()

    def _select_fields(self, b: int) -> dict[str, Any]:
        return {}

    def sequence(self, b: int) -> Trajectory:
        """The trajectory of sequence ``b`` of a batch, as a one-sequence trajectory."""
        if not 0 <= b < self.batch_size:
            raise IndexError(f"sequence index {b} out of range for a batch of {self.batch_size}")
        stats = replace(
            self.stats,
            converged_at=(self.stats.converged_at[b],),
            final_change=self.stats.final_change[b : b + 1],
            converged=self.stats.converged_at[b] >= 0 or self.stats.converged,
        )
        return replace(
            self,
            ys=self.ys[:, b : b + 1],
            batched=False,
            stats=stats,
            mask=_sequence_of(self.mask, b),
            **self._select_fields(b),
        )

    def __len__(self) -> int:
        return self.ys.shape[0]

    def __repr__(self) -> str:
        """One line: kind, kept states and shape, steps, how the run ended (never the tensors).

        >>> import attndyn
        >>> attndyn.hardmax([[1.0, 0.0], [0.0, 1.0], [0.2, 0.2]], alpha=0.5, layers=4)
        HardmaxTrajectory(5 states of (3, 2) tokens, 4 steps, stop_reason='completed', converged=False)
        """
        shape = tuple(self.ys.shape[1:] if self.batched else self.ys.shape[2:])
        return (
            f"{type(self).__name__}({len(self)} states of {shape} tokens{' (batch, n, d)' if self.batched else ''}, "
            f"{self.stats.steps} steps, stop_reason={self.stats.stop_reason!r}, converged={self.stats.converged})"
        )

    def _repr_html_(self) -> str:  # notebooks
        kind = type(self).__name__
        shape = tuple(self.tokens.shape)
        rows = "".join(
            f"<tr><th style='text-align:left'>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
            for k, v in [
                ("kept states × shape", shape),
                ("steps", self.stats.steps),
                ("function evaluations", self.stats.function_evals),
                ("converged", self.stats.converged),
                ("stop reason", self.stats.stop_reason),
                ("message", self.stats.message),
            ]
        )
        return f"<div><strong>{html.escape(kind)}</strong><table>{rows}</table></div>"


@dataclass(frozen=True, repr=False)  # the short __repr__ of Trajectory; _repr_html_ is the rich view
class HardmaxTrajectory(Trajectory):
    """Trajectory of the hardmax dynamics, eq. (1.1) of the hardmax paper.

    Attributes:
        leader_since: ``(B, n)`` int, the first layer k with :math:`C_i(Z^k) = \\{i\\}` by a
            margin larger than the rounding bound (:mod:`attndyn.margins`), or -1.
        leader_margin: ``(B, n)`` float, the computed margin :math:`\\hat\\mu_i` at layer
            ``leader_since`` (NaN for tokens that never led).
        leader_mask: ``(T, B, n)`` bool, the leaders certified at each kept layer (:math:`C_i = \\{i\\}` there by a
            margin above the rounding bound; a leader whose follower has reached its float value ties with it and
            drops out of the mask, though it leads still: ``leader_since`` keeps it).
        rounding_at: ``(E, 3)`` int, one row ``(sequence, token, layer)`` per layer at which the
            engine found :math:`C_i = \\{i\\}` for a token not yet known to lead, with a margin
            within the rounding bound: decided by rounding, not reported as a leader.
        rounding_margin: ``(E, 2)`` float, the margin and the bound of each such event.
        follow: ``(T, B, n, n)`` bool follow sets at kept layers (only with ``SaveAt(follow=True)``).
        params: the run's settings (:class:`HardmaxParams`).
    """

    params: HardmaxParams = field(kw_only=True)
    leader_since: Tensor | None = None
    leader_mask: Tensor | None = None
    follow: Tensor | None = None
    leader_margin: Tensor | None = None
    rounding_at: Tensor | None = None
    rounding_margin: Tensor | None = None

    @property
    def layers(self) -> Tensor:
        return self.ts

    def _select_fields(self, b: int) -> dict[str, Any]:
        return {
            "leader_since": _sequence_of(self.leader_since, b),
            "leader_mask": _sequence_of(self.leader_mask, b, over_time=True),
            "follow": _sequence_of(self.follow, b, over_time=True),
            "leader_margin": _sequence_of(self.leader_margin, b),
            **self._select_rounding(b),
        }

    def _select_rounding(self, b: int) -> dict[str, Any]:
        if self.rounding_at is None or self.rounding_margin is None:
            return {}
        keep = self.rounding_at[:, 0] == b
        at = self.rounding_at[keep].clone()
        at[:, 0] = 0
        return {"rounding_at": at, "rounding_margin": self.rounding_margin[keep]}


@dataclass(frozen=True, repr=False)  # the short __repr__ of Trajectory; _repr_html_ is the rich view
class SoftmaxTrajectory(Trajectory):
    """Trajectory of the softmax dynamics (softmax paper eqs. (1), (3), (4)).

    ``ys`` are the original tokens x(t), or the rescaled z(t) when ``params.rescaled``
    (``params``: the run's settings, :class:`SoftmaxParams`).
    ``attention``: ``(T, B, n, n)`` or, with several heads, ``(T, B, H, n, n)`` at kept times
    (only with ``SaveAt(attention=True)``); ``attention_final`` the final matrix (only with
    ``SaveAt(final_attention=True)`` or ``attention=True``).
    ``leader_since``: ``(B, n)`` int, for each token whose attention row peaks strictly on itself
    (first head) at the end of the run, the first grid step from which it has done so at every
    step; -1 for the others. Tracked during the run, whatever is saved.
    """

    params: SoftmaxParams = field(kw_only=True)
    attention: Tensor | None = None
    attention_final: Tensor | None = None
    leader_since: Tensor | None = None

    @property
    def times(self) -> Tensor:
        return self.ts

    def _select_fields(self, b: int) -> dict[str, Any]:
        return {
            "attention": _sequence_of(self.attention, b, over_time=True),
            "attention_final": _sequence_of(self.attention_final, b),
            "leader_since": _sequence_of(self.leader_since, b),
        }

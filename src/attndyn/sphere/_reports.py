r"""Reports that read a finished run on the sphere and give a verdict that can fail (like
:func:`attndyn.hardmax_theorem`): each has ``hypotheses`` (reported, not required), ``applies`` (all of them
hold), ``holds`` (the conclusion, measured) and a JSON-able ``record()``.

* :func:`energy_report`: :math:`E_\beta` never decreases along USA with :math:`Q = K = V = I`
  (arXiv 2312.10794, Section 2: USA is a gradient ascent of :math:`E_\beta`).
* :func:`orthogonal_start_report`: tokens that start pairwise orthogonal keep one common inner product
  :math:`\gamma(t)`, the solution of the ODE of :func:`attndyn.sphere.gamma_curve` (Section 6).
* :func:`cluster_report`: the clusters at the end (angular threshold stated), the fraction of clustered pairs,
  the Kuramoto order parameter, the cluster count as a staircase with each plateau's duration (metastability),
  and whether one cluster formed, as the theory predicts for :math:`Q = K = V = I` when d ≥ 3 or on the circle
  for small β (Part 2 of the paper, Sections 4–7).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import torch

from .._errors import plain
from .._validation import InputError
from ._stability import unstable_step
from ._theory import _delta, clustered_fraction, energy, gamma_curve, kuramoto, plateaus, sphere_clusters
from ._trajectory import SphereTrajectory


def _check(traj: Any, b: int) -> SphereTrajectory:
    if not isinstance(traj, SphereTrajectory):
        raise InputError(f"expected a SphereTrajectory (from attndyn.sphere.evolve), got {type(traj).__name__}")
    if isinstance(b, bool) or not isinstance(b, int) or not 0 <= b < traj.batch_size:
        raise InputError(f"sequence index {b!r} out of range for a batch of {traj.batch_size}")
    return traj


def _plain(traj: SphereTrajectory) -> dict[str, bool]:
    """The hypotheses every theorem here shares: the continuous model, no noise, no mask, no causal mask."""
    p = traj.params
    return {
        "continuous": p.method != "discrete",
        "no_noise": p.noise == 0,
        "no_mask": traj.mask is None and not p.causal,
        "identity_QKV": p.identity,
    }


#: The orthogonal start is checked to this many units of rounding of the run's dtype (1e-12 in float64 was
#: absolute: a float32 run from a rotated orthonormal frame "did not apply").
ORTHOGONAL_ULPS = 4096


class _Report:
    """What every report here shares: its ``theorem``, ``applies`` when every one of its ``hypotheses`` holds (they
    are reported, not required), and ``record()``: these, ``holds`` and what the report measured."""

    theorem: ClassVar[str]
    hypotheses: dict[str, bool]
    undecided: str | None

    @property
    def applies(self) -> bool:
        return all(self.hypotheses.values())

    @property
    def measured_holds(self) -> bool:
        """The conclusion as the kept states show it, decided or not."""
        raise NotImplementedError

    @property
    def holds(self) -> bool | None:
        """The verdict: None when the run cannot decide it (``undecided`` says why), else :attr:`measured_holds`."""
        return None if self.undecided else self.measured_holds

    def _details(self) -> dict[str, Any]:
        raise NotImplementedError

    def record(self) -> dict[str, Any]:
        return {
            "theorem": self.theorem,
            "hypotheses": self.hypotheses,
            "applies": self.applies,
            "holds": self.holds,
            "measured_holds": self.measured_holds,
            "undecided": self.undecided,
            **self._details(),
        }


def _undecided(traj: SphereTrajectory, least_states: int = 1) -> str | None:
    """Why a run cannot decide a verdict: it failed before its horizon (the verdicts read the whole run), it
    kept fewer than ``least_states`` states, or its fixed step is beyond the scheme's stability interval for the
    field (:func:`~attndyn.sphere._stability.unstable_step`: the run can be integration error)."""
    unstable = unstable_step(traj.params)
    if unstable is not None:
        return plain(unstable)
    if traj.stats.stop_reason == "solver_failed":
        return (
            f"the run failed at t = {float(traj.ts[-1]):g} before its horizon ({traj.stats.message}); "
            "a verdict needs the whole run"
        )
    if len(traj.ts) < least_states:
        return f"{len(traj.ts)} kept state(s), {least_states} needed; keep more (save=SaveAt(every=k))"
    return None


@dataclass(frozen=True)
class EnergyReport(_Report):
    r""":math:`E_\beta` at every kept time of sequence b, and whether it never decreased (up to ``rtol`` of its
    size: rounding). ``largest_drop``: the largest relative decrease between two kept times (0 if none)."""

    theorem: ClassVar[str] = "E_beta is nondecreasing along USA with Q = K = V = I (arXiv 2312.10794, Section 2)"
    hypotheses: dict[str, bool]
    times: list[float]
    energies: list[float]
    largest_drop: float
    rtol: float
    beta: float
    undecided: str | None = None

    @property
    def measured_holds(self) -> bool:
        return self.largest_drop <= self.rtol

    def _details(self) -> dict[str, Any]:
        return {
            "largest_drop": self.largest_drop,
            "rtol": self.rtol,
            "initial": self.energies[0],
            "final": self.energies[-1],
        }


def energy_report(traj: SphereTrajectory, b: int = 0, *, rtol: float | None = None) -> EnergyReport:
    r"""The interaction energy :math:`E_\beta` along sequence ``b`` and the monotonicity verdict; a decrease of at
    most ``rtol`` of the energy is rounding (default: 1e-12 for float64 runs, 1e-5 for float32)."""
    traj = _check(traj, b)
    if rtol is None:
        rtol = 1e-12 if traj.ys.dtype == torch.float64 else 1e-5
    _tolerance(rtol, "rtol")
    beta = float(traj.params.beta[b])
    x = traj.ys[:, b][:, traj.real_tokens(b)].double().cpu()  # (T, n', d): the tokens the dynamics moves
    e = energy(x, beta)  # (T,)
    scale = _energy_scale(x, beta, e)
    drops = ((e[:-1] - e[1:]) / scale[:-1]).clamp_min(0) if len(e) > 1 else torch.zeros(1, dtype=torch.float64)
    hyp = {**_plain(traj), "usa": traj.params.attention == "usa"}
    return EnergyReport(
        hyp, traj.ts.tolist(), e.tolist(), float(drops.max()), rtol, beta, undecided=_undecided(traj, 2)
    )


def _energy_scale(x: torch.Tensor, beta: float, e: torch.Tensor) -> torch.Tensor:
    r"""The size of the terms of :math:`E_\beta` at each kept time, what its rounding is relative to: :math:`|E|`
    for :math:`\beta \ne 0` (its terms :math:`e^{\beta\langle x_i, x_j\rangle}/(2\beta n^2)` share one sign), and
    :math:`\frac{1}{2n^2}\sum_{i,j}|\langle x_i, x_j\rangle|` at :math:`\beta = 0`, where :math:`E_0 =
    |\bar x|^2/2` may be 0 (balanced tokens) while its terms are not."""
    if beta != 0:
        return e.abs().clamp_min(torch.finfo(torch.float64).tiny)
    n = x.shape[-2]
    terms = (x @ x.transpose(-1, -2)).abs().sum(dim=(-1, -2)) / (2 * n * n)
    return terms.clamp_min(torch.finfo(torch.float64).tiny)


def _tolerance(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise InputError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class OrthogonalStartReport(_Report):
    r"""Sequence b against :math:`\gamma(t)`: ``measured`` the mean of :math:`\langle x_i, x_j\rangle` over
    :math:`i \ne j` at the kept times, ``spread`` the largest deviation of one pair from that mean, ``predicted``
    :math:`\gamma` there; ``error`` the largest of :math:`|\mathrm{measured} - \gamma|` and the spread."""

    theorem: ClassVar[str] = (
        "orthogonal start: one common inner product gamma(t) solving the gamma ODE (arXiv 2312.10794, Section 6)"
    )
    hypotheses: dict[str, bool]
    times: list[float]
    measured: list[float]
    predicted: list[float]
    spread: float
    error: float
    tol: float
    undecided: str | None = None

    @property
    def measured_holds(self) -> bool:
        return self.error <= self.tol

    def _details(self) -> dict[str, Any]:
        return {
            "error": self.error,
            "tol": self.tol,
            "final_gamma": self.measured[-1],
        }


def orthogonal_start_report(traj: SphereTrajectory, b: int = 0, *, tol: float = 1e-6) -> OrthogonalStartReport:
    r"""Compare sequence ``b`` with the solution of the :math:`\gamma` ODE (scipy's DOP853 at rtol 1e-11)."""
    traj = _check(traj, b)
    _tolerance(tol, "tol")
    x = traj.ys[:, b].double().cpu()  # (T, n, d)
    n = x.shape[1]
    if n < 2:
        raise InputError("the orthogonal-start check needs at least 2 tokens")
    ortho_tol = ORTHOGONAL_ULPS * torch.finfo(traj.ys.dtype).eps  # the start's rounding in the run's dtype
    g = x @ x.transpose(-1, -2)  # (T, n, n)
    off = ~torch.eye(n, dtype=torch.bool)
    pairs = g[:, off]  # (T, n(n-1))
    mean = pairs.mean(dim=1)
    beta = float(traj.params.beta[b])
    gam = gamma_curve(traj.ts.double().numpy(), n, beta)
    hyp = {
        **_plain(traj),
        "sa": traj.params.attention == "sa",
        "orthogonal_start": bool((g[0] - torch.eye(n, dtype=g.dtype)).abs().max() <= ortho_tol),
    }
    spread = float((pairs - mean[:, None]).abs().max())
    error = max(float(np.max(np.abs(mean.numpy() - gam))), spread)
    return OrthogonalStartReport(
        hyp, traj.ts.tolist(), mean.tolist(), gam.tolist(), spread, error, tol, undecided=_undecided(traj)
    )


@dataclass(frozen=True)
class ClusterReport(_Report):
    r"""Clusters of sequence b at the end (tokens within ``angle`` radians, linked; each a sorted list of token
    indices, padding left out), the fraction of pairs with
    :math:`\langle x_i, x_j\rangle > 1 - \delta`, the order parameter, and the cluster count over the kept times
    as plateaus (``staircase``: value, start, end, duration)."""

    theorem: ClassVar[str] = (
        "one cluster for Q = K = V = I and beta >= 0 when d >= 3, or d = 2 and beta <= 1 (arXiv 2312.10794, Sections 4-7)"
    )
    hypotheses: dict[str, bool]
    angle: float
    delta: float
    clusters: list[list[int]]
    clustered_fraction: float
    order_parameter: float
    staircase: list[dict[str, float]] = field(default_factory=list)
    undecided: str | None = None

    @property
    def measured_holds(self) -> bool:
        """One cluster at the end of the run."""
        return len(self.clusters) == 1

    @property
    def longest_plateau(self) -> dict[str, float] | None:
        """The longest plateau of the count above one cluster (a metastable state), or None."""
        meta = [p for p in self.staircase if p["value"] > 1]
        return max(meta, key=lambda p: p["duration"]) if meta else None

    def _details(self) -> dict[str, Any]:
        return {
            "angle": self.angle,
            "delta": self.delta,
            "clusters": len(self.clusters),
            "clustered_fraction": self.clustered_fraction,
            "order_parameter": self.order_parameter,
            "staircase": self.staircase,
        }


def cluster_report(traj: SphereTrajectory, b: int = 0, *, angle: float = 1e-3, delta: float = 1e-3) -> ClusterReport:
    r"""Clusters (linked within ``angle`` radians, numbered by token index: a masked run leaves the padding out
    and keeps the real tokens' indices) and the other statistics of sequence ``b``."""
    traj = _check(traj, b)
    if isinstance(angle, bool) or not isinstance(angle, (int, float)) or not 0 < angle < math.pi:
        raise InputError(f"angle must be a number in (0, pi), got {angle!r}")
    delta = _delta(delta)
    real = traj.real_tokens(b)
    x = traj.ys[:, b][:, real].double().cpu()  # (T, n', d)
    counts = [len(sphere_clusters(xt, angle)) for xt in x]
    beta = float(traj.params.beta[b])
    d = traj.dim
    hyp = {**_plain(traj), "beta>=0 and (d>=3 or (d=2 and beta<=1))": beta >= 0 and (d >= 3 or (d == 2 and beta <= 1))}
    return ClusterReport(
        hyp,
        float(angle),
        float(delta),
        [[int(real[k]) for k in c] for c in sphere_clusters(x[-1], angle)],  # positions among real -> indices
        float(clustered_fraction(x[-1], delta)),
        float(kuramoto(x[-1])),
        plateaus(traj.ts.tolist(), counts),
        undecided=_undecided(traj),
    )

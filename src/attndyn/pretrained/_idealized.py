r"""The softmax paper's idealized model on real weights.

One real head's matrices, shared by every layer (as ALBERT shares them):
:math:`Q = W_Q^h`, :math:`K = W_K^h` (d_h x d), :math:`V = W_O^h W_V^h` (d x d), inverse temperature
:math:`\beta = 1/\sqrt{d_h}` (the model's own scaling of the scores), biases, layer normalization and
the MLP dropped. The tokens entering layer :math:`\ell` of the real model start the rescaled dynamics,
eq. (4) of the softmax paper, run by :func:`attndyn.softmax`; :func:`attndyn.softmax_geometry` names
the Table 1 regime of (Q, K, V) and measures whether the limit geometry its theorem predicts is
reached. By default the head is the first head of the layer that forms a good triple (Theorem 4.1
then predicts at most three parallel hyperplanes), else head 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._softmax import softmax
from .._threads import limit_threads
from .._trajectory import SoftmaxTrajectory
from .._validation import InputError
from ..analysis import GeometryReport, is_good_triple, is_paranormal, leading_direction, softmax_geometry
from ._adapter import Forward, LayerWeights

__all__ = ["IdealizedRun", "idealized_run"]


@dataclass(frozen=True)
class IdealizedRun:
    layer: int
    head: int
    start: int
    choice: str
    good_triple: bool
    paranormal: bool
    lambda_1: float | None  # the real, positive, simple leading eigenvalue of V, when there is one
    time: float
    step: float
    report: GeometryReport
    trajectory: SoftmaxTrajectory

    @property
    def regime(self) -> str:
        return self.report.regime

    def record(self) -> dict[str, Any]:
        rep = self.report.record()
        rep["measured"] = {k: v for k, v in rep["measured"].items() if k != "phi_1"}  # a d-vector: too long for JSON
        return {
            "layer": self.layer,
            "head": self.head,
            "start_depth": self.start,
            "choice": self.choice,
            "good_triple": self.good_triple,
            "paranormal": self.paranormal,
            "lambda_1": self.lambda_1,
            "time": self.time,
            "step": self.step,
            "regime": self.regime,
            "statement": rep["statement"],
            "holds": rep["holds"],  # None while the tokens still move (the library's gate): never a refutation
            "measured_holds": rep["measured_holds"],
            "undecided": rep["undecided"],
            "measured": rep["measured"],
            "converged": self.trajectory.stats.converged,
            "final_change": self.trajectory.stats.final_change[0],
        }


def _reduced(w: LayerWeights, h: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    Wo = w.W_O[h].numpy()
    return w.W_Q[h].numpy() @ Wo, w.W_K[h].numpy() @ Wo, w.W_V[h].numpy() @ Wo


def _pick_head(weights: list[LayerWeights], layer: int | None, head: int | None) -> tuple[int, int, str]:
    """The head (layer, head) of :func:`idealized_run` and how it was chosen: as given, else the first head of
    ``layer`` (of any layer, in layer order, when ``layer`` is None too) whose reduced (Q, K, V) form a good
    triple (softmax paper, Definition 1), else head 0 of ``layer`` (of layer 0)."""
    if head is not None:
        if layer is None:
            raise InputError("head is given without layer; give both (layer=l, head=h) or neither")
        return layer, head, "given"
    where = range(len(weights)) if layer is None else [layer]
    good = [(ell, h) for ell in where for h in range(weights[0].heads) if is_good_triple(*_reduced(weights[ell], h))]
    if good:
        return good[0][0], good[0][1], "first good-triple head" + (" of the layer" if layer is not None else "")
    return layer or 0, 0, "head 0 (no good triple)"


def idealized_run(
    fwd: Forward,
    weights: list[LayerWeights],
    *,
    layer: int | None = None,
    head: int | None = None,
    start: int = 0,
    horizon: float = 12.0,
    steps: int = 120,
) -> IdealizedRun:
    r"""Run the rescaled transformer (Remark 4, the discrete form of eq. (4)) with head (``layer``, ``head``)'s
    (Q, K, V) in every layer, from the tokens entering layer ``start`` (0: the embeddings).

    ``head=None`` picks the first head of ``layer`` that forms a good triple, or, with ``layer=None`` too,
    the first such head in layer order. Time is measured in units of the spectral radius rho of V:
    ``time = horizon / rho`` in ``steps`` layers (a positive multiple of V only rescales time).
    """
    L, H = len(weights), weights[0].heads
    for name, index in (("layer", layer), ("head", head)):
        if index is not None and (isinstance(index, bool) or not isinstance(index, (int, np.integer))):
            raise InputError(f"{name} must be an integer index (or None), got {index!r}")
    if layer is not None and not 0 <= layer < L:
        raise InputError(f"layer={layer} is out of range; the model has layers 0..{L - 1}")
    if not 0 <= start <= L:
        raise InputError(f"start={start} is out of range; token states exist at depths 0..{L}")
    with limit_threads(torch_threads=1, blas_threads=1):
        layer, head, choice = _pick_head(weights, layer, head)
        w = weights[layer]
        if not 0 <= head < H:
            raise InputError(f"head={head} is out of range; the model has heads 0..{H - 1}")
        Qr, Kr, Vr = _reduced(w, head)
        lead = leading_direction(Vr)
        rho = float(np.abs(np.linalg.eigvals(Vr)).max())
        if rho == 0:
            raise InputError(f"head ({layer}, {head}) has a zero value matrix; choose another head")
        V = w.ov(head)
        time = horizon / rho
        traj = softmax(
            fwd.hidden[start],
            time=time,
            step=time / steps,
            Q=w.W_Q[head],
            K=w.W_K[head],
            V=V,
            beta=1.0 / np.sqrt(w.head_dim),
            rescaled=True,
            method="discrete",
        )
        report = softmax_geometry(traj)
    return IdealizedRun(
        layer=layer,
        head=head,
        start=start,
        choice=choice,
        good_triple=is_good_triple(Qr, Kr, Vr),
        paranormal=is_paranormal(Vr),
        lambda_1=None if lead is None else lead[0],
        time=time,
        step=time / steps,
        report=report,
        trajectory=traj,
    )

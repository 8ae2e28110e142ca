r"""Spectra of a pretrained model's value matrices, and the softmax paper's Definitions 1 and 2 on them.

The softmax paper's Section 4 assumes a value matrix V whose eigenvalue of largest modulus is real,
positive and simple, with :math:`\langle Q\varphi_1, K\varphi_1\rangle > 0` (a *good triple*,
Definition 1); it notes that some pretrained ALBERT value matrices satisfy it (its Figure 10).
For each layer :math:`\ell` and head :math:`h` this module reads:

- the layer's value matrix :math:`W_V` (d x d), with the layer's :math:`W_Q, W_K` (d x d): then
  :math:`\langle Q\varphi, K\varphi\rangle = \sum_h\langle W_Q^h\varphi, W_K^h\varphi\rangle`;
- each head's value matrix in the residual stream, :math:`V^h = W_O^h W_V^h` (d x d, rank d_h),
  with :math:`Q = W_Q^h, K = W_K^h`. Its nonzero eigenvalues are those of the d_h x d_h matrix
  :math:`W_V^h W_O^h`, with eigenvectors :math:`\varphi = W_O^h u`; so the reduced triple
  :math:`(W_Q^h W_O^h,\ W_K^h W_O^h,\ W_V^h W_O^h)` is a good triple (paranormal) exactly when
  :math:`(W_Q^h, W_K^h, V^h)` is (nonzero Jordan structures of AB and BA agree), and is checked
  instead (tests compare the two on small models).

Verdicts come from :func:`attndyn.is_good_triple`, :func:`attndyn.is_paranormal` and
:func:`attndyn.analysis.leading_direction` (the spectral half of Definition 1). Beside them: the same
fraction for random matrices of the same shapes, real Ginibre at d for the layers (the softmax
paper's "about 14%" statistic, :func:`attndyn.experiments._samplers.ginibre_leading_count`) and
products of Gaussian factors of the heads' shapes for the heads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .._threads import limit_threads
from ..analysis import is_good_triple, is_paranormal, leading_direction
from ..experiments._samplers import ginibre_leading_count
from ..experiments._statistics import wilson_interval
from ._adapter import LayerWeights

if TYPE_CHECKING:
    from torch import Tensor

__all__ = ["Spectra", "spectra"]


def _np(t: Tensor) -> np.ndarray:
    return t.detach().cpu().numpy().astype(np.float64)


@dataclass(frozen=True)
class Spectra:
    """Eigenvalues and verdicts per layer (L,) and per head (L, H); ``baseline`` the random fractions."""

    layer_eigenvalues: list[np.ndarray]  # L arrays (d,), complex
    head_eigenvalues: list[list[np.ndarray]]  # L x H arrays (d_h,), the nonzero spectrum of W_O^h W_V^h
    layer_leading: np.ndarray  # (L,) lambda_1 real, positive, simple
    layer_good: np.ndarray
    layer_paranormal: np.ndarray
    head_leading: np.ndarray  # (L, H)
    head_good: np.ndarray
    head_paranormal: np.ndarray
    baseline: dict[str, Any] = field(default_factory=dict)

    def fractions(self) -> dict[str, dict[str, float]]:
        return {
            "layers": {
                "leading_real_positive_simple": float(self.layer_leading.mean()),
                "good_triple": float(self.layer_good.mean()),
                "paranormal": float(self.layer_paranormal.mean()),
            },
            "heads": {
                "leading_real_positive_simple": float(self.head_leading.mean()),
                "good_triple": float(self.head_good.mean()),
                "paranormal": float(self.head_paranormal.mean()),
            },
        }

    def per_layer_head_fractions(self) -> dict[str, list[float]]:
        """For each layer, the fraction of its heads that satisfy each condition."""
        return {
            "leading_real_positive_simple": self.head_leading.mean(axis=1).tolist(),
            "good_triple": self.head_good.mean(axis=1).tolist(),
            "paranormal": self.head_paranormal.mean(axis=1).tolist(),
        }

    def record(self) -> dict[str, Any]:
        def lead(ev: np.ndarray) -> list[float]:
            e = ev[np.argmax(np.abs(ev))]
            return [float(e.real), float(e.imag)]

        return {
            "fractions": self.fractions(),
            "per_layer_head_fractions": self.per_layer_head_fractions(),
            "layers": [
                {
                    "layer": ell,
                    "leading_eigenvalue": lead(ev),
                    "spectral_radius": float(np.abs(ev).max()),
                    "leading_real_positive_simple": bool(self.layer_leading[ell]),
                    "good_triple": bool(self.layer_good[ell]),
                    "paranormal": bool(self.layer_paranormal[ell]),
                }
                for ell, ev in enumerate(self.layer_eigenvalues)
            ],
            "heads": [
                [
                    {
                        "leading_eigenvalue": lead(ev),
                        "good_triple": bool(self.head_good[ell, h]),
                        "leading_real_positive_simple": bool(self.head_leading[ell, h]),
                        "paranormal": bool(self.head_paranormal[ell, h]),
                    }
                    for h, ev in enumerate(row)
                ]
                for ell, row in enumerate(self.head_eigenvalues)
            ],
            "baseline": self.baseline,
        }


def _baseline(d: int, H: int, samples: int, head_samples: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {}
    if samples > 0:
        k = ginibre_leading_count(rng, d, samples)
        out["layers"] = {
            "ensemble": f"real Ginibre, d = {d}",
            "samples": samples,
            "fraction": k / samples,
            "interval_99": list(wilson_interval(k, samples, confidence_level=0.99)),
        }
    if head_samples > 0:
        d_h = d // H
        k = sum(
            leading_direction(rng.standard_normal((d_h, d)) @ rng.standard_normal((d, d_h))) is not None
            for _ in range(head_samples)
        )
        out["heads"] = {
            "ensemble": f"G1 G2, G1 ({d_h} x {d}), G2 ({d} x {d_h}) Gaussian (the nonzero spectrum of a "
            f"random W_O W_V of rank {d_h})",
            "samples": head_samples,
            "fraction": k / head_samples,
            "interval_99": list(wilson_interval(k, head_samples, confidence_level=0.99)),
        }
    return out


def spectra(
    weights: list[LayerWeights], *, ginibre_samples: int = 0, head_samples: int = 400, seed: int = 0
) -> Spectra:
    """Eigenvalues of every layer's W_V and every head's W_O^h W_V^h, their Definition 1/2 verdicts, and the
    random baselines (``ginibre_samples`` d x d Ginibre matrices, ``head_samples`` Gaussian products; 0 skips)."""
    with limit_threads(blas_threads=1):
        lev, hev, ll, lg, lp, hl, hg, hp = [], [], [], [], [], [], [], []
        for w in weights:
            Q, K, V = _np(w.query), _np(w.key), _np(w.value)
            lev.append(np.linalg.eigvals(V))
            ll.append(leading_direction(V) is not None)
            lg.append(ll[-1] and is_good_triple(Q, K, V))  # Definition 1 needs the leading eigenvalue first
            lp.append(is_paranormal(V))
            row, rl, rg, rp = [], [], [], []
            for h in range(w.heads):
                Wo = _np(w.W_O[h])  # (d, d_h)
                Vr, Qr, Kr = _np(w.W_V[h]) @ Wo, _np(w.W_Q[h]) @ Wo, _np(w.W_K[h]) @ Wo  # (d_h, d_h) each
                row.append(np.linalg.eigvals(Vr))
                rl.append(leading_direction(Vr) is not None)
                rg.append(is_good_triple(Qr, Kr, Vr))
                rp.append(is_paranormal(Vr))
            hev.append(row)
            hl.append(rl)
            hg.append(rg)
            hp.append(rp)
        d, H = weights[0].W_Q.shape[-1], weights[0].heads
        base = _baseline(d, H, ginibre_samples, head_samples, seed)
    return Spectra(
        layer_eigenvalues=lev,
        head_eigenvalues=hev,
        layer_leading=np.array(ll),
        layer_good=np.array(lg),
        layer_paranormal=np.array(lp),
        head_leading=np.array(hl),
        head_good=np.array(hg),
        head_paranormal=np.array(hp),
        baseline=base,
    )

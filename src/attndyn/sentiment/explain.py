r"""Why a review was judged positive or negative: leaders, their clusters, their share of the decision.

At the last layer the real tokens sit in a few clusters (hardmax paper, Theorem 1.1), and the
decision value is linear in their mean:

.. math::

    H = \langle v, \bar z\rangle + b = \sum_{c} \frac{|c|}{n}\,\langle v, z_c\rangle + b,

so cluster c contributes :math:`\frac{|c|}{n}\langle v, z_c\rangle` (:math:`z_c` its centre).
``share`` is that contribution divided by the sum of the absolute contributions (signed; the
absolute shares add up to 1). Leaders are tokens whose follow set at the last layer holds only
copies of their own word (:func:`~attndyn.sentiment.model.word_leaders`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch

from ..analysis import clusters as find_clusters
from .model import word_leaders
from .text import UNK

__all__ = ["Explanation", "ClusterRecord", "explain", "cluster_tolerance", "CLUSTER_RTOL"]

# Tokens of one review count as one cluster when single-linkage closer than
# CLUSTER_RTOL x (largest |coordinate| of that review's real tokens at layer 0): the
# embedding scale of the review, so the statistic does not depend on how large embeddings grew.
CLUSTER_RTOL = 1e-3


def cluster_tolerance(z0_real: np.ndarray, rtol: float = CLUSTER_RTOL) -> float:
    """Absolute distance under which two last-layer tokens are in one cluster."""
    scale = float(np.abs(z0_real).max()) if z0_real.size else 1.0
    return rtol * max(scale, 1e-12)


@dataclass(frozen=True)
class ClusterRecord:
    leaders: list[str]
    words: list[str]
    size: int
    center: list[float]
    decision: float  # <v, center>, the side of the decision line the cluster sits on
    contribution: float  # |c|/n * <v, center>
    share: float


@dataclass(frozen=True)
class Explanation:
    text: str
    label: object
    probability: float  # of classes_[1]
    decision_value: float  # H = <v, mean> + b
    bias: float
    alpha: float
    words: list[str]  # the model's tokens, in order
    leaders: list[str]
    clusters: list[ClusterRecord]

    def to_dict(self) -> dict:
        d = asdict(self)
        d["label"] = self.label.item() if hasattr(self.label, "item") else self.label
        return d


def trajectory_of(estimator, text: str):
    """Words, the (K+1, n, d) hardmax trajectory of one text, and the run object."""
    tok = estimator.tokenizer(text)
    known = [w for w in tok if w in estimator.vocab_.index][: estimator.max_len] or [UNK]
    ids = torch.tensor([estimator.vocab_.ids(known)])
    mask = torch.ones_like(ids, dtype=torch.bool)
    logits, traj = estimator.model_.hardmax_run(ids, mask, every=1, follow=True)
    return known, traj, float(logits[0]), ids


def explain(estimator, text: str, *, rtol: float = CLUSTER_RTOL) -> Explanation:
    """Explain the hardmax prediction of a fitted :class:`HardmaxSentimentClassifier` on ``text``."""
    estimator._check_fitted()
    words, traj, H, ids = trajectory_of(estimator, text)
    model = estimator.model_
    v = model.decoder.weight.detach().double()[0].numpy()
    b = float(model.decoder.bias.detach()[0])
    z0 = traj.ys[0, 0].numpy()
    zK = traj.ys[-1, 0].numpy()
    n = len(words)
    lead_last = word_leaders(traj, ids)[-1, 0].numpy()
    groups = find_clusters(zK, tol=cluster_tolerance(z0, rtol))
    recs = []
    for c in groups:
        members = list(c.members)
        dec = float(np.dot(v, c.center))
        lead = [words[i] for i in members if lead_last[i]]
        if not lead:  # the token of the cluster that is furthest out (largest norm) stands for it
            lead = [words[max(members, key=lambda i: float(np.linalg.norm(zK[i])))]]
        recs.append([sorted(set(lead)), [words[i] for i in members], len(members), c.center.tolist(), dec, len(members) / n * dec])
    total = sum(abs(r[5]) for r in recs) or 1.0
    records = sorted(
        (ClusterRecord(r[0], r[1], r[2], r[3], r[4], r[5], r[5] / total) for r in recs), key=lambda r: -abs(r.contribution)
    )
    p = 1.0 / (1.0 + np.exp(-H))
    label = estimator.classes_[int(H > 0)]
    leaders = sorted({w for i, w in enumerate(words) if lead_last[i]})
    return Explanation(text=text, label=label, probability=float(p), decision_value=H, bias=b,
                       alpha=float(model.alpha.detach()), words=words, leaders=leaders, clusters=records)

r"""Why a review was judged positive or negative: leaders, their clusters, their share of the decision.

At the last layer the real tokens sit in a few clusters (hardmax paper, Theorem 1.1), and the
decision value is linear in their mean:

.. math::

    H = \langle v, \bar z\rangle + b = \sum_{c} \frac{|c|}{n}\,\langle v, z_c\rangle + b,

so a group c of tokens contributes :math:`\frac{|c|}{n}\langle v, z_c\rangle` (:math:`z_c` its mean).
``share`` is that contribution divided by the sum of the absolute contributions (signed; the
absolute shares add up to 1). Leaders are tokens whose follow set at the last layer holds only
copies of their own word (:func:`~attndyn.sentiment._model.word_leaders`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from .._validation import InputError
from ._inference import sigmoid
from ._model import word_leaders
from ._text import UNK

if TYPE_CHECKING:
    from torch import Tensor

    from .._trajectory import HardmaxTrajectory
    from ._estimator import HardmaxSentimentClassifier

__all__ = ["Explanation", "ClusterRecord", "explain", "figure9_data", "trajectory_of", "CLUSTER_RTOL", "CLUSTER_FLOOR"]

# Tokens of one review count as one cluster when single-linkage closer than
# CLUSTER_RTOL x (largest |coordinate| of that review's real tokens at layer 0): the
# embedding scale of the review, so the statistic does not depend on how large embeddings grew.
# On the trained d = 2 model the count is flat from 1e-2 to 1e-1 (0.067 -> 0.062 clusters per
# token): a gap in the distances. At 1e-3 it is 0.34: with alpha near 0.8, 8 layers shrink a
# follower's distance to its leader only by (1 + alpha)^-8 ~ 1/110, so followers are still in transit.
CLUSTER_RTOL = 1e-2
# ... with no absolute floor (attndyn.analysis.cluster_tolerance(z0, CLUSTER_RTOL, floor=CLUSTER_FLOOR)):
# word vectors of any size are compared with their own scale.
CLUSTER_FLOOR = 1e-12


@dataclass(frozen=True)
class ClusterRecord:
    leaders: list[str]
    words: list[str]
    size: int
    center: list[float]
    decision: float  # H(center) = <v, center> + b: the side of the decision line the group sits on
    contribution: float  # (1/n) sum over the group of <v, z_i>
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
    clusters: list[ClusterRecord]  # empty when known_words == 0: H - bias is then <unk>'s term
    known_words: int = 0  # how many of the text's words the model knows (0: it read only <unk>)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["label"] = self.label.item() if hasattr(self.label, "item") else self.label
        return d


def trajectory_of(
    estimator: HardmaxSentimentClassifier, text: str
) -> tuple[list[str], HardmaxTrajectory, float, Tensor]:
    """Words, the (K+1, n, d) hardmax trajectory of one text, and the run object."""
    known = estimator.known_words([text])[0] or [UNK]
    ids = torch.tensor([estimator.vocab_.ids(known)])
    mask = torch.ones_like(ids, dtype=torch.bool)
    logits, traj = estimator.model_.hardmax_run(ids, mask, every=1, follow=True)
    return known, traj, float(logits[0]), ids


def _check_estimator(estimator: object, caller: str = "explain") -> None:
    """A fitted classifier whose predictions are the hardmax run's: with ``inference="softmax"`` it predicts with
    the softmax model, and an exact account of the hardmax run would explain another decision (the two disagree in
    sign on some texts), so ``caller`` refuses it."""
    check = getattr(estimator, "_check_fitted", None)
    if check is None:
        raise InputError(
            f"{caller} needs a fitted HardmaxSentimentClassifier, got {type(estimator).__name__}; "
            "pass HardmaxSentimentClassifier(...).fit(texts, labels) or HardmaxSentimentClassifier.load(folder)"
        )
    check()
    inference = getattr(estimator, "inference", "hardmax")
    if inference != "hardmax":
        raise InputError(
            f"{caller} accounts for the hardmax run, but this classifier predicts with inference={inference!r}, "
            "whose decision can differ in sign; explain the hardmax predictions with "
            "clf.set_params(inference='hardmax')"
        )


def _check_text(text: object, caller: str) -> None:
    if not isinstance(text, str):
        raise InputError(
            f'text must be one review as a string, got {type(text).__name__}; pass e.g. {caller}(clf, "a wonderful film")'
        )


def explain(estimator: HardmaxSentimentClassifier, text: str) -> Explanation:
    r"""Explain the hardmax prediction of a fitted :class:`HardmaxSentimentClassifier` on ``text``.

    Every real token is attributed to the last-layer leader nearest to it (tokens converge to
    leaders' limits or to convex combinations of them, hardmax paper Theorem 1.1); copies of one
    leader word form one group. In a model with registers a leader may be a register, named
    ``<register k: value>`` (:func:`register_names`): the words that joined that level. A group's
    contribution is :math:`\frac1n\sum_{i\in g}\langle v, z^K_i\rangle`, so the contributions and the bias add up to H exactly, for every text with at
    least one known word.

    A text with no known word (``known_words == 0``) is the exception: the model read the single
    token ``<unk>``, and ``explain`` reports no words, no leaders and no clusters, so the bias alone
    does not add up to H: the missing term, H - bias = :math:`\langle v, z^K_{unk}\rangle`, is that
    ``<unk>`` token's. :func:`~attndyn.sentiment.attribute` reports the same term as the word
    ``'<unk>'`` (its contributions and bias do add up to H), and
    :func:`~attndyn.sentiment.cluster_flow` refuses such a text. Its probability is the same for every
    such text.
    """
    _check_estimator(estimator)
    _check_text(text, "explain")
    words, traj, H, ids = trajectory_of(estimator, text)
    model = estimator.model_
    v = model.decoder.weight.detach().double().cpu()[0].numpy()
    b = float(model.decoder.bias.detach()[0])
    n = len(words)
    names = words + register_names(model)  # the run's tokens: the words, then the registers
    groups = _groups(traj.ys[-1, 0].numpy(), word_leaders(traj, model.token_ids(ids))[-1, 0].numpy(), names, n)
    zK = traj.ys[-1, 0, :n].numpy()  # (n, d): the words' final tokens
    Hz = zK @ v  # (n,)
    recs = []
    for leader, members in groups.items():
        center = zK[members].mean(axis=0)
        recs.append(
            (
                [leader],
                [words[i] for i in members],
                len(members),
                center.tolist(),
                float(center @ v + b),
                float(Hz[members].sum() / n),
            )
        )
    total = sum(abs(r[5]) for r in recs) or 1.0
    records = sorted((ClusterRecord(*r, share=r[5] / total) for r in recs), key=lambda r: -abs(r.contribution))
    if not math.isfinite(H):
        raise InputError(
            f"the model's decision value for this text is {H}, not a number; its weights are out of range: retrain it"
        )
    p = float(sigmoid(np.array([H]))[0])  # predict_proba's own sigmoid: the same bits
    label = estimator.classes_[int(H > 0)]
    known = 0 if words == [UNK] else len(words)
    if not known:
        words, groups, records = [], {}, []
    return Explanation(
        text=text,
        label=label,
        probability=float(p),
        decision_value=H,
        bias=b,
        alpha=float(model.alpha.detach()),
        words=words,
        leaders=sorted(groups),
        clusters=records,
        known_words=known,
    )


def register_names(model: Any) -> list[str]:
    """The names ``explain`` gives a model's registers as leaders: ``<register k: value>``, the value
    :math:`\\langle v, r_k\\rangle` that a word joining it votes with (none without registers)."""
    R = model.config.registers
    if not R:
        return []
    v = model.decoder.weight.detach().double().cpu()[0]
    return [f"<register {k + 1}: {float(x):+.2f}>" for k, x in enumerate(model.registers.detach().double().cpu() @ v)]


def _groups(zK: np.ndarray, lead: np.ndarray, names: list[str], n: int) -> dict[str, list[int]]:
    """The n words grouped by the last-layer leader token (a word, or a register) nearest to each, named by
    ``names`` (copies of one leader word form one group)."""
    lead_idx = np.flatnonzero(lead)
    if lead_idx.size == 0:  # cannot happen for A = I (the largest token leads), kept for safety
        lead_idx = np.array([int(np.argmax(np.linalg.norm(zK, axis=1)))])
    dist = np.linalg.norm(zK[:n, None, :] - zK[None, lead_idx, :], axis=-1)  # (n, leaders)
    owner = lead_idx[np.argmin(dist, axis=1)]  # nearest leader token of every word
    groups: dict[str, list[int]] = {}
    for i in range(n):
        groups.setdefault(names[owner[i]], []).append(i)
    return groups


def figure9_data(estimator: HardmaxSentimentClassifier, text: str) -> dict:
    r"""Everything Figure 9 draws for one review: the words, their positions at every layer
    ``tokens`` (K+1, n, d), which are leaders at every layer, the decoder ``v``, ``b``, the
    decision value :math:`H = \langle v, \frac1n\sum_{i<n} z^K_i\rangle + b` and alpha (JSON-able). Runs the
    hardmax dynamics once (:func:`trajectory_of`); :func:`attndyn.plotting.draw_figure9` draws the result.

    A model with R registers adds ``registers`` = R: ``words`` are the n words then the registers' names
    (:func:`register_names`), ``tokens`` (K+1, n + R, d) and ``leaders`` (K+1, n + R) the words then the
    registers (tokens n..n+R-1, which attend and are attended like words: the words move onto them, while
    with their placement each follows only itself and stays at :math:`r_k`); H still reads the n words only.
    A plain model's data has no ``registers`` key."""
    _check_estimator(estimator, "figure9_data")
    _check_text(text, "figure9_data")
    words, traj, H, ids = trajectory_of(estimator, text)
    m = estimator.model_
    ys = traj.ys[:, 0].numpy()  # (K+1, n + R, d)
    data = {
        "words": words + register_names(m),
        "tokens": ys.tolist(),
        "leaders": word_leaders(traj, m.token_ids(ids))[:, 0].numpy().tolist(),
        "v": m.decoder.weight.detach().double().cpu()[0].tolist(),
        "b": float(m.decoder.bias.detach()[0]),
        "decision_value": H,
        "alpha": float(m.alpha.detach()),
    }
    if m.config.registers:
        data["registers"] = m.config.registers
    return data

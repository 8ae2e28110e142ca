"""Evaluation of a fitted sentiment model: accuracy with softmax and hardmax inference, their
agreement, clustering and leader statistics, and the data behind Figures 8 and 10.

Everything here reads a fitted model and encoded reviews and returns plain JSON-able dicts;
:mod:`attndyn.plotting._sentiment` draws them.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from ..analysis import cluster_tolerance
from ..analysis import clusters as find_clusters
from ._explain import CLUSTER_FLOOR, CLUSTER_RTOL
from ._model import word_leaders
from ._train import EncodedSplit, predict_logits

if TYPE_CHECKING:
    from ._estimator import HardmaxSentimentClassifier
    from ._model import SentimentTransformer

__all__ = ["accuracy_report", "hardmax_statistics", "figure8_data", "evaluate_model"]


def _acc(logits: torch.Tensor, y: torch.Tensor) -> float:
    return float(((logits > 0).double() == y.double()).double().mean())


def accuracy_report(model: SentimentTransformer, data: EncodedSplit, *, batch_size: int = 1024) -> dict:
    r"""Softmax and hardmax test accuracy, agreement, the hardmax log loss (mean of
    :math:`\log(1 + e^{-(2y - 1) H})`: how far the probabilities are from the labels) and the hardmax
    inference time (s)."""
    s = predict_logits(model, data, hardmax=False, batch_size=batch_size)
    t0 = time.perf_counter()
    h = predict_logits(model, data, hardmax=True, batch_size=batch_size)
    seconds = time.perf_counter() - t0
    return {
        "n": len(data),
        "softmax_acc": _acc(s, data.labels),
        "hardmax_acc": _acc(h, data.labels),
        "agreement": float(((s > 0) == (h > 0)).double().mean()),
        "hardmax_log_loss": float(torch.nn.functional.softplus(-(2.0 * data.labels.double() - 1.0) * h).mean()),
        "hardmax_seconds": seconds,
    }


@torch.no_grad()
def hardmax_statistics(
    model: SentimentTransformer,
    data: EncodedSplit,
    words: list[str],
    *,
    rtol: float = CLUSTER_RTOL,
    batch_size: int = 512,
    confidence: float = 0.95,
    far: float = 2.0,
    top: int = 15,
) -> dict:
    """Per review at the last layer: clusters per real token, leaders (distinct leader words, see
    :func:`~attndyn.sentiment._model.word_leaders`, and the fraction of leader tokens already
    leaders at layer 0, averaged over the reviews that have leader words: None when none has); Figure 10's
    leader words (each leader token counted).

    Figure 10 counts, among reviews classified correctly with confidence >= ``confidence``, the
    last-layer leaders whose :math:`|H(z_i)| = |\\langle v, z_i\\rangle + b| \\ge` ``far``, and lists the ``top``
    most counted (:func:`top_words`: ties alphabetically).
    """
    v = model.decoder.weight.detach().double().cpu()[0]
    b = float(model.decoder.bias.detach()[0])
    ratios, n_leaders, at0 = [], [], []
    fig10: Counter = Counter()
    fig10_pos: Counter = Counter()
    order = torch.argsort(data.mask.sum(dim=1), stable=True)
    for a in range(0, len(data), batch_size):
        part = data.take(order[a : a + batch_size])
        logits, traj = model.hardmax_run(part.ids, part.mask, follow=True)
        n = part.ids.shape[1]  # the words (a model with registers has R more tokens after them)
        z0, zK = traj.ys[0, :, :n].numpy(), traj.ys[-1, :, :n].numpy()  # (B, n, d)
        lead = word_leaders(traj, model.token_ids(part.ids))[..., :n]  # (2, B, n): layer 0 and the last layer
        lead_last, lead0 = lead[-1].numpy(), lead[0].numpy()  # (B, n)
        m = part.mask.numpy()
        Hz = (traj.ys[-1, :, :n] @ v + b).numpy()  # (B, n): H at every token
        p = torch.sigmoid(logits).numpy()
        y = part.labels.numpy()
        for i in range(len(part)):
            real = np.flatnonzero(m[i])
            tol = cluster_tolerance(z0[i, real], rtol, floor=CLUSTER_FLOOR)
            ratios.append(len(find_clusters(zK[i, real], tol=tol)) / len(real))
            L = lead_last[i] & m[i]
            n_leaders.append(len(set(part.ids[i, L].tolist())))  # distinct leader words
            if L.any():  # a review without leader words (a register model's: its words follow registers) has no share
                at0.append(float((L & lead0[i]).sum() / L.sum()))
            pred = int(p[i] > 0.5)
            conf = max(p[i], 1 - p[i])
            if pred == int(y[i]) and conf >= confidence:
                for j in np.flatnonzero(L & (np.abs(Hz[i]) >= far)):
                    w = words[int(part.ids[i, j])]
                    fig10[w] += 1
                    if Hz[i, j] > 0:
                        fig10_pos[w] += 1
    nl = np.asarray(n_leaders)
    return {
        "cluster_rtol": rtol,
        "clusters_per_token_mean": float(np.mean(ratios)),
        "clusters_per_token_median": float(np.median(ratios)),
        "leaders_mean": float(nl.mean()),
        "leaders_std": float(nl.std()),
        "leaders_min": int(nl.min()),
        "leaders_max": int(nl.max()),
        "leaders_at_layer0_fraction": float(np.mean(at0)) if at0 else None,
        "figure10": top_words(fig10, fig10_pos, top),
    }


def top_words(counts: Counter, positive: Counter, top: int) -> list[dict]:
    """Figure 10's list: the ``top`` most counted words, ties (at the cut-off too) in alphabetical order, so that the
    list does not depend on the order the reviews were read in.

    >>> top_words(Counter(bad=3, good=2, fine=2, dull=2), Counter(good=2, fine=1), 3)  # doctest: +NORMALIZE_WHITESPACE
    [{'word': 'bad', 'count': 3, 'positive_side': 0}, {'word': 'dull', 'count': 2, 'positive_side': 0},
     {'word': 'fine', 'count': 2, 'positive_side': 1}]
    """
    ranked = sorted(counts.items(), key=lambda wc: (-wc[1], wc[0]))[:top]
    return [{"word": w, "count": c, "positive_side": positive[w]} for w, c in ranked]


def figure8_data(history: list[dict]) -> dict:
    """Per-epoch softmax and hardmax loss/accuracy (training subset and validation) for Figure 8."""
    keys = [
        "train_softmax_loss",
        "train_hardmax_loss",
        "val_softmax_loss",
        "val_hardmax_loss",
        "train_softmax_acc",
        "train_hardmax_acc",
        "val_softmax_acc",
        "val_hardmax_acc",
        "alpha",
    ]
    return {"epoch": [r["epoch"] for r in history], **{k: [r.get(k) for r in history] for k in keys}}


def evaluate_model(estimator: HardmaxSentimentClassifier, data: EncodedSplit, *, rtol: float = CLUSTER_RTOL) -> dict:
    """Everything ``attndyn sentiment evaluate`` reports for one fitted estimator, with the
    behavioural suite's pass rate per category (:mod:`attndyn.sentiment._checklist`) under ``checklist`` (the suite
    recipes are tuned on) and ``checklist_heldout`` (the held-out suite, never used to choose a setting)."""
    from ._checklist import score

    model = estimator.model_
    out: dict[str, Any] = {"d": model.config.d, "alpha": float(model.alpha.detach())}
    out.update(accuracy_report(model, data))
    out.update(hardmax_statistics(model, data, estimator.vocab_.words, rtol=rtol))
    out["checklist"] = score(estimator)
    out["checklist_heldout"] = score(estimator, suite="heldout")
    out["figure8"] = figure8_data(getattr(estimator, "history_", []))
    return out

r"""Exact word attributions of the hardmax sentiment model: the decision as a sum over input words.

With the follow sets :math:`C_i(Z^k)` of a run fixed, layer k of eq. (1.1) of the hardmax paper,
:math:`z_i^{k+1} = z_i^k + \frac{\alpha}{1+\alpha}\big(\frac{1}{|C_i|}\sum_{j\in C_i} z_j^k - z_i^k\big)`,
is linear in the tokens: :math:`Z^{k+1} = W_k Z^k` with the row-stochastic matrix

.. math::

    W_k = \tfrac{1}{1+\alpha}\,I + \tfrac{\alpha}{1+\alpha}\,P_k,\qquad
    (P_k)_{ij} = \frac{[j\in C_i(Z^k)]}{|C_i(Z^k)|}\quad(i, j\ \text{real}),

(padding neither attends nor is attended, so its columns of :math:`P_k` are zero). Hence
:math:`Z^K = M Z^0`, :math:`M = W_{K-1}\cdots W_0`, and the decision of the model
(:meth:`~attndyn.sentiment._model.SentimentTransformer.decode`, no layer norm, no projection: the
mean over the n real tokens, then :math:`\langle v,\cdot\rangle + b`) is exactly

.. math::

    H = b + \sum_{w} a_w,\qquad a_w = u_w\,\langle v, z^0_w\rangle,\qquad
    u = \tfrac1n \mathbf 1^\top M \quad(\textstyle\sum_w u_w = 1),

a sum over the input positions w. ``u_w`` is the word's *influence* (its weight in the final
mean), :math:`\langle v, z^0_w\rangle` its *value* (which side of the decision line its vector lies
on). The follow sets are the core engine's own (``SaveAt(follow=True)``): nothing here runs the
dynamics a second time. The attribution is exact for this input and local: deleting or adding a
word changes the follow sets, and so every :math:`W_k`.

**Registers** (a model with ``registers`` > 0, :mod:`attndyn.sentiment._model`): the run holds the R registers
after the n words and the decoder reads the words only, so :math:`u = \frac1n\mathbf 1_{\text{words}}^\top M`
over the n + R tokens and :math:`H = b + \sum_w u_w\langle v, z^0_w\rangle + \sum_k u_k\langle v, r_k\rangle`.
The registers' terms are credited to the words that carry them: :math:`\sum_k u_k\langle v, r_k\rangle =
\frac1n\sum_w \sum_k M_{wk}\langle v, r_k\rangle`, so word w gets :math:`\frac1n\sum_k M_{wk}\langle v,
r_k\rangle` (the value of the levels its own token joined, :func:`register_credit`) on top of its own term, and
the word attributions still add up to H - b.

Copies of a word are identical tokens; they stay identical and every token that follows one
follows all, so the copies get the same :math:`u_w` and the same :math:`a_w`: a word type's total
is its count times its per-position attribution (:attr:`Attribution.by_word`).

**Clusters.** ``explain`` splits the same decision over groups g of *final* tokens,
:math:`H - b = \sum_g \frac1n\sum_{i\in g}\langle v, z^K_i\rangle`. Substituting :math:`Z^K = MZ^0`
gives one matrix :math:`F_{gw} = \frac1n\big(\sum_{i\in g} M_{iw}\big)\langle v, z^0_w\rangle`
(:func:`cluster_flow`) whose row sums are the clusters' contributions and whose column sums
are the word attributions :math:`a_w`; both add up to :math:`H - b`. With registers a word's final token is
:math:`z^K_i = \sum_{j<n} M_{ij} z^0_j + \sum_k M_{i,n+k} r_k` (the registers' own values are no word's), so
:math:`F_{gw}` sums over the words' columns j < n only and word w's register credit
:math:`\frac1n\sum_k M_{w,n+k}\langle v, r_k\rangle` is added to :math:`F_{g(w)\,w}`, g(w) the group of w's
own final token: the row sums stay the clusters' contributions (a register's group included) and the column
sums the word attributions with their credit.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import torch
from torch import Tensor

from .._trajectory import HardmaxTrajectory
from .._validation import InputError
from ._explain import _check_estimator, explain, trajectory_of
from ._text import UNK

if TYPE_CHECKING:
    from ._estimator import HardmaxSentimentClassifier
    from ._model import SentimentTransformer

__all__ = [
    "Attribution",
    "WordTotal",
    "ClusterFlow",
    "attribute",
    "cluster_flow",
    "layer_matrices",
    "propagation_matrix",
    "influence",
    "contributions",
    "ExactRun",
    "relative_residual",
    "word_rows",
    "register_credit",
]


def _layers_and_follow(traj: HardmaxTrajectory) -> tuple[Tensor, int]:
    """The recorded follow sets of layers 0..K-1 and K; refuse a run that did not keep them all."""
    K = int(traj.params.layers)
    if traj.follow is None or traj.ys.shape[0] != K + 1:
        raise InputError(
            "exact attributions need every layer's follow sets: run the model with "
            "hardmax_run(ids, mask, every=1, follow=True) (or attndyn.hardmax with save=SaveAt(every=1, follow=True))"
        )
    return traj.follow, K


def layer_matrices(traj: HardmaxTrajectory, *, keep: float | None = None) -> Tensor:
    r"""The averaging matrices :math:`W_k = \text{keep}\,I + (1-\text{keep})\,P_k`, (K, B, n, n) float64.

    ``keep`` None is the model's own :math:`1/(1+\alpha)` (eq. (1.1)); ``keep = 0.5`` is the
    residual weight of attention rollout (Abnar & Zuidema 2020). Rows of padding are the identity
    (padding does not move), columns of padding are zero in the real rows."""
    follow, K = _layers_and_follow(traj)
    alpha = float(traj.params.alpha)
    keep = 1.0 / (1.0 + alpha) if keep is None else keep
    B, n = follow.shape[1], follow.shape[2]
    real = torch.ones((B, n), dtype=torch.bool) if traj.mask is None else traj.mask.cpu()
    F = (follow[:K] & real[None, :, :, None] & real[None, :, None, :]).to(torch.float64)
    P = F / F.sum(dim=-1, keepdim=True).clamp(min=1.0)
    eye = torch.eye(n, dtype=torch.float64)
    W = keep * eye + (1.0 - keep) * P
    pad = ~real  # (B, n): padding rows are the identity
    if bool(pad.any()):
        W[:, pad] = eye[torch.nonzero(pad)[:, 1]]
    return W


def influence(traj: HardmaxTrajectory, *, keep: float | None = None, reads: Tensor | None = None) -> Tensor:
    r"""Each position's weight in the final mean, :math:`u = \frac1n\mathbf 1_{\text{real}}^\top
    W_{K-1}\cdots W_0`, (B, n) float64 (zero on padding; each row sums to 1).

    Computed backwards, :math:`u^{(k)} = W_k^\top u^{(k+1)}`, so O(K n^2) per review; ``keep`` as
    in :func:`layer_matrices` (0.5: attention rollout's column means). ``reads`` (B, n) bool: the tokens the
    decoder's mean reads (None: every real token; a model with registers reads its words only, and the
    registers then get the influence their followers carry)."""
    W = layer_matrices(traj, keep=keep)
    B, n = W.shape[1], W.shape[2]
    real = torch.ones((B, n), dtype=torch.bool) if traj.mask is None else traj.mask.cpu()
    u = (real if reads is None else reads.cpu() & real).to(torch.float64)
    u = u / u.sum(dim=1, keepdim=True)
    for k in reversed(range(W.shape[0])):
        u = torch.einsum("bi,bij->bj", u, W[k])
    return u


def propagation_matrix(traj: HardmaxTrajectory, sequence: int = 0) -> np.ndarray:
    r""":math:`M = W_{K-1}\cdots W_0` over the real tokens of one sequence, (m, m) float64:
    :math:`Z^K = M Z^0` (row-stochastic)."""
    W = layer_matrices(traj)[:, sequence]
    idx = traj.real_tokens(sequence)
    M = torch.eye(W.shape[-1], dtype=torch.float64)
    for k in range(W.shape[0]):
        M = W[k] @ M
    return M[idx][:, idx].numpy()


def _decoder(model: SentimentTransformer) -> tuple[Tensor, float]:
    v = model.decoder.weight.detach().to("cpu", torch.float64)[0]
    return v, float(model.decoder.bias.detach().to("cpu", torch.float64)[0])


class ExactRun(NamedTuple):
    """One batched hardmax run and its exact attributions (:func:`contributions`)."""

    a: Tensor  # (B, n) contributions a_w, 0 on padding
    u: Tensor  # (B, n) influence
    H: Tensor  # (B,) decision values of the same run
    bias: float
    traj: HardmaxTrajectory  # every layer, with the follow sets


def contributions(model: SentimentTransformer, ids: Tensor, mask: Tensor) -> ExactRun:
    r"""Every position's exact contribution :math:`a_w = u_w\langle v, z^0_w\rangle` (0 on padding),
    its influence u and the model's decision value H, from one hardmax run
    (:meth:`~attndyn.sentiment._model.SentimentTransformer.hardmax_run`, every layer, follow sets
    kept); ``a.sum(1) + bias == H`` to rounding (:func:`relative_residual`). With registers, a word's
    contribution also holds the value of the levels it joined (:func:`register_credit`); ``u`` then covers
    the n + R tokens of the run."""
    H, traj = model.hardmax_run(ids, mask, every=1, follow=True)
    v, b = _decoder(model)
    u = influence(traj, reads=word_rows(model, mask))
    values = traj.ys[0] @ v
    n = ids.shape[1]
    a = u[:, :n] * values[:, :n]
    if model.config.registers:
        a = a + register_credit(traj, values, n)
    return ExactRun(a, u, H.to(torch.float64), b, traj)


def word_rows(model: SentimentTransformer, mask: Tensor) -> Tensor:
    """The rows of :meth:`~attndyn.sentiment._model.SentimentTransformer.hardmax_run`'s trajectory that the decoder
    reads, (B, n + R) bool: the real words, not the R registers."""
    R = model.config.registers
    return torch.cat([mask.cpu().bool(), torch.zeros((mask.shape[0], R), dtype=torch.bool)], dim=1)


def register_credit(traj: HardmaxTrajectory, values: Tensor, n: int) -> Tensor:
    r"""The registers' terms of the decision, credited to the words that carry them, (B, n) float64.

    The decoder reads the words' final tokens, :math:`z^K_w = \sum_j M_{wj} z^0_j` over the words and the
    registers, so the registers' part of :math:`H - b` is :math:`\frac1n\sum_w\sum_{k} M_{wk}\langle v,
    r_k\rangle`: word w is credited with :math:`\frac1n (M x)_w`, x the registers' values (0 on the words),
    the value of the levels its own token joined. One product :math:`W_{K-1}\cdots W_0 x`, O(K n^2)."""
    W = layer_matrices(traj)
    x = values.clone()
    x[:, :n] = 0.0
    for k in range(W.shape[0]):
        x = torch.einsum("bij,bj->bi", W[k], x)
    real = traj.mask[:, :n].cpu() if traj.mask is not None else torch.ones(x.shape[0], n, dtype=torch.bool)
    return torch.where(real, x[:, :n], 0.0) / real.sum(dim=1, keepdim=True).clamp(min=1)


def relative_residual(a: Tensor, b: float, H: Tensor) -> Tensor:
    r""":math:`|\sum_w a_w + b - H| / (\sum_w |a_w| + |b|)` per review: the rounding left in the
    identity, relative to the size of its terms (H itself may be near 0)."""
    scale = a.abs().sum(dim=-1) + abs(b)
    return (a.sum(dim=-1) + b - H).abs() / torch.where(scale > 0, scale, torch.ones_like(scale))


@dataclass(frozen=True)
class WordTotal:
    word: str
    count: int  # its positions in the review
    contribution: float  # the sum over its positions (count x the per-position attribution)


@dataclass(frozen=True)
class Attribution:
    """The exact word attributions of one review (see the module's docstring for the equation)."""

    text: str
    words: list[str]  # the model's tokens, in order (the positions)
    contributions: list[float]  # a_w per position
    influence: list[float]  # u_w per position (sums to 1; with registers, they hold the rest)
    values: list[float]  # <v, z^0_w> per position
    bias: float
    decision_value: float  # H of the model's hardmax run
    residual: float  # |sum a + b - H| / (sum |a| + |b|)
    by_word: list[WordTotal]  # per word type, largest |contribution| first
    known_words: int = 0  # 0: the model read only <unk>
    # a model with registers: the part of each position's contribution that is the value of the levels it joined
    via_registers: list[float] = field(default_factory=list)

    def to_dict(self) -> dict:
        d = asdict(self)
        if not self.via_registers:  # the model has none: the record is the paper model's
            del d["via_registers"]
        return d


def _by_word(words: list[str], a: np.ndarray) -> list[WordTotal]:
    totals: dict[str, list[float]] = {}
    for w, x in zip(words, a):
        totals.setdefault(w, []).append(float(x))
    rows = [WordTotal(w, len(xs), math.fsum(xs)) for w, xs in totals.items()]
    return sorted(rows, key=lambda r: -abs(r.contribution))


def attribute(estimator: HardmaxSentimentClassifier, text: str) -> Attribution:
    r"""Exact word attributions of a fitted classifier's hardmax decision on ``text``:
    :math:`H = b + \sum_w u_w\langle v, z^0_w\rangle` (module docstring), per position and per word type.

    A text with no known word is read as the single token ``<unk>``, so ``words == ['<unk>']`` and that
    token gets all of H - b; :func:`~attndyn.sentiment.explain` reports no cluster for such a text.

    >>> from attndyn.sentiment import HardmaxSentimentClassifier
    >>> clf = HardmaxSentimentClassifier(d=2, epochs=2, min_freq=1, random_state=0)
    >>> clf = clf.fit(["great fun", "awful boring", "great acting", "boring awful mess"] * 10, [1, 0, 1, 0] * 10)
    >>> att = attribute(clf, "great fun great")
    >>> att.words, [r.count for r in att.by_word if r.word == "great"]
    (['great', 'fun', 'great'], [2])
    >>> abs(sum(att.contributions) + att.bias - att.decision_value) < 1e-12, att.residual < 1e-12
    (True, True)
    """
    _check_estimator(estimator, "attribute")
    if not isinstance(text, str):
        raise InputError(f"text must be one review as a string, got {type(text).__name__}")
    words, traj, H, ids = trajectory_of(estimator, text)
    model = estimator.model_
    v, b = _decoder(model)
    n = len(words)
    u = influence(traj, reads=word_rows(model, torch.ones_like(ids, dtype=torch.bool)))[0, :n]
    values = traj.ys[0, 0] @ v
    via = register_credit(traj, values[None], n)[0] if model.config.registers else torch.zeros(0, dtype=torch.float64)
    a = u * values[:n] + (via if len(via) else 0.0)
    res = float(relative_residual(a[None], b, torch.tensor([H], dtype=torch.float64))[0])
    known = 0 if words == [UNK] else len(words)
    return Attribution(
        text=text,
        words=words,
        contributions=a.tolist(),
        influence=u.tolist(),
        values=values[:n].tolist(),
        bias=b,
        decision_value=H,
        residual=res,
        by_word=_by_word(words, a.numpy()),
        known_words=known,
        via_registers=via.tolist(),
    )


@dataclass(frozen=True)
class ClusterFlow:
    """How each input word's contribution reaches each final cluster of :func:`~attndyn.sentiment.explain`.

    ``flow[g, w]`` = :math:`\\frac1n(\\sum_{i\\in g} M_{iw})\\langle v, z^0_w\\rangle`: its row sums are
    the clusters' ``contribution`` (``explain``'s order), its column sums the word attributions. A register
    model's word w also carries its register credit :math:`\\frac1n\\sum_k M_{w,n+k}\\langle v, r_k\\rangle` in the
    row of its own cluster (M over the n words and the R registers)."""

    leaders: list[list[str]]  # per cluster, as explain reports it
    positions: list[list[int]]  # the final tokens (= positions) of each cluster
    words: list[str]
    flow: np.ndarray  # (G, n)


def cluster_flow(estimator: HardmaxSentimentClassifier, text: str) -> ClusterFlow:
    r"""The cluster x word matrix of ``text`` (:class:`ClusterFlow`): ``explain``'s groups of final
    tokens against the input words, from one propagation matrix M:
    :math:`F_{gj} = \frac1n \sum_{i \in g} M_{ij} \langle v, z_j^0\rangle`, so the rows sum to the clusters'
    contributions and the columns to the exact word attributions. With registers (tokens n..n+R-1) the level a
    word's final token takes from the registers, :math:`\frac1n \sum_k M_{jk} \langle v, r_k\rangle`, is added to
    that word's column in its own cluster's row (as :func:`attribute` credits it), and both sums stay exact. A text
    with no known word has no cluster: an InputError."""
    _check_estimator(estimator, "cluster_flow")
    e = explain(estimator, text)
    if not e.known_words:
        raise InputError(
            "the text has no word the model knows: it has no cluster to trace; give a review with known words"
        )
    words, traj, _, _ = trajectory_of(estimator, text)
    v, _ = _decoder(estimator.model_)
    M = propagation_matrix(traj)  # (n + R, n + R): the words, then a register model's R registers
    values = (traj.ys[0, 0] @ v).numpy()
    n = len(words)
    owner = {w: g for g, c in enumerate(e.clusters) for w in c.words}  # copies share one cluster
    positions = [[i for i in range(n) if owner[words[i]] == g] for g in range(len(e.clusters))]
    flow = np.stack([M[p][:, :n].sum(axis=0) / n * values[:n] for p in positions])
    if len(values) > n:  # registers: the level a word's final token holds is credited to that word (register_credit)
        level = M[:n, n:] @ values[n:] / n
        for g, p in enumerate(positions):
            flow[g, p] += level[p]
    return ClusterFlow([c.leaders for c in e.clusters], positions, words, flow)

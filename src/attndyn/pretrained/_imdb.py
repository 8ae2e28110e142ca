r"""MiniLM's leader words beside the hardmax sentiment model's, on the same IMDb test reviews.

For one review:

- the sentiment model's leaders S are the words of :func:`attndyn.sentiment.explain` (tokens whose
  last-layer follow set holds only copies of their own word; ``not_good`` counts as ``good``);
- MiniLM's lead score of a word is the fraction of its (layer, head) pairs in which one of the word's
  pieces leads (:math:`C_i = \{i\}` under the head's scores, :func:`attndyn.pretrained.leader_map`);
  its leader words M are those with a positive score;
- both are compared on the candidates C: the words that both models read in that review (MiniLM's
  pieces joined into words; the sentiment model's vocabulary words).

Per review: the overlap at ``k = |S|`` (the fraction of S among MiniLM's k highest-scoring candidates,
ties broken at random with a fixed seed) against chance ``k/|C|``; the precision of M for S against the
base rate ``|S|/|C|``; and the AUC of the lead score for telling S from C \ S (0.5 = chance).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._errors import param
from .._threads import limit_threads
from .._validation import InputError
from ._adapter import PretrainedModel, load_model
from ._leaders import leader_map

__all__ = [
    "ReviewLeaders",
    "LeaderComparison",
    "minilm_word_scores",
    "compare_review",
    "compare",
    "compare_on_run",
    "auc",
]


def auc(pos: np.ndarray, neg: np.ndarray) -> float:
    """Probability that a random positive scores above a random negative (ties count 1/2): Mann-Whitney.

    >>> auc(np.array([2.0, 3.0]), np.array([1.0, 2.0]))
    0.875
    """
    if len(pos) == 0 or len(neg) == 0:
        return float("nan")
    d = pos[:, None] - neg[None, :]
    return float(((d > 0).sum() + 0.5 * (d == 0).sum()) / d.size)


def _word(token: str) -> str | None:
    """The plain word of a sentiment-model token: ``not_good`` -> ``good``; bigrams ("a b") -> None."""
    if " " in token:
        return None
    return token[4:] if token.startswith("not_") else token


def minilm_word_scores(pm: PretrainedModel, text: str) -> dict[str, float]:
    """For each alphabetic word of ``text`` as MiniLM reads it: the largest fraction of (layer, head) pairs in
    which one of its pieces leads (over its occurrences and pieces)."""
    fwd = pm.run(text)
    lm = leader_map(fwd, pm.weights())
    frac = lm.leads.double().mean(dim=(0, 1)).numpy()  # (n,): fraction of (layer, head) pairs leading
    pieces: dict[int, list[int]] = {}
    for i, w in enumerate(fwd.words):
        if w is not None:
            pieces.setdefault(w, []).append(i)
    out: dict[str, float] = {}
    for idx in pieces.values():
        word = "".join(fwd.tokens[i].removeprefix("##") for i in idx).lower()
        if word.isalpha():
            out[word] = max(out.get(word, 0.0), float(max(frac[i] for i in idx)))
    return out


@dataclass(frozen=True)
class ReviewLeaders:
    candidates: int
    sentiment: tuple[str, ...]  # S within the candidates
    minilm: tuple[str, ...]  # M within the candidates (score > 0)
    top_k: tuple[str, ...]  # MiniLM's k = |S| best-scoring candidates
    overlap: float  # |top_k ∩ S| / k
    chance: float  # k / |C|
    precision: float  # |M ∩ S| / |M| (nan when M is empty)
    base_rate: float  # |S| / |C|
    auc: float

    def record(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


def compare_review(
    scores: dict[str, float], sentiment_leaders: list[str], sentiment_words: list[str], rng: np.random.Generator
) -> ReviewLeaders | None:
    """The comparison on one review; None when it is undefined (no sentiment leader among the candidates,
    or every candidate is one)."""
    sw = {w for w in (_word(t) for t in sentiment_words) if w}
    C = sorted(sw & set(scores))
    S = sorted({w for w in (_word(t) for t in sentiment_leaders) if w} & set(C))
    if not S or len(S) == len(C):
        return None
    sc = np.array([scores[w] for w in C])
    order = np.lexsort((rng.random(len(C)), -sc))  # by score, random among ties
    k = len(S)
    top = [C[i] for i in order[:k]]
    M = [w for w in C if scores[w] > 0]
    inS = np.array([w in S for w in C])
    prec = len(set(M) & set(S)) / len(M) if M else float("nan")
    return ReviewLeaders(
        candidates=len(C),
        sentiment=tuple(S),
        minilm=tuple(M),
        top_k=tuple(top),
        overlap=len(set(top) & set(S)) / k,
        chance=k / len(C),
        precision=prec,
        base_rate=len(S) / len(C),
        auc=auc(sc[inS], sc[~inS]),
    )


@dataclass
class LeaderComparison:
    """Per-review comparisons and where they came from."""

    reviews: list[ReviewLeaders]
    skipped: int
    settings: dict[str, Any] = field(default_factory=dict)
    seconds_per_review: float = float("nan")

    def summary(self) -> dict[str, Any]:
        r = self.reviews
        if not r:
            return {"reviews": 0, "skipped": self.skipped}
        ov, ch = np.array([x.overlap for x in r]), np.array([x.chance for x in r])
        pr = np.array([x.precision for x in r])
        br = np.array([x.base_rate for x in r])
        au = np.array([x.auc for x in r])
        has_m = ~np.isnan(pr)
        diff = ov - ch
        se = float(diff.std(ddof=1) / np.sqrt(len(diff))) if len(diff) > 1 else float("nan")
        return {
            "reviews": len(r),
            "skipped": self.skipped,
            "candidates_mean": float(np.mean([x.candidates for x in r])),
            "sentiment_leaders_mean": float(np.mean([len(x.sentiment) for x in r])),
            "minilm_leaders_mean": float(np.mean([len(x.minilm) for x in r])),
            "overlap_at_k_mean": float(ov.mean()),
            "chance_mean": float(ch.mean()),
            "overlap_minus_chance": float(diff.mean()),
            "overlap_minus_chance_se": se,
            "precision_mean": float(pr[has_m].mean()) if has_m.any() else float("nan"),
            "base_rate_mean_same_reviews": float(br[has_m].mean()) if has_m.any() else float("nan"),
            "reviews_with_minilm_leaders": int(has_m.sum()),
            "auc_mean": float(np.nanmean(au)),
            "seconds_per_review": self.seconds_per_review,
        }

    def record(self) -> dict[str, Any]:
        cs = Counter(w for x in self.reviews for w in x.sentiment)
        cm = Counter(w for x in self.reviews for w in x.top_k)
        return {
            "summary": self.summary(),
            "settings": self.settings,
            "top_sentiment_leaders": cs.most_common(30),
            "top_minilm_leaders": cm.most_common(30),
            "per_review": [x.record() for x in self.reviews],
        }


def compare(
    pm: PretrainedModel, estimator: Any, texts: list[str], *, seed: int = 0, progress: bool = False
) -> LeaderComparison:
    """Compare the two models' leader words on ``texts`` (a fitted HardmaxSentimentClassifier)."""
    import time

    from .._progress import progress_bar
    from ..sentiment import explain

    rng = np.random.default_rng(seed)
    out, skipped = [], 0
    t0 = time.perf_counter()
    with (
        limit_threads(torch_threads=1, blas_threads=1),
        progress_bar(len(texts), "reviews", enabled=progress) as advance,
    ):
        for text in texts:
            ex = explain(estimator, text)
            r = compare_review(minilm_word_scores(pm, text), ex.leaders, ex.words, rng)
            if r is None:
                skipped += 1
            else:
                out.append(r)
            advance(1)
    per = (time.perf_counter() - t0) / max(1, len(texts))
    return LeaderComparison(reviews=out, skipped=skipped, seconds_per_review=per)


def compare_on_run(
    run: str | os.PathLike,
    data: str | os.PathLike | None = None,
    *,
    reviews: int = 1000,
    model: PretrainedModel | str | os.PathLike | None = None,
    max_tokens: int = 256,
    seed: int = 0,
    progress: bool = False,
) -> LeaderComparison:
    """The first ``reviews`` reviews of a sentiment run's own test split (its ``data.json``), both models.

    MiniLM reads at most ``max_tokens`` word pieces of each review (attention costs grow as n^2)."""
    from ..sentiment._runfolder import RunFolder
    from ..sentiment._runs import open_run

    folder = RunFolder(run)
    info = folder.data()
    if info is None:
        raise InputError(
            f"{param('imdb.run', 'run')} {str(folder.path)!r} has no data.json; give a folder written by "
            "`attndyn sentiment train --run DIR`"
        )
    if isinstance(reviews, bool) or not isinstance(reviews, int) or reviews < 1:
        raise InputError(f"{param('reviews', 'reviews=')}{reviews!r}: give a positive integer")
    est, revs, _, te, _ = open_run(folder.path, data=data)
    texts = [revs.texts[i] for i in te[:reviews]]
    pm = model if isinstance(model, PretrainedModel) else load_model(model)
    pm.max_tokens = min(pm.max_tokens, int(max_tokens))
    comp = compare(pm, est, texts, seed=seed, progress=progress)
    comp.settings = {
        "sentiment_run": str(folder.path),
        "data": str(data or info["data"]),
        "split": info.get("split", "random"),
        "reviews_asked": reviews,
        "model": pm.name,
        "max_tokens": pm.max_tokens,
        "seed": seed,
    }
    return comp

r"""Is an explanation faithful? Delete the words it ranks first and watch the prediction.

For each review and each method of :mod:`attndyn.sentiment._baselines` (positions ranked best
first, ties broken at random), with :math:`p(\cdot)` the model's probability of the class it
predicts for the whole review (ERASER, DeYoung et al. 2020):

- **comprehensiveness** at fraction f: :math:`p(x) - p(x\setminus r_f)`, the top
  :math:`\min(n-1, \lceil fn\rceil)` words removed (higher: the words mattered);
- **sufficiency** at f: :math:`p(x) - p(r_f)`, only the top :math:`\lceil fn\rceil` words kept
  (lower: they suffice);
- **AOPC**: the mean over f in :data:`BINS` (1, 5, 10, 20, 50 %);
- the **deletion curve**: :math:`p` after removing the top fraction f, f in :data:`CURVE`.

A word is removed by masking it as padding: the model averages over its real tokens only, so a
removed word neither attends nor is attended, exactly as if it had not been in the review
(nothing is replaced by another word). Removing words re-runs the dynamics: the follow sets of
the shortened review are new (what the exact attribution, a statement about the whole review,
does not promise to predict). Confidence intervals are percentile bootstraps over reviews
(:func:`scipy.stats.bootstrap`). The **sanity check** (Adebayo et al. 2018) re-initialises every
weight and reports each method's Spearman correlation between its scores for the trained and the
random model (near 1: the explanation does not read the model). The **cluster explanation** of
``explain``: the words of the cluster with the largest share toward the predicted class are
deleted, against as many words chosen by each method.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from .._progress import progress_bar
from .._validation import InputError
from ._attribution import contributions, relative_residual
from ._baselines import (
    METHODS,
    OCCLUSION_METHODS,
    SIGNED,
    MethodSettings,
    captum_scores,
    check_methods,
    dynamics_scores,
    masked_decision,
    occlusion_scores,
    ranking,
    reinitialized,
    require_captum,
)
from ._config import check_integer, check_number
from ._explain import _check_estimator, explain
from ._inference import check_texts

if TYPE_CHECKING:
    from ._estimator import HardmaxSentimentClassifier
    from ._model import SentimentTransformer

__all__ = [
    "stat_text",
    "sample_texts",
    "BINS",
    "CURVE",
    "EXACT_RTOL",
    "StudySettings",
    "faithfulness",
    "removal_count",
    "table_rows",
    "report",
    "spearman",
    "kendall",
]

BINS = (0.01, 0.05, 0.10, 0.20, 0.50)
CURVE = tuple(round(0.05 * i, 2) for i in range(11))
#: The most bootstrap resamples of an interval (scipy holds resamples x reviews values at once).
MAX_BOOTSTRAP = 20_000
# KernelShap's seeds for the re-initialised model, apart from every trained one (seed * 1_000_003 + index, below
# 2**31 for seeds below 2147): torch's CPU generator keeps the low 32 bits of a seed, so 2**40 would be 0.
SANITY_SEED_OFFSET = 1 << 31
EXACT_RTOL = 1e-10  # |sum a + b - H| / (sum |a| + |b|) allowed on every review


@dataclass(frozen=True)
class StudySettings:
    """What a faithfulness study measures and how (all recorded in its result).

    Args:
        methods: the methods to compare (:data:`attndyn.sentiment._baselines.METHODS`).
        baselines: the methods' own settings (seeds, IG steps and baselines, KernelShap samples).
        sanity_reviews: the first this many reviews get the model-randomization check (0: off).
        bootstrap_resamples: resamples of each confidence interval.
        confidence: the intervals' level.
        batch_size: reviews per batched hardmax run.
    """

    methods: tuple[str, ...] = METHODS
    baselines: MethodSettings = field(default_factory=MethodSettings)
    sanity_reviews: int = 200
    bootstrap_resamples: int = 2000
    confidence: float = 0.95
    batch_size: int = 16

    def __post_init__(self) -> None:
        object.__setattr__(self, "methods", check_methods(self.methods))
        if not isinstance(self.baselines, MethodSettings):
            raise InputError(f"baselines must be a MethodSettings, got {type(self.baselines).__name__}")
        check_integer(self.sanity_reviews, "sanity_reviews", low=0)
        check_integer(self.bootstrap_resamples, "bootstrap_resamples", low=10, high=MAX_BOOTSTRAP)
        check_number(self.confidence, "confidence", low=0, high=1, low_open=True, high_open=True)
        check_integer(self.batch_size, "batch_size", low=1)


def removal_count(n: int, fraction: float) -> int:
    """Words removed for comprehensiveness at ``fraction`` of an n-word review: ceil(f n), at least
    one word left (0 for f = 0).

    >>> [removal_count(40, f) for f in BINS], removal_count(1, 0.5), removal_count(40, 0.0)
    ([1, 2, 4, 8, 20], 0, 0)
    """
    return 0 if fraction <= 0 else min(n - 1, math.ceil(round(fraction * n, 9)))


def _kept_count(n: int, fraction: float) -> int:
    """Words kept for sufficiency: ceil(f n), between 1 and n."""
    return max(1, min(n, math.ceil(round(fraction * n, 9))))


def _masks(n: int, order: np.ndarray) -> np.ndarray:
    """Keep-masks (2 len(BINS) + len(CURVE), n) of one ranking: comprehensiveness, sufficiency, curve."""
    rows = []
    for f in BINS:
        keep = np.ones(n, dtype=bool)
        keep[order[: removal_count(n, f)]] = False
        rows.append(keep)
    for f in BINS:
        keep = np.zeros(n, dtype=bool)
        keep[order[: _kept_count(n, f)]] = True
        rows.append(keep)
    for f in CURVE:
        keep = np.ones(n, dtype=bool)
        keep[order[: removal_count(n, f)]] = False
        rows.append(keep)
    return np.stack(rows)


def _probabilities(model: SentimentTransformer, row: torch.Tensor, keep: np.ndarray, side: float) -> np.ndarray:
    """p(predicted class) of review ``row`` (n,) under each keep-mask (R, n)."""
    R = keep.shape[0]
    H = masked_decision(model, row[None].expand(R, -1), torch.from_numpy(keep)).numpy()
    return 0.5 * (1.0 + np.tanh(0.5 * side * H))


@dataclass
class _Review:
    """What one review measured: per method the comprehensiveness/sufficiency rows and the deletion curve."""

    n: int
    H: float
    residual: float
    scores: dict[str, np.ndarray]
    comp: dict[str, np.ndarray] = field(default_factory=dict)
    suff: dict[str, np.ndarray] = field(default_factory=dict)
    curve: dict[str, np.ndarray] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    cluster: dict[str, float] = field(default_factory=dict)  # "cluster" and every method: p drop
    cluster_words: int = 0


def _measure(model: SentimentTransformer, r: _Review, row: torch.Tensor, orders: dict[str, np.ndarray]) -> None:
    """Fill ``r``'s comprehensiveness, sufficiency and curve rows: one batched evaluation of every mask."""
    side = 1.0 if r.H > 0 else -1.0
    names = list(orders)
    blocks = [np.ones((1, r.n), dtype=bool)] + [_masks(r.n, orders[m]) for m in names]
    p = _probabilities(model, row, np.concatenate(blocks), side)
    full, rest = p[0], p[1:].reshape(len(names), -1)
    nb = len(BINS)
    for m, q in zip(names, rest):
        r.comp[m] = full - q[:nb]
        r.suff[m] = full - q[nb : 2 * nb]
        r.curve[m] = q[2 * nb :]


def _cluster(
    est: HardmaxSentimentClassifier, text: str, words: list[str], r: _Review, row: torch.Tensor, orders: dict
) -> None:
    """Delete the words of ``explain``'s cluster with the largest share toward the predicted class,
    and as many words chosen by each method; the drops of p go into ``r.cluster``."""
    side = 1.0 if r.H > 0 else -1.0
    e = explain(est, text)
    best = max(e.clusters, key=lambda c: side * c.contribution)
    members = set(best.words)
    out = np.array([w in members for w in words])
    m = int(out.sum())
    keeps = [np.ones(r.n, dtype=bool), ~out]
    for name in orders:
        keep = np.ones(r.n, dtype=bool)
        keep[orders[name][:m]] = False
        keeps.append(keep)
    p = _probabilities(est.model_, row, np.stack(keeps), side)
    r.cluster = {"cluster": float(p[0] - p[1]), **{k: float(p[0] - q) for k, q in zip(orders, p[2:])}}
    r.cluster_words = m


def _scores(
    model: SentimentTransformer,
    methods: tuple[str, ...],
    dyn: dict,
    b: int,
    row: torch.Tensor,
    index: int,
    s: MethodSettings,
    stream: int = 0,
) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """Every method's scores of review ``b`` of a batch (``dyn``: the batched ``exact``/``followers``/``rollout``), and
    seconds. ``stream`` 1 (the sanity check's re-initialised model) gives KernelShap its own coalitions: sharing the
    trained model's made the two models' scores correlate through the sampling noise (+0.30 at d = 16)."""
    n = row.numel()
    scores, seconds = {}, {}
    for m in methods:
        t0 = time.perf_counter()
        if m in dyn:
            scores[m] = dyn[m][b, :n].numpy()
        elif m == "random":
            scores[m] = np.random.default_rng([s.seed, index, 1]).random(n)
        elif m in OCCLUSION_METHODS:
            scores[m] = occlusion_scores(model, row, by_word=m == "occlusion-word")
        else:
            scores[m] = captum_scores(m, model, row, s, seed=s.seed * 1_000_003 + index + stream * SANITY_SEED_OFFSET)
        seconds[m] = time.perf_counter() - t0
    return scores, seconds


def _batch(
    est: HardmaxSentimentClassifier,
    model: SentimentTransformer,
    words: list[list[str]],
    start: int,
    settings: StudySettings,
    *,
    measure: bool,
    texts: list[str] | None = None,
    stream: int = 0,
) -> list[_Review]:
    """Score (and, when ``measure``, delete) the reviews ``words`` (indices from ``start``) in one batched run."""
    data = est.encode(tokens=words)
    s = settings.baselines
    t0 = time.perf_counter()
    run = contributions(model, data.ids, data.mask)
    dyn = dynamics_scores(run.traj, run.a, s)
    shared = (time.perf_counter() - t0) / len(words)
    res = relative_residual(run.a, run.bias, run.H)
    out = []
    for b, w in enumerate(words):
        n, index = len(w), start + b
        row = data.ids[b, :n]
        scores, seconds = _scores(model, settings.methods, dyn, b, row, index, s, stream)
        for m in dyn:
            seconds[m] = seconds.get(m, 0.0) + shared
        r = _Review(n=n, H=float(run.H[b]), residual=float(res[b]), scores=scores, seconds=seconds)
        if measure:
            # one tie-break stream per method: a shared one made a method's numbers depend on the methods before it
            orders = {
                m: ranking(scores[m], m in SIGNED, r.H, np.random.default_rng([s.seed, index, 2, METHODS.index(m)]))
                for m in settings.methods
            }
            _measure(model, r, row, orders)
            assert texts is not None  # measured reviews come with their texts
            _cluster(est, texts[b], w, r, row, orders)
        out.append(r)
    return out


def _check_inputs(est: Any, texts: Any, settings: StudySettings) -> tuple[list[str], list[list[str]]]:
    _check_estimator(est, "the faithfulness study")
    texts = check_texts(texts, "texts")
    require_captum(settings.methods)
    words = est.known_words(texts)
    empty = [i for i, w in enumerate(words) if not w]
    if empty:
        raise InputError(
            f"texts[{empty[0]}] has no word the model knows ({len(empty)} such text{'s' if len(empty) > 1 else ''}); "
            "the model reads <unk> alone there and no word can be ranked: drop such texts"
        )
    return texts, words


def faithfulness(
    estimator: HardmaxSentimentClassifier, texts: Any, settings: StudySettings | None = None, *, progress: bool = False
) -> dict[str, Any]:
    """Comprehensiveness, sufficiency, deletion curves, rank agreement, the sanity check and the cluster
    deletion of every method of ``settings`` on ``texts`` (module docstring); a JSON-able dict that
    records every setting. Texts with no known word are refused (an InputError naming the first)."""
    settings = StudySettings() if settings is None else settings
    if not isinstance(settings, StudySettings):
        raise InputError(f"settings must be a StudySettings, got {type(settings).__name__}")
    texts, words = _check_inputs(estimator, texts, settings)
    model = estimator.model_
    t0 = time.perf_counter()
    reviews: list[_Review] = []
    bs = settings.batch_size
    with progress_bar(len(texts), "faithfulness", enabled=progress, unit="reviews") as advance:
        for a in range(0, len(texts), bs):
            reviews += _batch(estimator, model, words[a : a + bs], a, settings, measure=True, texts=texts[a : a + bs])
            advance(len(words[a : a + bs]))
    sanity = _sanity(estimator, words, reviews, settings)
    return _summarize(estimator, reviews, sanity, settings, seconds=time.perf_counter() - t0)


def _sanity(
    est: HardmaxSentimentClassifier, words: list[list[str]], reviews: list[_Review], settings: StudySettings
) -> dict[str, np.ndarray]:
    """Per method (not ``random``: it does not read the model), the Spearman correlation between its
    scores for the trained model and for a re-initialised one, on the first ``sanity_reviews`` reviews."""
    S = min(settings.sanity_reviews, len(words))
    methods = tuple(m for m in settings.methods if m != "random")
    if S == 0 or not methods:
        return {}
    fresh = reinitialized(est.model_, settings.baselines.seed + 1)
    sub = StudySettings(methods=methods, baselines=settings.baselines, batch_size=settings.batch_size)
    again: list[_Review] = []
    for a in range(0, S, settings.batch_size):
        again += _batch(est, fresh, words[a : min(S, a + settings.batch_size)], a, sub, measure=False, stream=1)
    return {m: np.array([spearman(r.scores[m], q.scores[m]) for r, q in zip(reviews, again)]) for m in methods}


def sample_texts(
    path: str | os.PathLike, n: int, seed: int, *, split: str | None = None, split_seed: int = 0
) -> tuple[list[str], np.ndarray, str]:
    """``n`` reviews of the data file ``path`` drawn without replacement (seeded by ``seed``, in file
    order): from the test part of ``split`` (:func:`attndyn.sentiment._corpus.split_indices` with
    ``split_seed``, the run's protocol) or, with ``split`` None, from every row. Returns the texts,
    their row indices and a description of the pool; fewer than ``n`` when the pool is smaller."""
    from ._corpus import split_indices
    from ._data import read_reviews

    check_integer(n, "n", low=1)
    reviews = read_reviews(path)
    if split is None:
        pool, name = np.arange(len(reviews.texts)), f"all {len(reviews.texts)} rows of {Path(path).name}"
    else:
        pool = split_indices(reviews, split, split_seed)[1]
        name = f"the {split} split's {len(pool)} test reviews of {Path(path).name} (split seed {split_seed})"
    rows = np.sort(np.random.default_rng(seed).choice(pool, size=min(n, len(pool)), replace=False))
    return [reviews.texts[i] for i in rows], rows, name


# ---- statistics ---------------------------------------------------------------------------
def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rank correlation (average ranks for ties); NaN when either side is constant.

    >>> spearman(np.array([1.0, 2, 3]), np.array([10.0, 30, 20])), spearman(np.ones(3), np.arange(3.0))
    (0.5, nan)
    """
    from scipy.stats import rankdata

    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    return float(np.corrcoef(rankdata(x), rankdata(y))[0, 1])


def kendall(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's tau-b; NaN when either side is constant."""
    from scipy.stats import kendalltau

    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    return float(kendalltau(x, y).statistic)


def _interval(x: np.ndarray, settings: StudySettings, key: int) -> list[float]:
    """Percentile bootstrap interval of the mean over reviews (NaNs dropped), seeded by the study's seed and
    ``key`` (one key per quantity, the same for every method: the methods are resampled alike)."""
    from scipy.stats import bootstrap

    x = np.asarray(x, dtype=np.float64)
    x = x[np.isfinite(x)]
    if len(x) == 0:
        return [math.nan, math.nan]
    if len(x) < 2 or np.ptp(x) == 0:
        return [float(x.mean())] * 2
    r = bootstrap(
        (x,),
        np.mean,
        n_resamples=settings.bootstrap_resamples,
        confidence_level=settings.confidence,
        method="percentile",
        rng=np.random.default_rng([settings.baselines.seed, key]),
    )
    return [float(r.confidence_interval.low), float(r.confidence_interval.high)]


def _stat(x: np.ndarray, settings: StudySettings, key: int) -> dict[str, Any]:
    x = np.asarray(x, dtype=np.float64)
    ok = x[np.isfinite(x)]
    return {"mean": float(ok.mean()) if len(ok) else math.nan, "ci": _interval(x, settings, key), "n": int(len(ok))}


# ---- the result ---------------------------------------------------------------------------
def _by_level(x: np.ndarray, settings: StudySettings, key: int) -> list[dict[str, Any]]:
    """The statistic of each column of ``x`` (N, len(BINS)): one deletion level each, bootstrap keys from ``key``."""
    return [{"fraction": f, **_stat(x[:, j], settings, key + j)} for j, f in enumerate(BINS)]


def _method_summary(m: str, reviews: list[_Review], sanity: dict, settings: StudySettings) -> dict[str, Any]:
    comp = np.array([r.comp[m] for r in reviews])  # (N, len(BINS))
    suff = np.array([r.suff[m] for r in reviews])
    out: dict[str, Any] = {
        "signed": m in SIGNED,
        "comprehensiveness": {
            **_stat(comp.mean(axis=1), settings, 0),
            "by_fraction": comp.mean(axis=0).tolist(),
            "by_level": _by_level(comp, settings, 10),
        },
        "sufficiency": {
            **_stat(suff.mean(axis=1), settings, 1),
            "by_fraction": suff.mean(axis=0).tolist(),
            "by_level": _by_level(suff, settings, 20),
        },
        "deletion_curve": np.array([r.curve[m] for r in reviews]).mean(axis=0).tolist(),
        "cluster_size_deletion": _stat(np.array([r.cluster[m] for r in reviews]), settings, 2),
        "seconds_per_review": float(np.mean([r.seconds[m] for r in reviews])),
        "sanity_spearman": _stat(sanity[m], settings, 3) if m in sanity else None,
    }
    if m != "exact" and "exact" in settings.methods:  # paired with the exact attribution, review by review
        dc = comp - np.array([r.comp["exact"] for r in reviews])
        ds = suff - np.array([r.suff["exact"] for r in reviews])
        out["minus_exact"] = {
            "comprehensiveness": {**_stat(dc.mean(1), settings, 4), "by_level": _by_level(dc, settings, 30)},
            "sufficiency": {**_stat(ds.mean(1), settings, 5), "by_level": _by_level(ds, settings, 40)},
        }
    return out


TWIN_ATOL = 1e-9  # a method whose p drops equal exact's to this on every review ranks as exact does


def _against_exact(per: dict[str, np.ndarray], sign: float, settings: StudySettings, key: int) -> dict[str, Any]:
    """Exact against the best other method on one column of values (``per``: method -> (N,), ``sign`` +1
    where higher is better): ``exact_advantage`` > 0 where exact is better, paired over reviews. Methods
    equal to exact on every review are its ``twins`` and not rivals."""
    e = per["exact"]
    twins = [m for m, v in per.items() if m != "exact" and np.allclose(v, e, rtol=0, atol=TWIN_ATOL)]
    means = {m: float(v.mean()) for m, v in per.items()}
    out: dict[str, Any] = {"exact_mean": means["exact"], "twins": twins}
    rivals = [m for m in per if m != "exact" and m not in twins]
    if not rivals:
        return {**out, "best": "exact", "rival": None}
    rival = max(rivals, key=lambda m: sign * means[m])
    adv = _stat(sign * (e - per[rival]), settings, key)
    best = "exact" if adv["mean"] >= 0 else rival
    return {**out, "best": best, "rival": rival, "rival_mean": means[rival], "exact_advantage": adv}


def _versus_exact(reviews: list[_Review], settings: StudySettings) -> dict[str, Any] | None:
    """Where the exact attribution wins: per metric, at each deletion level of :data:`BINS` and on the
    AOPC, the exact attribution against the best method that ranks otherwise (None without exact or rivals)."""
    if "exact" not in settings.methods or len(settings.methods) < 2:
        return None
    out: dict[str, Any] = {"better": {"comprehensiveness": "higher", "sufficiency": "lower"}}
    for key, name, sign, seed in (("comp", "comprehensiveness", 1.0, 50), ("suff", "sufficiency", -1.0, 60)):
        per = {m: np.array([getattr(r, key)[m] for r in reviews]) for m in settings.methods}  # (N, len(BINS))
        levels = [
            {"fraction": f, **_against_exact({m: v[:, j] for m, v in per.items()}, sign, settings, seed + j)}
            for j, f in enumerate(BINS)
        ]
        aopc = _against_exact({m: v.mean(axis=1) for m, v in per.items()}, sign, settings, seed + len(BINS))
        out[name] = {"by_level": levels, "aopc": aopc}
    return out


def _agreement(reviews: list[_Review], methods: tuple[str, ...]) -> dict[str, dict[str, dict[str, float]]]:
    """Mean Spearman and Kendall correlation over reviews between every two methods' ranking keys
    (signed scores turned toward the predicted class)."""
    keys = [{m: r.scores[m] * (1.0 if (m not in SIGNED or r.H > 0) else -1.0) for m in methods} for r in reviews]
    out: dict[str, dict[str, dict[str, float]]] = {"spearman": {}, "kendall": {}}
    for name, fn in (("spearman", spearman), ("kendall", kendall)):
        for i, a in enumerate(methods):
            out[name][a] = {}
            for b in methods[i + 1 :]:
                vals = np.array([fn(k[a], k[b]) for k in keys])
                out[name][a][b] = float(np.nanmean(vals)) if np.isfinite(vals).any() else math.nan
    return out


def _summarize(
    est: HardmaxSentimentClassifier, reviews: list[_Review], sanity: dict, settings: StudySettings, *, seconds: float
) -> dict[str, Any]:
    model = est.model_
    residual = np.array([r.residual for r in reviews])
    sizes = np.array([r.n for r in reviews])
    words = np.array([r.cluster_words for r in reviews])
    return {
        "model": {
            "d": model.config.d,
            "layers": model.config.layers,
            "alpha": float(model.alpha.detach()),
            "vocabulary": model.config.vocab_size,
        },
        "reviews": {
            "n": len(reviews),
            "words_mean": float(sizes.mean()),
            "words_min": int(sizes.min()),
            "words_max": int(sizes.max()),
        },
        "settings": {
            "methods": list(settings.methods),
            **settings.baselines.to_dict(),
            "fractions": list(BINS),
            "curve_fractions": list(CURVE),
            "removal": "masked as padding (the model's own mask); a review left empty reads <unk> alone",
            "target": "probability of the class predicted for the whole review",
            "ties": "broken at random (seeded)",
            "sanity_reviews": min(settings.sanity_reviews, len(reviews)),
            "sanity_model_seed": settings.baselines.seed + 1,
            "bootstrap": {
                "resamples": settings.bootstrap_resamples,
                "confidence": settings.confidence,
                "method": "percentile",
            },
        },
        "exactness": {
            "max_relative_residual": float(residual.max()),
            "tolerance": EXACT_RTOL,
            "reviews_over_tolerance": int((residual > EXACT_RTOL).sum()),
        },
        "methods": {m: _method_summary(m, reviews, sanity, settings) for m in settings.methods},
        "versus_exact": _versus_exact(reviews, settings),
        "agreement": _agreement(reviews, settings.methods),
        "cluster": {
            **_stat(np.array([r.cluster["cluster"] for r in reviews]), settings, 99),
            "words_mean": float(words.mean()),
            "fraction_mean": float((words / sizes).mean()),
        },
        "seconds": seconds,
    }


def stat_text(stat: dict[str, Any] | None, spec: str) -> str:
    """A statistic's mean formatted with ``spec``, or ``-`` where there is none: no statistic (a method without
    a sanity check), or one measured on no review (its mean NaN in memory, null once read from JSON)."""
    mean = None if stat is None else stat.get("mean")
    return "-" if mean is None or not math.isfinite(mean) else format(mean, spec)


def _pct(f: float) -> str:
    return f"{100 * f:g}%"


def table_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per method (and one for the cluster explanation): the numbers of the CSV table, the
    AOPCs and, beside them, comprehensiveness and sufficiency at each deletion level
    (``comprehensiveness_at_1pct``, ...)."""
    rows = []
    fractions = result["settings"]["fractions"]
    for m, r in result["methods"].items():
        c, s, k = r["comprehensiveness"], r["sufficiency"], r["cluster_size_deletion"]
        san = r["sanity_spearman"]
        levels = {
            f"{key}_at_{100 * f:g}pct": v
            for key in ("comprehensiveness", "sufficiency")
            for f, v in zip(fractions, r[key]["by_fraction"])
        }
        rows.append(
            {
                "method": m,
                "signed": r["signed"],
                "comprehensiveness_aopc": c["mean"],
                "comprehensiveness_ci_low": c["ci"][0],
                "comprehensiveness_ci_high": c["ci"][1],
                "sufficiency_aopc": s["mean"],
                "sufficiency_ci_low": s["ci"][0],
                "sufficiency_ci_high": s["ci"][1],
                **levels,
                "cluster_size_deletion_drop": k["mean"],
                "sanity_spearman": None if san is None else san["mean"],
                "seconds_per_review": r["seconds_per_review"],
            }
        )
    cl = result["cluster"]
    rows.append({"method": "cluster (explain)", "signed": True, "cluster_size_deletion_drop": cl["mean"]})
    return rows


def _level_tables(result: dict[str, Any]) -> list[str]:
    """Comprehensiveness and sufficiency of every method at each deletion level, beside the AOPC."""
    fractions = result["settings"]["fractions"]
    lines = []
    for key, better in (("comprehensiveness", "higher"), ("sufficiency", "lower")):
        lines.append(
            f"{key + ' by level (' + better + ' better)':<40}"
            + "".join(f"{_pct(f):>8}" for f in fractions)
            + f"{'AOPC':>8}"
        )
        for m, r in result["methods"].items():
            values = "".join(f"{v:>8.4f}" for v in r[key]["by_fraction"])
            lines.append(f"  {m:<38}{values}{r[key]['mean']:>8.4f}")
    return lines


def _margin(label: str, v: dict[str, Any]) -> str:
    """``label`` and how far the level's winner (exact or its rival) is ahead of the other, with the CI."""
    if v["rival"] is None:
        return f"{label} (every other method ranks as exact does)"
    adv = v["exact_advantage"]
    sign = 1.0 if v["best"] == "exact" else -1.0  # the winner's margin
    lo, hi = sorted(sign * x for x in adv["ci"])
    noise = ", CI spans 0" if lo <= 0 <= hi else ""
    who = f"over {v['rival']}" if v["best"] == "exact" else f"by {v['best']}"
    return f"{label} {who} (+{sign * adv['mean']:.4f} [{lo:.4f}, {hi:.4f}]{noise})"


def _verdict(result: dict[str, Any]) -> list[str]:
    """Where the exact attribution wins and where it does not, from the result's ``versus_exact``."""
    vs = result.get("versus_exact")
    if not vs:
        return []
    lines = [
        "where exact wins: at each level and on the AOPC, exact against the best other method, paired over "
        "reviews [95% CI]; methods that rank as exact does (its twins) are not rivals"
    ]
    labels = [*map(_pct, result["settings"]["fractions"]), "AOPC"]
    for key in ("comprehensiveness", "sufficiency"):
        cells = list(zip(labels, [*vs[key]["by_level"], vs[key]["aopc"]]))
        wins = [_margin(lab, v) for lab, v in cells if v["best"] == "exact"]
        losses = [_margin(lab, v) for lab, v in cells if v["best"] != "exact"]
        lines.append(f"  {key}, exact best at: " + ("; ".join(wins) if wins else "no level"))
        lines.append(f"  {key}, exact beaten at: " + ("; ".join(losses) if losses else "no level"))
    twins = set.intersection(
        *(set(v["twins"]) for k in ("comprehensiveness", "sufficiency") for v in vs[k]["by_level"])
    )
    if twins:
        lines.append(f"  twins of exact at every level: {', '.join(m for m in result['methods'] if m in twins)}")
    return lines


def report(result: dict[str, Any]) -> str:
    """A short text report of a study: the table, the levels, where exact wins, the cluster deletion,
    the exactness check."""
    n, st = result["reviews"]["n"], result["settings"]
    lines = [
        f"faithfulness on {n} reviews (mean {result['reviews']['words_mean']:.1f} known words), d = {result['model']['d']}, "
        f"alpha {result['model']['alpha']:.3f}; seed {st['seed']}, IG {st['ig_steps']} steps, KernelShap {st['kernelshap_samples']} samples",
        "removal: masked as padding; p = probability of the predicted class; AOPC over "
        + ", ".join(f"{100 * f:g}%" for f in st["fractions"]),
        f"{'method':<14} {'comprehensiveness (higher better)':<34} {'sufficiency (lower better)':<34} {'sanity rho':>10} {'s/review':>9}",
    ]
    for m, r in result["methods"].items():
        c, s, san = r["comprehensiveness"], r["sufficiency"], r["sanity_spearman"]
        lines.append(
            f"{m:<14} {c['mean']:.4f} [{c['ci'][0]:.4f}, {c['ci'][1]:.4f}]{'':<11} {s['mean']:.4f} [{s['ci'][0]:.4f}, {s['ci'][1]:.4f}]{'':<11} "
            f"{stat_text(san, '.3f'):>10} {r['seconds_per_review']:>9.4f}"
        )
    lines += _level_tables(result) + _verdict(result)
    cl = result["cluster"]
    others = ", ".join(f"{m} {r['cluster_size_deletion']['mean']:.4f}" for m, r in result["methods"].items())
    lines.append(
        f"cluster explanation: deleting the largest-share cluster ({cl['words_mean']:.1f} words, {100 * cl['fraction_mean']:.0f}% of a review) "
        f"drops p by {cl['mean']:.4f} [{cl['ci'][0]:.4f}, {cl['ci'][1]:.4f}]; as many words by {others}"
    )
    ex = result["exactness"]
    lines.append(
        f"exactness: max |sum a + b - H| / (sum |a| + |b|) = {ex['max_relative_residual']:.2e} "
        f"(tolerance {ex['tolerance']:g}; {ex['reviews_over_tolerance']} reviews over)"
    )
    lines.append(f"{result['seconds']:.1f} s in all")
    return "\n".join(lines) + "\n"

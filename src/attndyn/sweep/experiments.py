"""The registered cell functions: one random instance of a paper's statement per call.

Each calls the core engine and analysis (:func:`attndyn.is_good_triple`, :func:`attndyn.hardmax`,
:func:`attndyn.hardmax_theorem`, :func:`attndyn.softmax`, :func:`attndyn.softmax_geometry`) and
samples its instance with the same functions ``attndyn reproduce`` uses, so that a sweep is the
reproduce statistic with more seeds and a grid.

>>> from attndyn.sweep import EXPERIMENTS
>>> EXPERIMENTS["good_triple"](0, {"d": 2, "ensemble": "positive", "qk": "identity"})
{'good': True, 'paranormal': True}
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np

from .. import analysis
from .._hardmax import hardmax
from .._softmax import softmax
from ..analysis.spectral import is_good_triple, is_paranormal
from ..options import SaveAt, StopOnConvergence
from .registry import CellFailed, Param, experiment

if TYPE_CHECKING:
    from ..sentiment import HardmaxSentimentClassifier
    from ..sentiment.data import Reviews

__all__ = ["ENSEMBLES", "random_matrix", "good_triple", "theorem_1_1", "table_1", "sentiment_leaders"]

ENSEMBLES = ("ginibre", "goe", "uniform", "positive")


def random_matrix(rng: np.random.Generator, d: int, ensemble: str) -> np.ndarray:
    """A (d, d) random matrix: ``ginibre`` i.i.d. N(0, 1) entries (the real Ginibre ensemble);
    ``goe`` (G + G^T)/sqrt(2) (symmetric); ``uniform`` i.i.d. U[-1, 1]; ``positive`` ``|N(0, 1)|``
    entries (Perron-Frobenius: the leading eigenvalue is real, positive and simple)."""
    G = rng.standard_normal((d, d))
    if ensemble == "ginibre":
        return G
    if ensemble == "goe":
        return (G + G.T) / np.sqrt(2.0)
    if ensemble == "uniform":
        return rng.uniform(-1.0, 1.0, (d, d))
    if ensemble == "positive":
        return np.abs(G)
    raise ValueError(ensemble)


@experiment(
    "good_triple",
    params={
        "d": Param(int, minimum=1, maximum=1024, help="dimension"),
        "ensemble": Param(str, "ginibre", choices=ENSEMBLES, help="law of V"),
        "qk": Param(str, "identity", choices=("identity", "ginibre"), help="Q = K = I, or Q, K Ginibre too"),
    },
    outputs={"good": "bool", "paranormal": "bool"},
    primary="good",
    title="Softmax paper Definitions 1 and 2: is (Q, K, V) a good triple, is V paranormal?",
    reference={
        "param": "d",
        "x": 128,
        "value": 0.14,
        "label": "softmax paper: about 14% of Ginibre V at d = 128",
        "where": {"ensemble": "ginibre"},
    },
)
def good_triple(seed: int, *, d: int, ensemble: str, qk: str) -> dict:
    r"""Definition 1 (good triple: :math:`\lambda_1(V)` real, positive, simple and
    :math:`\langle Q\varphi_1, K\varphi_1\rangle > 0`) and Definition 2 (ii) (V paranormal) for one
    random V of ``ensemble``; Q = K = I or Ginibre. Section 4 of the softmax paper: about 14% of
    Ginibre V are good at d = 128 (with Q = K = I), a fraction that vanishes slowly as d grows."""
    rng = np.random.default_rng(seed)
    V = random_matrix(rng, d, ensemble)
    if qk == "identity":
        Q = K = np.eye(d)
    else:
        Q, K = rng.standard_normal((d, d)), rng.standard_normal((d, d))
    return {"good": is_good_triple(Q, K, V), "paranormal": is_paranormal(V)}


@experiment(
    "theorem_1_1",
    params={
        "n": Param(int, minimum=1, maximum=4096, help="tokens"),
        "d": Param(int, minimum=1, maximum=16, help="dimension"),
        "alpha": Param(float, minimum=1e-12, maximum=1e6, help="step size of eq. (1.1)"),
        "A": Param(str, "spd", choices=("spd", "identity"), help="random SPD A (cond <= cond_max) or I"),
        "cond_max": Param(float, 10.0, minimum=1.0, maximum=1e12, help="eigenvalues of A uniform in [1, cond_max]"),
        "layers": Param(int, 2000, minimum=1, maximum=1_000_000, help="layers at most"),
        "rtol": Param(float, 1e-13, minimum=0.0, maximum=1.0, help="stop when the relative change is below this"),
    },
    outputs={
        "holds": "bool",
        "converged": "bool",
        "leaders": "int64",
        "vertices": "int64",
        "late_leaders": "int64",
        "clusters": "int64",
        "layers_used": "int64",
    },
    primary="holds",
    title="Hardmax paper Theorem 1.1 on random tokens and random SPD A",
)
def theorem_1_1(seed: int, *, n: int, d: int, alpha: float, A: str, cond_max: float, layers: int, rtol: float) -> dict:
    """n tokens uniform in [-1, 1]^d and A = Q diag(U[1, cond_max]) Q^T (as ``attndyn reproduce``'s
    hardmax-theorem-1.1), eq. (1.1) run until the relative change is <= rtol, then every conclusion
    of Theorem 1.1 checked by :func:`attndyn.hardmax_theorem`; also the leaders, those that emerge
    after layer 0, the vertices of K, the clusters and the layers needed."""
    from ..reproduce.hardmax_experiments import random_spd

    rng = np.random.default_rng(seed)
    z = rng.uniform(-1.0, 1.0, (n, d))
    Am = random_spd(rng, d, cond_max=cond_max) if A == "spd" else None
    traj = hardmax(z, alpha=alpha, A=Am, layers=layers, save=SaveAt(every=None), stop=StopOnConvergence(rtol=rtol))
    rep = analysis.hardmax_theorem(traj)
    return {
        "holds": rep.holds,
        "converged": rep.converged,
        "leaders": len(rep.leaders),
        "vertices": 0 if rep.polytope is None else len(rep.polytope.vertices),
        "late_leaders": sum(k > 0 for k in rep.leaders.since),
        "clusters": len(rep.clusters),
        "layers_used": int(traj.stats.steps),
    }


@experiment(
    "table_1",
    params={
        "regime": Param(str, choices=("polytope", "hyperplanes", "paranormal", "collapse"), help="row of Table 1"),
        "n": Param(int, 12, minimum=1, maximum=1024, help="tokens"),
        "d": Param(int, 3, minimum=2, maximum=64, help="dimension"),
        "time": Param(float, 10.0, minimum=1e-12, maximum=1e4, help="horizon (rescaled dynamics (4))"),
        "collapse_time": Param(float, 20.0, minimum=1e-12, maximum=1e4, help="horizon of V = -I (dynamics (1))"),
        "step": Param(float, 0.1, minimum=1e-6, maximum=10.0, help="rk4 step"),
    },
    outputs={"matches": "bool", "hyperplanes": "int64", "vertices": "int64", "final_change": "float64"},
    primary="matches",
    title="Softmax paper Table 1: does the limit geometry match the row's theorem?",
)
def table_1(seed: int, *, regime: str, n: int, d: int, time: float, collapse_time: float, step: float) -> dict:
    """One random (Q, K, V) satisfying the hypotheses of the Table 1 row ``regime`` (sampled as in
    ``attndyn reproduce``'s softmax-table1) and n standard normal tokens; rescaled dynamics (4)
    (V = -I: dynamics (1)); ``matches`` is the verdict of :func:`attndyn.softmax_geometry`
    (Theorem 4.1 with the scale of the initial coordinates, as reproduce measures it)."""
    from ..reproduce.statistics import _instance, hyperplane_report

    rng = np.random.default_rng(seed)
    mats = _instance(regime, rng, d)
    x = rng.standard_normal((n, d))
    collapse = regime == "collapse"
    traj = softmax(
        x,
        time=collapse_time if collapse else time,
        step=step,
        rescaled=not collapse,
        save=SaveAt(every=5 if collapse else None),
        **mats,
    )
    if traj.stats.stop_reason == "solver_failed":  # a verdict on a failed solve would be noise, not a measurement
        raise CellFailed(f"the solve failed: {traj.stats.message}")
    rep = hyperplane_report(traj, 0) if regime == "hyperplanes" else analysis.softmax_geometry(traj, 0, regime=regime)
    m = rep.measured
    return {
        "matches": bool(rep.holds),
        "hyperplanes": m.get("hyperplanes") if regime == "hyperplanes" else None,
        "vertices": m.get("vertices") if regime == "polytope" else None,
        "final_change": float(traj.stats.final_change[0]),
    }


@functools.lru_cache(maxsize=4)
def _sentiment_run(run: str, data: str) -> tuple[HardmaxSentimentClassifier, Reviews, np.ndarray]:
    """(estimator, reviews, shuffled test indices) of a run folder, loaded once per process: the run's data
    (``data``, else what its ``data.json`` records) and split, read by :class:`~attndyn.sentiment.runfolder.RunFolder`."""
    from ..sentiment import HardmaxSentimentClassifier
    from ..sentiment.data import read_reviews
    from ..sentiment.runfolder import RunFolder

    folder = RunFolder(run)
    est = HardmaxSentimentClassifier.load(folder.path)
    info = folder.data_or_default(est.random_state)
    reviews = read_reviews(data or info["data"])
    _, test = folder.split(reviews, info)
    return est, reviews, test[np.random.default_rng(0).permutation(len(test))]


@experiment(
    "sentiment_leaders",
    params={
        "run": Param(str, help="a run folder of `attndyn sentiment train`"),
        "data": Param(str, "", help="reviews (default: the run's data.json)"),
    },
    outputs={
        "d": "int64",
        "words": "int64",
        "leaders": "int64",
        "leaders_per_word": "float64",
        "correct": "bool",
        "probability": "float64",
    },
    primary="leaders",
    title="Hardmax paper Section 6: leaders per review of a trained sentiment model",
)
def sentiment_leaders(seed: int, *, run: str, data: str) -> dict:
    """Review number ``seed`` of the run's test split (in a fixed shuffled order) through the trained
    model's hardmax layers; ``leaders`` are the distinct leader words at the last layer
    (:func:`attndyn.sentiment.explain`), ``correct`` whether the prediction is right."""
    from ..sentiment import explain

    est, reviews, order = _sentiment_run(run, data)
    if seed >= len(order):
        raise IndexError(f"seed {seed} is beyond the {len(order)} test reviews of {run}")
    i = int(order[seed])
    ex = explain(est, reviews.texts[i])
    return {
        "d": int(est.model_.config.d),
        "words": len(ex.words),
        "leaders": len(ex.leaders),
        "leaders_per_word": len(ex.leaders) / len(ex.words),
        "correct": bool(ex.label == est.classes_[int(reviews.labels[i])]),
        "probability": float(ex.probability),
    }

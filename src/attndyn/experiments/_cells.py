"""The registered cell functions: one random instance of a paper's statement per call (one review of a trained
sentiment model for :func:`sentiment_leaders`), and the per-instance checks they share with ``attndyn reproduce``.
Each registers here, where it is defined, so :data:`~attndyn.experiments.EXPERIMENTS` lists them all as soon as
:mod:`attndyn.experiments` is imported.

:func:`theorem_1_1_run` and :func:`table1_solve` are the one place where a Theorem 1.1 instance is run
and checked and a Table 1 instance is solved; the cells below and reproduce's Monte Carlo claims both
call them, on instances drawn by :mod:`attndyn.experiments._samplers`.

>>> from attndyn.experiments import EXPERIMENTS
>>> EXPERIMENTS["good-triple"](0, {"d": 2, "ensemble": "positive", "qk": "identity"})
{'good': True, 'paranormal': True}
"""

from __future__ import annotations

import functools
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import analysis
from .._errors import HypothesisWarning
from .._hardmax import hardmax
from .._options import SaveAt, StopOnConvergence
from .._softmax import softmax
from .._trajectory import SoftmaxTrajectory
from ..analysis._spectral import is_good_triple, is_paranormal
from ..analysis._theorems import HardmaxTheoremReport
from ._registry import CellFailed, Param, experiment
from ._samplers import ENSEMBLES, TABLE1_REGIMES, random_matrix, table1_instance, theorem_1_1_instance

if TYPE_CHECKING:
    from ..sentiment import HardmaxSentimentClassifier
    from ..sentiment._data import Reviews

__all__ = ["theorem_1_1_run", "table1_solve", "good_triple", "theorem_1_1", "table_1", "sentiment_leaders"]


def theorem_1_1_run(
    z: np.ndarray, A: np.ndarray | None, *, alpha: float, layers: int, rtol: float
) -> tuple[dict[str, Any], HardmaxTheoremReport]:
    """Eq. (1.1) of the hardmax paper from tokens ``z`` (n, d) with matrix ``A`` (None: I) and step ``alpha``,
    run until the relative change is <= ``rtol`` (at most ``layers`` layers), then every conclusion of
    Theorem 1.1 checked by :func:`attndyn.hardmax_theorem`. Returns the measurements (``holds``,
    ``converged``, the leaders, those that emerge after layer 0, the vertices of K, the clusters, the
    layers used) and the report."""
    traj = hardmax(z, alpha=alpha, A=A, layers=layers, save=SaveAt(every=None), stop=StopOnConvergence(rtol=rtol))
    rep = analysis.hardmax_theorem(traj)
    row = {
        "holds": rep.holds is True,  # undecided (None) is not a confirmation
        "converged": rep.converged,
        "leaders": len(rep.leaders),
        "vertices": 0 if rep.polytope is None else len(rep.polytope.vertices),
        "late_leaders": sum(k > 0 for k in rep.leaders.since),
        "clusters": len(rep.clusters),
        "layers_used": int(traj.stats.steps),
    }
    return row, rep


def table1_solve(
    x: np.ndarray, mats: dict[str, np.ndarray], regime: str, *, time: float, step: float
) -> SoftmaxTrajectory:
    """One Table 1 instance ``mats`` (see :func:`~attndyn.experiments._samplers.table1_instance`) on the
    sequences ``x`` ((n, d) or (M, n, d)) with rk4 steps ``step`` up to ``time``: the rescaled dynamics (4)
    of the softmax paper, one state kept per unit of time (so that :func:`attndyn.softmax_geometry` can tell
    whether what its check reads has settled), except V = -I (``collapse``): the original dynamics (1), every 5th
    step kept."""
    collapse = regime == "collapse"
    with warnings.catch_warnings():  # a step beyond rk4's interval: the cell fails with its own reason (below)
        warnings.simplefilter("ignore", HypothesisWarning)
        return softmax(
            x,
            time=time,
            Q=mats["Q"],
            K=mats["K"],
            V=mats["V"],
            step=step,
            rescaled=not collapse,
            save=SaveAt(every=5 if collapse else max(1, round(1.0 / step))),
        )


@experiment(
    "good-triple",
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
        "where": {"ensemble": "ginibre", "qk": "identity"},  # with Q, K Ginibre too the fraction is about half
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
    "theorem-1.1",
    params={
        "n": Param(int, minimum=1, maximum=4096, help="tokens"),
        "d": Param(int, minimum=1, maximum=16, help="dimension"),
        "alpha": Param(float, minimum=1e-12, maximum=1e6, help="step size of eq. (1.1)"),
        "A": Param(str, "spd", choices=("spd", "identity"), help="random SPD A (cond <= cond_max) or I"),
        "cond_max": Param(float, 10.0, minimum=1.0, maximum=1e12, help="eigenvalues of A uniform in [1, cond_max]"),
        "layers": Param(int, 2000, minimum=1, maximum=1_000_000, help="layers at most"),
        "rtol": Param(
            float, 1e-13, minimum=1e-300, maximum=1.0, help="stop when the relative change is below this (> 0)"
        ),
    },
    outputs={"holds": "bool", "converged": "bool"}
    | dict.fromkeys(("leaders", "vertices", "late_leaders", "clusters", "layers_used"), "int64"),
    primary="holds",
    title="Hardmax paper Theorem 1.1 on random tokens and random SPD A",
)
def theorem_1_1(seed: int, *, n: int, d: int, alpha: float, A: str, cond_max: float, layers: int, rtol: float) -> dict:
    """n tokens uniform in [-1, 1]^d and A = Q diag(U[1, cond_max]) Q^T (the instances of ``attndyn
    reproduce``'s hardmax-theorem-1.1), checked by :func:`theorem_1_1_run`. A run the check cannot decide (not
    converged within ``layers``: :attr:`~attndyn.analysis.HardmaxTheoremReport.undecided`) is a failed cell
    (:class:`CellFailed`, with the reason), never ``holds = False``."""
    rng = np.random.default_rng(seed)
    z, Am = theorem_1_1_instance(rng, n, d, spd=A == "spd", cond_max=cond_max)
    row, rep = theorem_1_1_run(z, Am, alpha=alpha, layers=layers, rtol=rtol)
    if rep.holds is None:  # stored as holds = False it read as a counterexample to a proven theorem
        raise CellFailed(f"Theorem 1.1's check is undecided: {rep.undecided}")
    return row


@experiment(
    "table-1",
    params={
        "regime": Param(str, choices=TABLE1_REGIMES, help="row of Table 1"),
        "n": Param(int, 12, minimum=1, maximum=1024, help="tokens"),
        "d": Param(int, 3, minimum=2, maximum=64, help="dimension"),
        "time": Param(float, 15.0, minimum=1e-12, maximum=1e4, help="horizon (rescaled dynamics (4))"),
        "collapse_time": Param(float, 20.0, minimum=1e-12, maximum=1e4, help="horizon of V = -I (dynamics (1))"),
        "step": Param(float, 0.1, minimum=1e-6, maximum=10.0, help="rk4 step"),
    },
    outputs={"matches": "bool"}
    | dict.fromkeys(("hyperplanes", "vertices", "initial_hull_vertices"), "int64")
    | dict.fromkeys(("fraction_at_vertices", "final_change"), "float64"),
    optional=("hyperplanes", "vertices", "initial_hull_vertices", "fraction_at_vertices"),
    primary="matches",
    title="Softmax paper Table 1: does the limit geometry match the row's theorem?",
)
def table_1(seed: int, *, regime: str, n: int, d: int, time: float, collapse_time: float, step: float) -> dict:
    """One random (Q, K, V) satisfying the hypotheses of the Table 1 row ``regime`` (the instances of
    ``attndyn reproduce``'s softmax-table1) and n standard normal tokens, solved by :func:`table1_solve`;
    ``matches`` is the verdict of :func:`attndyn.softmax_geometry` on the row's regime, read at the horizon; an
    instance whose tokens have not settled there (the library's gate,
    :attr:`~attndyn.analysis.GeometryReport.undecided`) is a failed cell with the reason. It also measures the
    parallel hyperplanes the tokens approach (good triples), and for V = I the vertices of K, of the initial hull
    conv(x_i(0)), and the fraction of tokens at a vertex of K (None where the row does not measure them)."""
    rng = np.random.default_rng(seed)
    mats = table1_instance(regime, rng, d)
    x = rng.standard_normal((n, d))
    traj = table1_solve(x, mats, regime, time=collapse_time if regime == "collapse" else time, step=step)
    if traj.stats.stop_reason == "solver_failed":  # a verdict on a failed solve would be noise, not a measurement
        raise CellFailed(f"the solve failed: {traj.stats.message}")
    jump = float(traj.stats.final_change[0]) * traj.params.step  # the last step's move, relative to the tokens' size
    if jump > 1.0:  # step = 10 gave rows with final_change 18.8 recorded as ok measurements
        raise CellFailed(
            f"the last rk4 step moved the tokens by {jump:.3g} times their size: step = {step:g} does not resolve "
            "the dynamics, so the verdict would be noise; lower step"
        )
    rep = analysis.softmax_geometry(traj, 0, regime=regime)
    if rep.undecided is not None:  # a mismatch read on tokens still moving is not a counterexample to the row
        raise CellFailed(f"the limit verdict is undecided: {rep.undecided}")
    m = rep.measured
    polytope = regime == "polytope"
    return {
        "matches": rep.measured_holds,
        "hyperplanes": m.get("hyperplanes") if regime == "hyperplanes" else None,
        "vertices": m.get("vertices") if polytope else None,
        "initial_hull_vertices": len(analysis.Polytope.from_points(x).vertices) if polytope else None,
        "fraction_at_vertices": float(m["fraction_at_vertices"]) if polytope else None,
        "final_change": float(traj.stats.final_change[0]),
    }


@functools.lru_cache(maxsize=4)
def _sentiment_run(run: str, data: str) -> tuple[HardmaxSentimentClassifier, Reviews, np.ndarray]:
    """(estimator, reviews, shuffled test indices) of a run folder, loaded once per process: the run's data
    (``data``, else what its ``data.json`` records) and split, opened by :func:`attndyn.sentiment._runs.open_run`."""
    from ..sentiment._runs import open_run

    est, reviews, _, test, _ = open_run(run, data=data or None)
    return est, reviews, test[np.random.default_rng(0).permutation(len(test))]


@experiment(
    "sentiment-leaders",
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
    (:func:`attndyn.sentiment.explain`), ``correct`` whether the prediction is right. A seed past the test
    split, or a review with no word the model knows (nothing to lead), is a failed cell (:class:`CellFailed`,
    not retried: it would fail again)."""
    from ..sentiment import explain

    est, reviews, order = _sentiment_run(run, data)
    if seed >= len(order):
        raise CellFailed(f"seed {seed} is past the {len(order)} test reviews of {run} (seeds 0 to {len(order) - 1})")
    i = int(order[seed])
    ex = explain(est, reviews.texts[i])
    if not ex.words:
        raise CellFailed(f"test review {seed} has no word the model knows, so no leaders to count")
    words = [w for w in ex.leaders if w in set(ex.words)]  # a register model's registers lead too: not words
    return {
        "d": int(est.model_.config.d),
        "words": len(ex.words),
        "leaders": len(words),
        "leaders_per_word": len(words) / len(ex.words),
        "correct": bool(ex.label == est.classes_[int(reviews.labels[i])]),
        "probability": float(ex.probability),
    }

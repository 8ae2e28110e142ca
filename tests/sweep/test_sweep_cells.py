"""The cell functions measure what the papers state, on instances a test can check by hand."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import attndyn
from attndyn import InputError
from attndyn.experiments import EXPERIMENTS, CellFailed
from attndyn.experiments._samplers import random_matrix

GT = EXPERIMENTS["good-triple"]


@pytest.mark.parametrize("ensemble", ["ginibre", "goe", "uniform", "positive"])
def test_good_triple_equals_the_definitions_on_the_same_seeded_matrix(ensemble):
    for seed in range(12):
        row = GT(seed, {"d": 5, "ensemble": ensemble, "qk": "ginibre"})
        rng = np.random.default_rng(seed)
        V = random_matrix(rng, 5, ensemble)
        Q, K = rng.standard_normal((5, 5)), rng.standard_normal((5, 5))
        assert row == {"good": attndyn.is_good_triple(Q, K, V), "paranormal": attndyn.is_paranormal(V)}


def test_ensembles_have_their_defining_structure():
    rng = np.random.default_rng(0)
    S = random_matrix(rng, 6, "goe")
    assert np.array_equal(S, S.T)
    assert (random_matrix(rng, 6, "positive") > 0).all()
    assert np.abs(random_matrix(rng, 6, "uniform")).max() <= 1


def test_positive_matrices_are_always_good_triples_with_identity_qk():
    # Perron-Frobenius: a positive matrix has a real, positive, simple eigenvalue of largest modulus
    assert all(GT(s, {"d": 7, "ensemble": "positive", "qk": "identity"})["good"] for s in range(20))


def test_d1_good_triple_iff_v_positive():
    for s in range(20):
        v = np.random.default_rng(s).standard_normal()
        assert GT(s, {"d": 1, "ensemble": "ginibre", "qk": "identity"})["good"] == bool(v > 0)


def test_theorem_1_1_cell_matches_the_engine_and_the_theorem():
    params = {"n": 6, "d": 2, "alpha": 0.5, "A": "spd", "cond_max": 10.0, "layers": 2000, "rtol": 1e-13}
    row = EXPERIMENTS["theorem-1.1"](3, params)
    assert row["holds"] and row["converged"]
    assert 1 <= row["vertices"] <= row["leaders"] <= 6 and row["clusters"] <= 6
    assert 0 < row["layers_used"] < 2000
    # the same run through the public API: the leaders that emerged after layer 0
    from attndyn.experiments._samplers import random_spd

    rng = np.random.default_rng(3)
    z = rng.uniform(-1.0, 1.0, (6, 2))
    traj = attndyn.hardmax(z, alpha=0.5, A=random_spd(rng, 2, cond_max=10.0), layers=row["layers_used"])
    lead = attndyn.leaders(traj)
    assert row["leaders"] == len(lead) and row["late_leaders"] == sum(k > 0 for k in lead.since)
    assert EXPERIMENTS["theorem-1.1"](3, params) == row  # a pure function of (parameters, seed)


def test_theorem_1_1_single_token_is_its_own_leader():
    row = EXPERIMENTS["theorem-1.1"](
        0, {"n": 1, "d": 3, "alpha": 1.0, "A": "identity", "cond_max": 10.0, "layers": 10, "rtol": 1e-13}
    )
    assert row["holds"] and row["leaders"] == 1 and row["clusters"] == 1 and row["late_leaders"] == 0


@pytest.mark.parametrize("regime", ["polytope", "hyperplanes", "paranormal", "collapse"])
def test_table_1_cell_matches_its_row(regime):
    row = EXPERIMENTS["table-1"](
        1, {"regime": regime, "n": 8, "d": 3, "time": 15.0, "collapse_time": 20.0, "step": 0.1}
    )
    assert row["matches"] is True
    assert (row["hyperplanes"] is not None) == (regime == "hyperplanes")
    assert (row["vertices"] is not None) == (regime == "polytope")
    if regime == "hyperplanes":
        assert 1 <= row["hyperplanes"] <= 3
    if regime == "polytope":
        assert 1 <= row["vertices"] <= 8


POS = ["great", "wonderful", "superb", "loved"]
NEG = ["awful", "boring", "terrible", "hated"]
NEU = ["movie", "film", "plot", "actor", "scene"]


@pytest.fixture(scope="module")
def sentiment_run(tmp_path_factory):
    import csv

    from attndyn.sentiment import HardmaxSentimentClassifier

    rng = np.random.default_rng(0)
    texts, labels = [], []
    for i in range(80):
        y = i % 2
        words = list(rng.choice(POS if y else NEG, size=2)) + list(rng.choice(NEU, size=3))
        texts.append(" ".join(words))
        labels.append(y)
    folder = tmp_path_factory.mktemp("run")
    with open(folder / "reviews.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["review", "sentiment"])
        w.writerows([t, "positive" if y else "negative"] for t, y in zip(texts, labels))
    HardmaxSentimentClassifier(d=2, epochs=3, min_freq=1, lr=3e-2, embed_lr=1e-1, random_state=0).fit(
        texts, labels
    ).save(folder)
    (folder / "data.json").write_text(json.dumps({"data": str(folder / "reviews.csv"), "split": "random", "seed": 0}))
    return folder


def test_sentiment_leaders_counts_the_explanations_leaders(sentiment_run):
    from attndyn.sentiment import HardmaxSentimentClassifier, explain

    rows = [
        EXPERIMENTS["sentiment-leaders"](s, {"run": str(sentiment_run), "data": ""}) for s in range(24)
    ]  # the 24 test reviews
    est = HardmaxSentimentClassifier.load(sentiment_run)
    for r in rows:
        assert r["d"] == 2 and 1 <= r["leaders"] <= r["words"] <= 5  # words the model knows
        assert r["leaders_per_word"] == r["leaders"] / r["words"]
    first = explain(est, _review(sentiment_run, 0))
    assert rows[0]["leaders"] == len(first.leaders)
    with pytest.raises(CellFailed, match=r"seed 24 is past the 24 test reviews of .* \(seeds 0 to 23\)"):
        EXPERIMENTS["sentiment-leaders"](24, {"run": str(sentiment_run), "data": ""})


def test_sentiment_leaders_on_a_review_of_no_known_word_is_a_failed_cell_not_retried(sentiment_run, tmp_path):
    from attndyn.sweep import parse_spec, read_rows, run_sweep

    data = tmp_path / "unknown.csv"
    data.write_text("review,sentiment\n" + "qwerty zxcv blorp,negative\nblorp qwerty,positive\n" * 5)
    fixed = {"data": str(data)}
    spec = parse_spec({"experiment": "sentiment-leaders", "grid": {"run": [str(sentiment_run)]}, "fixed": fixed,
                       "monte_carlo": {"seeds": 2}})  # fmt: skip
    run = run_sweep(spec, tmp_path / "s", workers=0, log=lambda m: None)
    rows = read_rows(tmp_path / "s", all_rows=True)
    assert (run.ran, run.failed) == (2, 2) and list(rows["attempts"]) == [1, 1] and rows["words"].isna().all()
    assert list(rows["status"]) == ["failed", "failed"]
    assert list(rows["error"]) == [
        f"CellFailed: test review {s} has no word the model knows, so no leaders to count" for s in (0, 1)
    ]


def _review(run, seed):
    from attndyn.experiments._cells import _sentiment_run

    _, reviews, order = _sentiment_run(str(run), "")
    return reviews.texts[int(order[seed])]


def test_parameters_that_cannot_run_together_are_refused_with_the_spec(tmp_path):
    """Pass 6, L3: a sphere-phase time that is not a whole number of layers, and theorem-1.1's rtol = 0, were each in
    their declared range and failed in every cell; they are refused when the spec is read now."""
    from attndyn.sweep import load_spec

    spec = tmp_path / "s.toml"
    head = "[monte_carlo]\nseeds = 1\n"
    spec.write_text(f'experiment = "sphere-phase"\n[grid]\nbeta = [1.0]\n{head}[fixed]\ntime = 1.0\nstep = 0.3\n')
    with pytest.raises(
        InputError, match=r"grid point beta = 1\.0: method=\"discrete\" takes whole layers of step=0\.3"
    ):
        load_spec(spec)
    spec.write_text(f'experiment = "theorem-1.1"\n[grid]\nn = [4]\n{head}[fixed]\nd = 2\nalpha = 1.0\nrtol = 0.0\n')
    with pytest.raises(InputError, match=r"fixed\.rtol = 0\.0 must be >= 1e-300"):
        load_spec(spec)


def test_minus_zero_is_zero_in_a_cell_id():
    """Pass 6, L2: -0.0 and 0.0 are one value (the resume accepted the spec) but hashed to two cell ids, and the
    folder then read as damaged: a float parameter is canonical now."""
    p = EXPERIMENTS["sphere-energy"].params["beta"]
    assert math.copysign(1.0, p.check(-0.0, "beta")) == 1.0

"""Leaders, clusters, spectra and the idealized run on tiny random models, against naive computations."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import attndyn
from attndyn import InputError
from attndyn.pretrained import analyze, depth_clusters, effective_rank, idealized_run, leader_map, spectra
from attndyn.pretrained._imdb import auc, compare_review

TEXT = "The plot was dull, but the acting was wonderful."


def test_leaders_are_tokens_that_uniquely_maximise_their_own_scores(bert):
    fwd = bert.run(TEXT)
    lm = leader_map(fwd, bert.weights())
    L, H, n = lm.leads.shape
    assert (L, H, n) == (2, 3, len(fwd.tokens))
    for ell, w in enumerate(bert.weights()):
        x = fwd.hidden[ell].numpy()
        for h in range(H):
            q = x @ w.W_Q[h].numpy().T + w.b_Q[h].numpy()
            k = x @ w.W_K[h].numpy().T + w.b_K[h].numpy()
            s = q @ k.T
            for i in range(n):
                maxima = np.flatnonzero(s[i] == s[i].max())
                assert lm.leads[ell, h, i] == (list(maxima) == [i])
            follow_count = np.bincount(s.argmax(axis=1), minlength=n)  # no ties in random float64 scores
            assert lm.indegree[ell, h].tolist() == follow_count.tolist()
    torch.testing.assert_close(lm.received, fwd.attention.sum(dim=-2))
    assert lm.counts.shape == (L, n) and lm.counts.sum() == lm.leads.sum()


def test_leader_persistence_is_the_jaccard_of_consecutive_layers():
    from attndyn.pretrained._leaders import LeaderMap

    leads = torch.zeros(3, 2, 4, dtype=torch.bool)
    leads[0, 0, [0, 1]] = True
    leads[1, 1, [1, 2]] = True
    z = torch.zeros(3, 2, 4)
    lm = LeaderMap(leads=leads, indegree=z.long(), received=z)
    assert lm.persistence() == [1 / 3, 0.0]  # {0, 1} vs {1, 2}; {1, 2} vs {}
    assert lm.layer_leaders(0) == [0, 1] and lm.layer_leaders(0, min_heads=2) == []


def test_depth_clusters_by_hand():
    # depth 0: three orthogonal directions; depth 1: two tokens nearly parallel, one opposite
    h = np.array([[[1.0, 0, 0], [0, 2.0, 0], [0, 0, 3.0]], [[1.0, 0, 0], [1.0, 0.05, 0], [-1.0, 0, 0]]])
    dc = depth_clusters(h, tol=0.5)
    assert dc.clusters == (3, 2)
    assert dc.members[1] == ((0, 1), (2,))
    np.testing.assert_allclose(dc.cosine[0], 0.0)
    c01 = 1 / np.sqrt(1 + 0.05**2)
    np.testing.assert_allclose(dc.cosine[1], (c01 - 1 - c01) / 3)
    np.testing.assert_allclose(dc.effective_rank[0], 3.0)
    assert 1.0 < dc.effective_rank[1] < 2.0
    assert json.loads(json.dumps(dc.record()))["clusters"] == [3, 2]


def test_effective_rank_limits():
    assert effective_rank(np.ones((5, 3))) == pytest.approx(1.0)
    assert effective_rank(np.eye(4)) == pytest.approx(4.0)
    assert effective_rank(np.zeros((2, 2))) == 0.0


def test_depth_clusters_bad_input():
    with pytest.raises(InputError, match="tol=3.0 is a distance between unit vectors"):
        depth_clusters(np.ones((2, 3, 4)), tol=3.0)
    with pytest.raises(InputError, match=r"hidden must have shape \(depths, n, d\)"):
        depth_clusters(np.ones((3, 4)))


@pytest.mark.parametrize(
    ("tokens", "message"),
    [
        (
            [5],
            r"tokens must be a list of distinct token indices from 0 to 2 \(hidden holds 3 tokens\); 5 is out of range",
        ),
        ([-1], r"from 0 to 2 \(hidden holds 3 tokens\); -1 is out of range"),
        ([0.5], r"tokens must be a list of distinct token indices from 0 to 2 \(hidden holds 3 tokens\), got \[0\.5\]"),
        ([], r"tokens must be a list of distinct token indices from 0 to 2"),
        ([[0, 1]], r"tokens must be a list of distinct token indices"),
        ([1, 1], r"\[1, 1\] repeats an index"),
    ],
)
def test_depth_clusters_tokens_out_of_range_or_not_indices(tokens, message):
    with pytest.raises(InputError, match=message):
        depth_clusters(np.ones((2, 3, 4)), tokens=tokens)
    assert depth_clusters(np.eye(3)[None], tokens=np.array([2, 0])).clusters == (2,)


@pytest.mark.parametrize("head", ["2,0", (2,), (2, "0"), 2, (True, 0), (1, 0, 0)])
def test_analyze_idealized_head_must_be_two_integers(bert, head):
    with pytest.raises(
        InputError, match=r"idealized_head must be \(layer, head\), two integers such as \(2, 0\), got "
    ):
        analyze("good film", bert, with_spectra=False, idealized_head=head)


def test_idealized_run_layer_and_head_must_be_integers(bert):
    fwd, weights = bert.run("good film"), bert.weights()
    with pytest.raises(InputError, match=r"layer must be an integer index \(or None\), got '1'"):
        idealized_run(fwd, weights, layer="1", head=0)
    with pytest.raises(InputError, match=r"head must be an integer index \(or None\), got 0\.0"):
        idealized_run(fwd, weights, layer=1, head=0.0)
    assert analyze("good film", bert, with_spectra=False, idealized_head=(np.int64(1), 0)).idealized is not None


def test_head_verdicts_on_the_reduced_triple_equal_the_full_ones(bert):
    """(W_Q W_O, W_K W_O, W_V W_O) (d_h x d_h) is a good triple / paranormal exactly when (W_Q, W_K, W_O W_V) is."""
    sp = spectra(bert.weights(), head_samples=0)
    full_good, full_lead = [], []
    for ell, w in enumerate(bert.weights()):
        for h in range(w.heads):
            V = w.ov(h).numpy()
            full_good.append(attndyn.is_good_triple(w.W_Q[h].numpy(), w.W_K[h].numpy(), V))
            full_lead.append(attndyn.analysis.leading_direction(V) is not None)
            # the nonzero spectrum of W_O W_V is the spectrum of W_V W_O
            ev = np.linalg.eigvals(V)
            big = np.sort_complex(ev[np.abs(ev) > 1e-9 * np.abs(ev).max()])
            np.testing.assert_allclose(big, np.sort_complex(sp.head_eigenvalues[ell][h]), atol=1e-8)
    assert sp.head_good.ravel().tolist() == full_good
    assert sp.head_leading.ravel().tolist() == full_lead


def test_layer_verdicts_and_fractions(bert):
    sp = spectra(bert.weights(), head_samples=50, ginibre_samples=10, seed=1)
    for ell, w in enumerate(bert.weights()):
        V = w.value.numpy()
        np.testing.assert_allclose(np.sort_complex(sp.layer_eigenvalues[ell]), np.sort_complex(np.linalg.eigvals(V)))
        assert sp.layer_good[ell] == attndyn.is_good_triple(w.query.numpy(), w.key.numpy(), V)
        assert sp.layer_paranormal[ell] == attndyn.is_paranormal(V)
    f = sp.fractions()
    assert f["heads"]["good_triple"] == sp.head_good.mean()
    assert f["layers"]["leading_real_positive_simple"] == sp.layer_leading.mean()
    # a simple, real, positive leading eigenvalue makes V paranormal (F its eigenline): Definition 2 contains it
    assert np.all(sp.head_paranormal[sp.head_leading])
    rec = json.loads(json.dumps(sp.record()))
    assert rec["baseline"]["layers"]["samples"] == 10 and rec["baseline"]["heads"]["samples"] == 50
    lo, hi = rec["baseline"]["heads"]["interval_99"]
    assert 0 <= lo <= rec["baseline"]["heads"]["fraction"] <= hi <= 1
    assert len(rec["heads"]) == 2 and len(rec["heads"][0]) == 3


def test_idealized_run_names_the_regime_softmax_geometry_finds(bert):
    fwd = bert.run(TEXT)
    run = idealized_run(fwd, bert.weights(), layer=1, head=2, steps=40)
    assert (run.layer, run.head, run.choice) == (1, 2, "given")
    assert run.regime == attndyn.softmax_geometry(run.trajectory).regime
    w = bert.weights()[1]
    torch.testing.assert_close(run.trajectory.params.V[0], w.ov(2))
    torch.testing.assert_close(run.trajectory.ys[0, 0], fwd.hidden[0])  # started from the embeddings
    assert run.trajectory.params.beta == pytest.approx(1 / 2.0)  # d_h = 4
    rec = json.loads(json.dumps(run.record()))
    assert rec["regime"] == run.regime and "phi_1" not in rec["measured"]


def test_idealized_default_head_is_the_first_good_triple(bert):
    fwd = bert.run(TEXT)
    sp = spectra(bert.weights(), head_samples=0)
    run = idealized_run(fwd, bert.weights(), steps=10)
    good = [(ell, h) for ell in range(2) for h in range(3) if sp.head_good[ell, h]]
    assert (run.layer, run.head) == (good[0] if good else (0, 0))


def test_idealized_bad_input(bert):
    fwd = bert.run(TEXT)
    with pytest.raises(InputError, match="layer=5 is out of range; the model has layers 0..1"):
        idealized_run(fwd, bert.weights(), layer=5, head=0)
    with pytest.raises(InputError, match="head=7 is out of range"):
        idealized_run(fwd, bert.weights(), layer=0, head=7)
    with pytest.raises(InputError, match="head is given without layer"):
        idealized_run(fwd, bert.weights(), head=0)


def test_analyze_record_is_json(bert):
    a = analyze(TEXT, bert, ginibre_samples=0)
    rec = json.loads(json.dumps(a.record()))
    assert rec["tokens"][0] == "[CLS]" and rec["layers"] == 2 and rec["heads"] == 3 and rec["n_tokens"] == 13
    assert len(rec["leaders"]["per_layer"]) == 2 and len(rec["leaders"]["per_head"][0]) == 3
    assert len(rec["clusters"]["clusters"]) == 3  # depths 0, 1, 2
    for ell, p in enumerate(rec["leaders"]["per_layer"]):
        assert p["leaders"] == a.leaders.layer_leaders(ell)
        assert p["heads_leading"] == a.leaders.counts[ell].tolist()
    assert rec["spectra"]["fractions"]["heads"]["good_triple"] == a.spectra.head_good.mean()
    assert rec["idealized"]["regime"] in {"hyperplanes", "paranormal", "codimension"}
    with pytest.raises(InputError, match="ginibre_samples must be a non-negative integer"):
        analyze(TEXT, bert, ginibre_samples=-1)


def test_auc_and_one_review_by_hand():
    assert auc(np.array([1.0]), np.array([0.0, 0.0])) == 1.0
    assert auc(np.array([0.0]), np.array([0.0])) == 0.5
    assert np.isnan(auc(np.array([]), np.array([1.0])))
    scores = {"plot": 0.0, "dull": 0.3, "acting": 0.1, "wonderful": 0.5, "movie": 0.0}
    r = compare_review(
        scores,
        ["wonderful", "not_good"],
        ["plot", "dull", "acting", "wonderful", "not_good", "sad"],
        np.random.default_rng(0),
    )
    # candidates: words both models read; "good" and "sad" are unknown to MiniLM's scores here
    assert r.candidates == 4 and r.sentiment == ("wonderful",) and r.top_k == ("wonderful",)
    assert r.overlap == 1.0 and r.chance == 0.25 and r.auc == 1.0
    assert r.minilm == ("acting", "dull", "wonderful") and r.precision == pytest.approx(1 / 3)
    assert compare_review(scores, [], ["plot"], np.random.default_rng(0)) is None


def test_a_text_longer_than_the_model_reads_is_said_to_be_cut(bert):
    # the model reads at most max_tokens tokens (its position embeddings): the analysis of a longer text was of
    # its first tokens, without a word
    bert.max_tokens = 6
    with pytest.warns(attndyn.HypothesisWarning, match="tokens and tiny-bert reads at most 6: the analysis is of"):
        a = analyze("good film " * 10, bert, with_spectra=False, idealized=False)
    assert a.shape["n_tokens"] == 6
    bert.max_tokens = 64
    a = analyze("good film", bert, with_spectra=False, idealized=False)  # no warning (filterwarnings = error)
    assert a.shape["n_tokens"] == len(a.forward.tokens)


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra.numpy import arrays  # noqa: E402

_tokens = arrays(
    np.float64,
    st.tuples(st.integers(2, 7), st.integers(2, 5)),
    elements=st.floats(-3, 3, allow_nan=False).filter(lambda v: abs(v) > 1e-3),
)


@settings(max_examples=40, deadline=None)
@given(X=_tokens, scale=st.floats(0.1, 10), seed=st.integers(0, 2**16))
def test_clustering_statistics_are_invariant_under_rotation_and_token_scaling(X, scale, seed):
    """On the sphere, a rotation of R^d and a positive rescaling of each token change nothing."""
    rng = np.random.default_rng(seed)
    R, _ = np.linalg.qr(rng.standard_normal((X.shape[1], X.shape[1])))
    Y = (X @ R) * (scale * rng.uniform(0.5, 2.0, size=(len(X), 1)))
    a, b = depth_clusters(X[None]), depth_clusters(Y[None])
    np.testing.assert_allclose(a.cosine, b.cosine, atol=1e-9)
    np.testing.assert_allclose(a.effective_rank, b.effective_rank, rtol=1e-7)
    assert 1.0 - 1e-9 <= a.effective_rank[0] <= min(X.shape) + 1e-9


@settings(max_examples=40, deadline=None)
@given(X=_tokens, t1=st.floats(0.01, 1.0), t2=st.floats(0.01, 1.0))
def test_fewer_clusters_at_a_larger_tolerance(X, t1, t2):
    lo, hi = sorted((t1, t2))
    assert depth_clusters(X[None], tol=hi).clusters[0] <= depth_clusters(X[None], tol=lo).clusters[0]


def test_compare_on_tiny_models_matches_explain_and_draws(bert):
    """The IMDb comparison's bookkeeping on a tiny BERT and a tiny fitted hardmax sentiment model."""
    from attndyn.plotting._pretrained import imdb_comparison
    from attndyn.pretrained._imdb import compare, minilm_word_scores
    from attndyn.sentiment import HardmaxSentimentClassifier, explain

    rng = np.random.default_rng(0)
    pos, neg, neutral = ["great", "wonderful", "good"], ["dull", "boring", "bad"], ["film", "plot", "story", "acting"]
    texts, labels = [], []
    for i in range(40):
        words = list(rng.choice(pos if i % 2 else neg, 2)) + list(rng.choice(neutral, 3))
        texts.append("the " + " ".join(words) + ".")
        labels.append(i % 2)
    clf = HardmaxSentimentClassifier(d=2, epochs=2, min_freq=1, min_log_odds=0.0, random_state=0).fit(texts, labels)
    comp = compare(bert, clf, texts[:8], seed=0)
    assert len(comp.reviews) + comp.skipped == 8 and comp.reviews and comp.seconds_per_review > 0
    kept = iter(comp.reviews)
    for text in texts[:8]:
        scores = minilm_word_scores(bert, text)
        ex = explain(clf, text)
        cand = set(scores) & {w.removeprefix("not_") for w in ex.words}
        S = {w.removeprefix("not_") for w in ex.leaders} & cand
        if not S or S == cand:
            continue
        r = next(kept)
        assert r.candidates == len(cand) and set(r.sentiment) == S
        assert set(r.minilm) == {w for w in cand if scores[w] > 0}
        assert len(r.top_k) == len(S) and r.overlap == len(set(r.top_k) & S) / len(S) and r.chance == len(S) / len(cand)
        assert sorted(scores[w] for w in r.top_k) == sorted(scores[w] for w in cand)[-len(S) :]  # the k best scores
    s = comp.summary()
    assert s["reviews"] == len(comp.reviews) and s["overlap_minus_chance"] == pytest.approx(
        s["overlap_at_k_mean"] - s["chance_mean"]
    )
    rec = json.loads(json.dumps(comp.record()))
    assert imdb_comparison(rec).axes

"""Exact word attributions: H = b + sum_w u_w <v, z^0_w>, from the engine's follow sets (issue 23)."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import attndyn
from attndyn import InputError
from attndyn.sentiment import explain
from attndyn.sentiment._attribution import (
    attribute,
    cluster_flow,
    contributions,
    influence,
    layer_matrices,
    propagation_matrix,
    relative_residual,
)
from attndyn.sentiment._model import SentimentConfig, SentimentTransformer

RTOL = 1e-10


def _random_reviews(vocab: int, B: int, n: int, seed: int, repeat: bool = False):
    """(ids, mask): B reviews of 1..n random words (ids 2..vocab-1), padded; ``repeat`` draws from 3 words only."""
    g = np.random.default_rng(seed)
    ids = np.zeros((B, n), dtype=np.int64)
    for b in range(B):
        m = int(g.integers(1, n + 1))
        pool = g.choice(np.arange(2, vocab), size=3, replace=False) if repeat else np.arange(2, vocab)
        ids[b, :m] = g.choice(pool, size=m)
    t = torch.from_numpy(ids)
    return t, t != 0


@pytest.mark.parametrize("repeat", [False, True])
def test_contributions_plus_bias_equal_the_decision(fitted, repeat):
    model = fitted.model_
    ids, mask = _random_reviews(model.config.vocab_size, 40, 30, seed=int(repeat), repeat=repeat)
    run = contributions(model, ids, mask)
    assert float(relative_residual(run.a, run.bias, run.H).max()) <= RTOL
    scale = run.a.abs().sum(1) + abs(run.bias)
    assert torch.all((run.a.sum(1) + run.bias - run.H).abs() <= RTOL * scale)
    # the same decision as the fast inference path (distinct words with counts)
    torch.testing.assert_close(run.H, model.hardmax_logits(ids, mask).double(), rtol=1e-12, atol=1e-12)
    assert torch.all(run.a[~mask] == 0) and torch.all(run.u[~mask] == 0)
    torch.testing.assert_close(run.u.sum(1), torch.ones(40, dtype=torch.float64), rtol=0, atol=1e-13)


def test_each_layer_is_the_averaging_matrix_of_its_follow_sets(fitted):
    ids, mask = _random_reviews(fitted.model_.config.vocab_size, 6, 12, seed=3, repeat=True)
    _, traj = fitted.model_.hardmax_run(ids, mask, every=1, follow=True)
    W = layer_matrices(traj)
    assert torch.all(W >= 0)
    torch.testing.assert_close(W.sum(-1), torch.ones(W.shape[:-1], dtype=torch.float64), rtol=0, atol=1e-14)
    for k in range(W.shape[0]):  # Z^{k+1} = W_k Z^k, padding included (its rows are the identity)
        torch.testing.assert_close(W[k] @ traj.ys[k], traj.ys[k + 1], rtol=0, atol=1e-12)
    for b in range(6):
        M = propagation_matrix(traj, b)
        idx = traj.real_tokens(b)
        np.testing.assert_allclose(M @ traj.ys[0, b, idx].numpy(), traj.ys[-1, b, idx].numpy(), rtol=0, atol=1e-12)


def test_padding_changes_nothing(fitted):
    model = fitted.model_
    ids, mask = _random_reviews(model.config.vocab_size, 8, 10, seed=5)
    wide = torch.zeros((8, 25), dtype=torch.int64)
    wide[:, :10] = ids
    a, b = contributions(model, ids, mask), contributions(model, wide, wide != 0)
    torch.testing.assert_close(b.a[:, :10], a.a, rtol=0, atol=1e-14)


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 9),
    d=st.integers(1, 4),
    alpha=st.floats(0.1, 3.0),
    layers=st.integers(0, 6),
    copies=st.booleans(),
    seed=st.integers(0, 2**31 - 1),
)
def test_influence_is_the_weight_of_each_token_in_the_final_mean(n, d, alpha, layers, copies, seed):
    """For any tokens (ties included), mean_i Z^K_i = sum_w u_w z^0_w: the identity behind the attribution."""
    g = np.random.default_rng(seed)
    z = g.standard_normal((2, n, d))
    if copies:  # repeated tokens tie exactly
        z[:, -1] = z[:, 0]
    mask = np.ones((2, n), dtype=bool)
    mask[1, n // 2 + 1 :] = False  # the second sequence is padded
    traj = attndyn.hardmax(
        z, alpha=alpha, layers=layers, mask=mask, save=attndyn.SaveAt(every=1, follow=True), check_hypotheses=False
    )
    u = influence(traj)
    for b in range(2):
        real = torch.from_numpy(mask[b])
        want = traj.ys[-1, b][real].mean(0)
        torch.testing.assert_close(u[b] @ traj.ys[0, b], want, rtol=1e-12, atol=1e-12)
    assert torch.all(u[1][~torch.from_numpy(mask[1])] == 0)


def test_rollout_with_the_models_residual_is_the_influence(fitted):
    ids, mask = _random_reviews(fitted.model_.config.vocab_size, 5, 9, seed=8)
    _, traj = fitted.model_.hardmax_run(ids, mask, every=1, follow=True)
    a = float(traj.params.alpha)
    torch.testing.assert_close(influence(traj, keep=1 / (1 + a)), influence(traj), rtol=0, atol=1e-15)
    assert not torch.allclose(influence(traj, keep=0.5), influence(traj))  # alpha != 1: rollout differs


def test_copies_of_a_word_split_its_attribution_equally(fitted):
    att = attribute(fitted, "great great boring great movie boring")
    words, a = att.words, np.array(att.contributions)
    for w in set(words):
        same = a[[i for i, x in enumerate(words) if x == w]]
        np.testing.assert_allclose(same, same[0], rtol=1e-12, atol=1e-15)
        total = next(r for r in att.by_word if r.word == w)
        assert total.count == len(same) and total.contribution == pytest.approx(same.sum(), rel=1e-12, abs=1e-15)
    assert att.residual <= RTOL
    assert sum(att.contributions) + att.bias == pytest.approx(att.decision_value, rel=RTOL, abs=RTOL)
    assert att.decision_value == pytest.approx(
        float(fitted.decision_function(["great great boring great movie boring"])[0]), abs=1e-5
    )
    assert sum(att.influence) == pytest.approx(1.0, abs=1e-13)
    np.testing.assert_allclose(a, np.array(att.influence) * np.array(att.values), rtol=0, atol=1e-15)


def test_clusters_and_words_are_two_sums_of_one_matrix(fitted, corpus):
    texts, _ = corpus
    for text in texts[:6] + ["great awful great dull wonderful"]:
        e, att, f = explain(fitted, text), attribute(fitted, text), cluster_flow(fitted, text)
        np.testing.assert_allclose(f.flow.sum(axis=1), [c.contribution for c in e.clusters], rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(f.flow.sum(axis=0), att.contributions, rtol=1e-12, atol=1e-13)
        assert f.flow.sum() + att.bias == pytest.approx(e.decision_value, rel=1e-12, abs=1e-12)
        assert sorted(i for p in f.positions for i in p) == list(range(len(att.words)))
        assert [c.leaders for c in e.clusters] == f.leaders


def test_a_text_with_no_known_word(fitted):
    att = attribute(fitted, "qwerty asdf")
    assert att.known_words == 0 and att.words == ["<unk>"] and att.residual <= RTOL
    with pytest.raises(InputError, match=r"the text has no word the model knows: it has no cluster to trace"):
        cluster_flow(fitted, "qwerty asdf")


def test_attribution_errors(fitted):
    from attndyn.sentiment import HardmaxSentimentClassifier

    with pytest.raises(InputError, match=r"text must be one review as a string, got list"):
        attribute(fitted, ["great"])
    with pytest.raises(InputError, match=r"not fitted yet"):
        attribute(HardmaxSentimentClassifier(), "great")
    model = SentimentTransformer(SentimentConfig(vocab_size=6), generator=torch.Generator().manual_seed(0))
    _, traj = model.hardmax_run(torch.tensor([[2, 3, 4]]), torch.ones((1, 3), dtype=torch.bool))  # no follow sets
    with pytest.raises(InputError, match=r"exact attributions need every layer's follow sets: run the model with"):
        influence(traj)

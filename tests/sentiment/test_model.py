import math

import pytest
import torch

import attndyn
from attndyn import InputError
from attndyn.sentiment._model import SentimentConfig, SentimentTransformer

pytestmark = pytest.mark.smoke  # part of the quick subset: pytest -m smoke


def _model(**kw):
    cfg = SentimentConfig(vocab_size=12, **kw)
    return SentimentTransformer(cfg, generator=torch.Generator().manual_seed(0))


def test_alpha_positive_by_construction_and_floored():
    m = _model(alpha_init=1.3, alpha_min=0.5)
    assert math.isclose(float(m.alpha.detach()), 1.3, rel_tol=1e-6)
    with torch.no_grad():
        m.alpha_raw.fill_(-1e4)
    assert float(m.alpha.detach()) >= 0.5


def test_layer_is_the_normalized_update():
    m = _model(d=3)
    z = torch.randn(2, 5, 3, generator=torch.Generator().manual_seed(1))
    mask = torch.ones(2, 5, dtype=torch.bool)
    a = m.alpha.detach()
    p = torch.softmax(z @ z.transpose(1, 2) / m.config.tau, dim=-1)
    want = z + a / (1 + a) * (p @ z - z)
    torch.testing.assert_close(m.attention_layer(z, mask, m.config.tau).detach(), want)


def test_padding_changes_nothing_softmax_or_hardmax():
    m = _model()
    ids = torch.tensor([[3, 4, 5]])
    padded = torch.tensor([[3, 4, 5, 0, 0]])
    mask = torch.tensor([[True, True, True, False, False]])
    s1 = m(ids, torch.ones_like(ids, dtype=torch.bool))
    s2 = m(padded, mask)
    torch.testing.assert_close(s1, s2)
    h1 = m.hardmax_logits(ids, torch.ones_like(ids, dtype=torch.bool))
    h2 = m.hardmax_logits(padded, mask)
    torch.testing.assert_close(h1, h2)


def test_hardmax_inference_is_the_engine():
    m = _model(d=2)
    ids = torch.tensor([[2, 3, 4, 5, 6]])
    mask = torch.ones_like(ids, dtype=torch.bool)
    logit, traj = m.hardmax_run(ids, mask, every=1)
    ref = attndyn.hardmax(
        m.embed.weight.detach().double()[ids], alpha=float(m.alpha.detach()), layers=8, check_hypotheses=False
    )
    torch.testing.assert_close(traj.ys, ref.ys)
    zK = ref.final_tokens.mean(dim=1)
    want = zK @ m.decoder.weight.detach().double()[0] + m.decoder.bias.detach().double()[0]
    torch.testing.assert_close(logit, want)


def test_small_tau_softmax_matches_hardmax():
    m = _model(d=2, tau=1e-4)
    ids = torch.arange(2, 12).reshape(2, 5)
    mask = torch.ones_like(ids, dtype=torch.bool)
    s = m(ids, mask).detach().double()
    h = m.hardmax_logits(ids, mask)
    torch.testing.assert_close(s, h, atol=1e-4, rtol=1e-4)


def test_hooks_cache_every_layer():
    m = _model(layers=3)
    ids = torch.tensor([[2, 3]])
    logits, cache = m.run_with_cache(ids, torch.ones_like(ids, dtype=torch.bool))
    assert set(cache) == {"hook_embed", "hook_layer.0", "hook_layer.1", "hook_layer.2", "hook_mean", "hook_logit"}
    torch.testing.assert_close(cache["hook_logit"], logits.detach())


@pytest.mark.parametrize(
    "kw, msg",
    [
        ({"d": 0}, "d must be a positive integer"),
        ({"tau": -1.0}, "tau must be a positive number"),
        ({"alpha_min": 2.0}, "alpha_min must satisfy"),
    ],
)
def test_config_errors(kw, msg):
    with pytest.raises(InputError, match=msg):
        SentimentConfig(vocab_size=5, **kw)


def test_config_rejects_unknown_keys():
    with pytest.raises(InputError, match="unknown model config keys"):
        SentimentConfig.from_dict({"vocab_size": 3, "depth": 2})


def test_repeated_leader_word_still_leads():
    from attndyn.sentiment._model import word_leaders

    m = _model(d=2)
    with torch.no_grad():
        m.embed.weight[2] = torch.tensor([3.0, 0.0])
        m.embed.weight[3] = torch.tensor([0.5, 0.2])
    ids = torch.tensor([[2, 2, 3]])
    _, traj = m.hardmax_run(ids, torch.ones_like(ids, dtype=torch.bool), follow=True)
    assert not traj.leader_mask[-1, 0, :2].any()  # C_i = {0, 1}: no singleton by the letter of the definition
    assert word_leaders(traj, ids)[-1, 0].tolist() == [True, True, False]


def test_layer_logits_read_every_layer_and_end_with_forward():
    m = _model(d=2, layers=3)
    ids = torch.tensor([[2, 3, 4, 0]])
    mask = ids != 0
    rows = m.layer_logits(ids, mask)
    assert rows.shape == (4, 1)
    torch.testing.assert_close(rows[-1], m(ids, mask))
    _, cache = m.run_with_cache(ids, mask)
    w, b = m.decoder.weight[0], m.decoder.bias[0]
    emb = cache["hook_embed"][0, :3].mean(dim=0)
    torch.testing.assert_close(rows[0, 0], emb @ w + b)  # layer 0 = the bag of word vectors


def test_deep_supervision_reaches_a_follower_word():
    """A word that joins a far leader barely moves the last layer ((1+alpha)^-K), so the plain
    loss gives it almost no gradient; the layer-0 term of deep supervision gives it a full one."""
    from attndyn.sentiment._train import _loss

    m = _model(d=2, layers=8)
    with torch.no_grad():
        m.embed.weight[2] = torch.tensor([4.0, 0.0])  # leader
        m.embed.weight[3] = torch.tensor([0.5, 0.1])  # follows word 2
    ids = torch.tensor([[2, 3]])
    mask = torch.ones_like(ids, dtype=torch.bool)
    y = torch.tensor([1.0])

    def grad_of_follower(aux):
        m.zero_grad()
        _loss(m, ids, mask, y, None, aux).backward()
        return m.embed.weight.grad[3].norm()

    plain, deep = grad_of_follower(0.0), grad_of_follower(1.0)
    assert 0 < plain < deep / 20


@pytest.mark.parametrize("d", [2, 16])
def test_default_init_keeps_the_squared_norm_at_two(d):
    cfg = SentimentConfig(vocab_size=4000, d=d)
    assert cfg.embed_init_std == pytest.approx(math.sqrt(2 / d))
    m = SentimentTransformer(cfg, generator=torch.Generator().manual_seed(0))
    sq = m.embed.weight.detach()[1:].pow(2).sum(dim=1).mean()
    assert float(sq) == pytest.approx(2.0, rel=0.05)
    assert SentimentConfig.from_dict(cfg.to_dict()) == cfg  # the resolved value round-trips


@pytest.mark.parametrize("d", [2, 3])
def test_fast_inference_on_distinct_words_equals_the_full_run(d):
    m = _model(d=d)
    g = torch.Generator().manual_seed(d)
    ids = torch.randint(1, 6, (40, 12), generator=g)  # 5 words in 12 slots: many repeats
    lengths = torch.randint(1, 13, (40,), generator=g)
    mask = torch.arange(12)[None] < lengths[:, None]
    ids = ids.masked_fill(~mask, 0)
    full, _ = m.hardmax_run(ids, mask)
    torch.testing.assert_close(m.hardmax_logits(ids, mask), full, rtol=0, atol=1e-12)


def test_distinct_words_counts_every_real_token():
    from attndyn.sentiment._model import distinct_words

    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1, 9, (30, 10), generator=g)
    mask = torch.rand(30, 10, generator=g) < 0.7
    mask[:, 0] = True
    uid, counts = distinct_words(ids, mask)
    for b in range(30):
        words = ids[b][mask[b]].tolist()
        got = {int(w): float(c) for w, c in zip(uid[b], counts[b]) if c > 0}
        assert got == {w: float(words.count(w)) for w in set(words)}


def test_zero_layers_is_the_linear_control():
    """layers=0: no attention; softmax and hardmax logits are both <v, mean of the word vectors> + b."""
    m = SentimentTransformer(SentimentConfig(vocab_size=6, d=3, layers=0), generator=torch.Generator().manual_seed(1))
    ids = torch.tensor([[1, 2, 2, 5, 0], [3, 4, 0, 0, 0]])
    mask = ids != 0
    E, v, b = m.embed.weight.detach(), m.decoder.weight.detach()[0], m.decoder.bias.detach()[0]
    want = torch.stack([E[ids[i][mask[i]]].mean(0) @ v + b for i in range(2)])
    torch.testing.assert_close(m(ids, mask).detach(), want)
    torch.testing.assert_close(m.hardmax_logits(ids, mask).to(want.dtype), want)
    assert m.layer_logits(ids, mask).shape == (1, 2)
    with pytest.raises(InputError, match=r"layers must be an integer >= 0 \(0: no attention"):
        SentimentConfig(vocab_size=6, layers=-1)


def test_zero_layers_trains_with_deep_supervision_on_and_attributes_exactly(corpus):
    """The recipe's deep supervision has no earlier layer to read at K = 0 (it would be the mean of nothing, NaN);
    the fit is finite, and the exact attribution gives every word the same influence, 1/n (the mean)."""
    from attndyn.sentiment import HardmaxSentimentClassifier, attribute

    texts, labels = corpus
    clf = HardmaxSentimentClassifier(
        d=2, layers=0, epochs=6, min_freq=1, lr=3e-2, embed_lr=1e-1, patience=6, random_state=0
    ).fit(texts, labels)
    assert all(math.isfinite(row["train_running_loss"]) for row in clf.history_)
    assert clf.score(texts, labels) > 0.9  # the synthetic corpus is linearly separable
    att = attribute(clf, "great movie, boring plot")
    n = len(att.words)
    assert n >= 2 and att.influence == [1.0 / n] * n
    assert abs(sum(att.contributions) + att.bias - att.decision_value) < 1e-12

"""The adapter against hand computations on tiny random BERT / ALBERT models (float64)."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
import torch

from attndyn import InputError
from attndyn.pretrained import PretrainedModel, head_attention, head_scores
from attndyn.pretrained._adapter import require_transformers

TEXT = "The plot was dull, but the acting was wonderful."


def naive_attention(x: np.ndarray, Wq, bq, Wk, bk, d_h: int) -> np.ndarray:
    """softmax((x Wq^T + bq)(x Wk^T + bk)^T / sqrt(d_h)), row by row, with plain loops."""
    q, k = x @ Wq.T + bq, x @ Wk.T + bk
    n = len(x)
    P = np.zeros((n, n))
    for i in range(n):
        s = np.array([q[i] @ k[j] for j in range(n)]) / math.sqrt(d_h)
        e = np.exp(s - s.max())
        P[i] = e / e.sum()
    return P


@pytest.mark.parametrize("which", ["bert", "albert"])
def test_attention_equals_softmax_of_scores_recomputed_from_the_weights(which, request):
    pm = request.getfixturevalue(which)
    fwd = pm.run(TEXT)
    L, H = pm.layers, pm.heads
    assert fwd.attention.shape == (L, H, len(fwd.tokens), len(fwd.tokens))
    assert fwd.hidden.shape == (L + 1, len(fwd.tokens), pm.width)
    for ell, w in enumerate(pm.weights()):
        x = fwd.hidden[ell].numpy()
        for h in range(H):
            P = naive_attention(x, w.W_Q[h].numpy(), w.b_Q[h].numpy(), w.W_K[h].numpy(), w.b_K[h].numpy(), pm.head_dim)
            np.testing.assert_allclose(fwd.attention[ell, h].numpy(), P, atol=1e-12)
        np.testing.assert_allclose(
            head_attention(fwd.hidden[ell], w, pm.beta).numpy(), fwd.attention[ell].numpy(), atol=1e-12
        )


def test_weights_are_the_model_weights_split_by_head(bert):
    layer = bert.model.encoder.layer[1].attention
    w = bert.weights()[1]
    d_h = bert.head_dim
    assert w.W_Q.shape == (3, d_h, 12) and w.W_O.shape == (3, 12, d_h) and w.b_Q.shape == (3, d_h)
    for h in range(3):
        rows = slice(h * d_h, (h + 1) * d_h)
        assert torch.equal(w.W_Q[h], layer.self.query.weight[rows].double())
        assert torch.equal(w.b_K[h], layer.self.key.bias[rows].double())
        assert torch.equal(w.W_V[h], layer.self.value.weight[rows].double())
        assert torch.equal(w.W_O[h], layer.output.dense.weight[:, rows].double())
    assert torch.equal(w.value, layer.self.value.weight.double())
    assert torch.equal(w.query, layer.self.query.weight.double())


def test_the_heads_value_matrices_rebuild_the_attention_sublayer(bert):
    """LayerNorm(x + sum_h P^h (x W_V^h^T + b_V^h) W_O^h^T + b_O) is the sublayer's output (BERT is post-LN)."""
    captured = {}
    att = bert.model.encoder.layer[0].attention
    hook = att.output.register_forward_hook(lambda m, i, o: captured.setdefault("out", o))
    fwd = bert.run(TEXT)
    hook.remove()
    w = bert.weights()[0]
    x = fwd.hidden[0]
    mix = sum(fwd.attention[0, h] @ (x @ w.W_V[h].T + w.b_V[h]) @ w.W_O[h].T for h in range(bert.heads)) + w.b_O
    expected = att.output.LayerNorm(x + mix)
    torch.testing.assert_close(captured["out"][0], expected, atol=1e-12, rtol=0)
    # W_O^h W_V^h is head h's value matrix in the residual stream
    torch.testing.assert_close(w.ov(2), w.W_O[2] @ w.W_V[2])


def test_albert_layers_share_one_set_of_weights(albert):
    ws = albert.weights()
    assert len(ws) == 3
    assert all(torch.equal(ws[0].W_Q, w.W_Q) and torch.equal(ws[0].W_O, w.W_O) for w in ws)


def test_head_scores_lift_the_biases_into_A(bert):
    fwd = bert.run(TEXT)
    w = bert.weights()[1]
    x = fwd.hidden[1]
    s = head_scores(x, w)
    for h in range(3):
        q, k = x @ w.W_Q[h].T + w.b_Q[h], x @ w.W_K[h].T + w.b_K[h]
        torch.testing.assert_close(s[h], q @ k.T, atol=1e-10, rtol=1e-12)


def test_tokens_and_words(bert):
    fwd = bert.run("The plots")
    assert fwd.tokens == ("[CLS]", "the", "plot", "##s", "[SEP]")
    assert fwd.words == (None, 0, 1, 1, None)
    assert fwd.special.tolist() == [True, False, False, False, True]


def test_long_text_is_truncated_to_the_models_length(bert):
    bert.max_tokens = 16
    fwd = bert.run(" ".join(["film"] * 100))
    assert len(fwd.tokens) == 16 and fwd.tokens[-1] == "[SEP]"


def test_bad_input(bert):
    with pytest.raises(InputError, match="^text must be a non-empty string, got '   '$"):
        bert.run("   ")
    with pytest.raises(InputError, match="no tokenizer"):
        PretrainedModel(bert.model).run("film")
    with pytest.raises(InputError, match="the text has no tokens"):
        bert.run_ids([])


def test_missing_transformers_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)  # import transformers now raises ImportError
    with pytest.raises(InputError, match=r'pip install -e "\.\[pretrained\]"'):
        require_transformers()


def test_attndyn_imports_without_transformers():
    code = (
        "import sys; sys.modules['transformers'] = None\n"
        "import attndyn, attndyn.pretrained, attndyn.cli, attndyn.plotting._pretrained, attndyn.reproduce\n"
        "from attndyn.cli import main\n"
        "rc = main(['pretrained', 'analyze', 'good film'])\n"
        "assert rc == 2, rc\n"
        "print('ok')"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"
    assert r.stderr.strip().splitlines() == [
        "error: the pretrained-model tools need the 'transformers' package; "
        'install the extra with `pip install -e ".[pretrained]"`'
    ]


def test_a_sentiment_model_folder_is_named_as_such(tmp_path):
    from attndyn.pretrained import load_model
    from attndyn.sentiment import HardmaxSentimentClassifier

    clf = HardmaxSentimentClassifier(d=2, epochs=1, min_freq=1, min_log_odds=0, random_state=0)
    folder = clf.fit(["great fun", "awful mess"] * 5, [1, 0] * 5).save(tmp_path / "sentiment")
    with pytest.raises(InputError, match="holds no tokenizer: it looks like an attndyn sentiment model"):
        load_model(folder)

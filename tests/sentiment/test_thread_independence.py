"""Training gives the same bits whatever the number of torch threads (issue 24).

The shapes are chosen above torch's parallel grain (2^15 elements): a batch of 64 reviews of 40
words has 64 x 40 x 40 attention weights, where torch's fused softmax backward and its reduction
of alpha's broadcast gradient split their sums differently on 1 and 2 threads.
"""

import numpy as np
import pytest
import torch

from attndyn.sentiment._model import SentimentConfig, SentimentTransformer
from attndyn.sentiment._text import Tokenizer, Vocabulary, encode
from attndyn.sentiment._train import EncodedSplit, TrainConfig, train

WORDS = [f"w{i}" for i in range(300)]


def _splits():
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(30, 41)))) for _ in range(224)]
    labels = [int(sum(int(w[1:]) % 2 for w in t.split()) * 2 > len(t.split())) for t in texts]
    tok = Tokenizer()
    toks = [tok(t) for t in texts]
    vocab = Vocabulary.build(toks[:192], min_freq=1)
    ids, mask = encode(toks, vocab, 40)
    y = torch.tensor(labels, dtype=torch.float32)
    return len(vocab), EncodedSplit(ids[:192], mask[:192], y[:192]), EncodedSplit(ids[192:], mask[192:], y[192:])


def _train(threads: int, d: int):
    n, tr, va = _splits()
    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        model = SentimentTransformer(SentimentConfig(vocab_size=n, d=d), generator=torch.Generator().manual_seed(0))
        cfg = TrainConfig(
            epochs=2, batch_size=64, patience=5, train_eval_size=64, seed=1, tau_start=1e-1, anneal_epochs=1
        )
        return train(model, tr, va, cfg)
    finally:
        torch.set_num_threads(old)


@pytest.mark.parametrize("d", [2, 16])
def test_training_is_bit_identical_on_one_and_two_threads(d):
    one, two = _train(1, d), _train(2, d)
    for k, v in one.model.state_dict().items():
        assert torch.equal(v, two.model.state_dict()[k]), k
    drop = {"seconds"}
    assert [{k: v for k, v in r.items() if k not in drop} for r in one.history] == [
        {k: v for k, v in r.items() if k not in drop} for r in two.history
    ]


def test_softmax_weights_gradient_matches_torch():
    """The row-by-row backward of attention.softmax_weights is torch's softmax gradient up to rounding."""
    from attndyn.attention import softmax_weights

    g = torch.Generator().manual_seed(0)
    s = torch.randn(3, 5, 5, dtype=torch.float64, generator=g, requires_grad=True)
    mask = torch.tensor([[True] * 5, [True, True, False, True, False], [True] * 5])
    w = torch.randn(3, 5, 5, dtype=torch.float64, generator=g)
    (ours,) = torch.autograd.grad((softmax_weights(s, mask, beta=2.0) * w).sum(), s)
    ref = torch.softmax((2.0 * s).masked_fill(~mask[:, None, :], float("-inf")), dim=-1)
    (theirs,) = torch.autograd.grad((ref * w).sum(), s)
    torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=1e-14)
    assert torch.autograd.gradgradcheck(lambda t: softmax_weights(t, mask, beta=2.0), (s,))

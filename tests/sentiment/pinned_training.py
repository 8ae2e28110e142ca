"""Train a small sentiment model and print the sha256 of its weights and the kernel paths, as JSON.

Run as a script in a fresh interpreter by tests/sentiment/test_pinned_training.py, under environments that
emulate other processors (``ATEN_CPU_CAPABILITY``, ``MKL_CBWR``, ``NUMBA_CPU_NAME``). It pins the kernels
first, as ``attndyn sentiment`` does, unless ``ATTNDYN_KERNELS=native``.
"""

import hashlib
import json
import sys

from attndyn.sentiment import kernel_paths, pin_kernels

pin_kernels()  # before torch loads

import numpy as np  # noqa: E402
import torch  # noqa: E402

from attndyn.sentiment._model import SentimentConfig, SentimentTransformer  # noqa: E402
from attndyn.sentiment._text import Tokenizer, Vocabulary, encode  # noqa: E402
from attndyn.sentiment._train import EncodedSplit, TrainConfig, train  # noqa: E402


def weights_sha256(d: int) -> str:
    words = [f"w{i}" for i in range(300)]
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(words, size=int(rng.integers(30, 41)))) for _ in range(256)]
    labels = [int(sum(int(w[1:]) % 2 for w in t.split()) * 2 > len(t.split())) for t in texts]
    tok = Tokenizer()
    toks = [tok(t) for t in texts]
    vocab = Vocabulary.build(toks[:224], min_freq=1)
    ids, mask = encode(toks, vocab, 40)
    y = torch.tensor(labels, dtype=torch.float32)
    tr, va = EncodedSplit(ids[:224], mask[:224], y[:224]), EncodedSplit(ids[224:], mask[224:], y[224:])
    model = SentimentTransformer(
        SentimentConfig(vocab_size=len(vocab), d=d), generator=torch.Generator().manual_seed(0)
    )
    config = TrainConfig(
        epochs=2, batch_size=32, patience=5, train_eval_size=32, seed=1, tau_start=1e-1, anneal_epochs=1
    )
    prior = EncodedSplit(ids[:4, :1], mask[:4, :1], torch.tensor([1.0, 0.0, 1.0, 0.0]))  # one-word texts
    result = train(model, tr, va, config, prior=prior)
    h = hashlib.sha256()
    for name, value in sorted(result.model.state_dict().items()):
        h.update(name.encode())
        h.update(value.numpy().tobytes())
    return h.hexdigest()


if __name__ == "__main__":
    torch.set_num_threads(1)
    d = int(sys.argv[1])
    print(json.dumps({"sha256": weights_sha256(d), "kernels": kernel_paths().to_json()}))

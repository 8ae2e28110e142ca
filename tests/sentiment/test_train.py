import json

import pytest
import torch
from safetensors.torch import load_file

from attndyn import InputError
from attndyn.sentiment._model import SentimentConfig, SentimentTransformer
from attndyn.sentiment._text import Tokenizer, Vocabulary, encode
from attndyn.sentiment._train import CHECKPOINT, EncodedSplit, TrainConfig, train


@pytest.fixture(scope="module")
def splits(make_corpus):
    texts, labels = make_corpus(96)
    tok = Tokenizer()
    toks = [tok(t) for t in texts]
    vocab = Vocabulary.build(toks[:80], min_freq=1)
    ids, mask = encode(toks, vocab, 16)
    y = torch.tensor(labels, dtype=torch.float32)
    return len(vocab), EncodedSplit(ids[:80], mask[:80], y[:80]), EncodedSplit(ids[80:], mask[80:], y[80:])


def _run(splits, run_dir=None, epochs=3, lr_decay=1.0):
    n, tr, va = splits
    model = SentimentTransformer(SentimentConfig(vocab_size=n), generator=torch.Generator().manual_seed(0))
    cfg = TrainConfig(
        epochs=epochs,
        batch_size=16,
        lr=3e-2,
        embed_lr=1e-1,
        patience=10,
        train_eval_size=40,
        seed=3,
        tau_start=1e-1,
        anneal_epochs=2,
        lr_decay=lr_decay,
    )
    return train(model, tr, va, cfg, run_dir=run_dir)


def test_deterministic_and_writes_run_folder(splits, tmp_path):
    a = _run(splits, tmp_path / "a")
    b = _run(splits)
    for k, v in a.model.state_dict().items():
        torch.testing.assert_close(v, b.model.state_dict()[k])
    hist = json.loads((tmp_path / "a" / "metrics.json").read_text())["history"]
    assert [r["epoch"] for r in hist] == [1, 2, 3]
    assert {"train_hardmax_acc", "val_softmax_loss", "val_agreement", "alpha"} <= set(hist[0])
    assert hist[0]["tau"] > hist[2]["tau"] == pytest.approx(1e-3)
    assert set(load_file(str(tmp_path / "a" / "weights.safetensors"))) == set(a.model.state_dict())


def test_resume_after_interruption_is_bit_identical(splits, tmp_path):
    full = _run(splits, tmp_path / "full", epochs=3)
    _run(splits, tmp_path / "cut", epochs=2)  # "interrupted" after two epochs
    assert (tmp_path / "cut" / CHECKPOINT).exists()
    resumed = _run(splits, tmp_path / "cut", epochs=3)
    assert [r["epoch"] for r in resumed.history] == [1, 2, 3]
    for k, v in full.model.state_dict().items():
        torch.testing.assert_close(v, resumed.model.state_dict()[k], rtol=0, atol=0)
    # pass 8, item 11: the seconds count both sessions (the resumed one restarted at 0)
    seconds = [r["seconds"] for r in resumed.history]
    assert seconds == sorted(seconds) and resumed.seconds >= seconds[-1] > seconds[1]


def test_resume_with_lr_decay_is_bit_identical(splits, tmp_path):
    full = _run(splits, tmp_path / "full", epochs=3, lr_decay=0.5)
    _run(splits, tmp_path / "cut", epochs=2, lr_decay=0.5)
    resumed = _run(splits, tmp_path / "cut", epochs=3, lr_decay=0.5)
    for k, v in full.model.state_dict().items():
        torch.testing.assert_close(v, resumed.model.state_dict()[k], rtol=0, atol=0)


def _final_weights(splits, epochs, lr_decay):
    n, tr, va = splits
    model = SentimentTransformer(SentimentConfig(vocab_size=n), generator=torch.Generator().manual_seed(0))
    cfg = TrainConfig(
        epochs=epochs, batch_size=16, lr=3e-2, embed_lr=1e-1, patience=10, train_eval_size=0, seed=3, lr_decay=lr_decay
    )
    train(model, tr, va, cfg)
    return model.state_dict()


def test_lr_decay_scales_each_epoch(splits):
    """Epoch e steps with lr * lr_decay**e: a vanishing decay freezes the weights after epoch 1,
    while constant rates keep moving them."""
    one = _final_weights(splits, 1, 1.0)
    frozen = _final_weights(splits, 3, 1e-12)
    moving = _final_weights(splits, 3, 1.0)
    for k in one:
        torch.testing.assert_close(frozen[k], one[k], rtol=0, atol=1e-9)
    assert max(float((moving[k] - one[k]).abs().max()) for k in one) > 1e-3


def test_config_checks():
    with pytest.raises(InputError, match="epochs must be an integer >= 1"):
        TrainConfig(epochs=0)
    with pytest.raises(InputError, match=r"lr_decay must be a number in \(0, 1\]"):
        TrainConfig(lr_decay=1.5)
    with pytest.raises(InputError, match=r"word_dropout must be a number in \[0, 1\)"):
        TrainConfig(word_dropout=1.0)
    with pytest.raises(InputError, match="unknown training config keys"):
        TrainConfig.from_dict({"epoch": 3})


def test_empty_validation_rejected(splits):
    n, tr, va = splits
    model = SentimentTransformer(SentimentConfig(vocab_size=n))
    with pytest.raises(InputError, match="at least one training and one validation review"):
        train(model, tr, va.take(torch.tensor([], dtype=torch.long)))


def test_aux_weight_is_validated_and_trains(splits):
    with pytest.raises(InputError, match="aux_weight must be a number >= 0"):
        TrainConfig(aux_weight=-1.0)
    n, tr, va = splits
    model = SentimentTransformer(SentimentConfig(vocab_size=n), generator=torch.Generator().manual_seed(0))
    cfg = TrainConfig(epochs=3, batch_size=16, lr=3e-2, embed_lr=1e-1, patience=5, train_eval_size=40, aux_weight=1.0)
    res = train(model, tr, va, cfg)
    assert res.history[-1]["train_hardmax_acc"] > 0.8

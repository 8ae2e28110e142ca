"""Tiny randomly initialised BERT / ALBERT models built in the test: no weights, no network."""

from __future__ import annotations

import pytest
import torch

transformers = pytest.importorskip("transformers")

from attndyn.pretrained import PretrainedModel  # noqa: E402

WORDS = [
    "the",
    "plot",
    "was",
    "dull",
    ",",
    "but",
    "acting",
    "wonderful",
    ".",
    "film",
    "great",
    "boring",
    "story",
    "good",
    "bad",
    "not",
    "##s",
    "act",
    "##ing",
]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS


@pytest.fixture(autouse=True)
def _threads():
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def tiny_bert(seed: int = 0, *, layers: int = 2, heads: int = 3, width: int = 12):
    torch.manual_seed(seed)
    cfg = transformers.BertConfig(
        vocab_size=len(VOCAB),
        hidden_size=width,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=2 * width,
        max_position_embeddings=64,
        initializer_range=0.5,
    )
    return transformers.BertModel(cfg, add_pooling_layer=False).double().eval()


def tiny_albert(seed: int = 0):
    torch.manual_seed(seed)
    cfg = transformers.AlbertConfig(
        vocab_size=len(VOCAB),
        embedding_size=6,
        hidden_size=12,
        num_hidden_layers=3,
        num_attention_heads=3,
        intermediate_size=24,
        max_position_embeddings=64,
        initializer_range=0.5,
    )
    return transformers.AlbertModel(cfg, add_pooling_layer=False).double().eval()


def tiny_tokenizer(folder):
    folder.mkdir(parents=True, exist_ok=True)
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return transformers.BertTokenizer(str(vocab), do_lower_case=True)  # the vocabulary file (v4 and v5 alike)


@pytest.fixture
def bert(tmp_path):
    return PretrainedModel(tiny_bert(), tiny_tokenizer(tmp_path / "tok"), name="tiny-bert")


@pytest.fixture
def albert(tmp_path):
    return PretrainedModel(tiny_albert(), tiny_tokenizer(tmp_path / "tok"), name="tiny-albert")


@pytest.fixture
def saved_bert(tmp_path):
    """A tiny BERT saved as a model folder, as `--model PATH` expects."""
    folder = tmp_path / "tiny-bert"
    tiny_bert().float().save_pretrained(folder)
    tiny_tokenizer(tmp_path / "tok").save_pretrained(folder)
    return folder

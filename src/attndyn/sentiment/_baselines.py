r"""Word scores of the hardmax sentiment model by other explanation methods, on the same decision.

Every method scores the real positions of one review; the **signed** ones explain the decision
value H (positive: toward the positive class), the **unsigned** ones rank words by how much the
dynamics use them, whatever the side.

- ``exact`` (signed): :math:`a_w = u_w\langle v, z^0_w\rangle` (:mod:`attndyn.sentiment._attribution`).
- ``ig``, ``ig-mean`` (signed): captum's Integrated Gradients on the word vectors, through the
  hardmax run (:func:`attndyn.hardmax`, autograd), from the padding vector 0 (``ig``) or from the
  vocabulary's mean word vector (``ig-mean``) to the review. H is piecewise linear in the word
  vectors: linear where the follow sets are locally constant, which is everywhere except on the
  ties' hypersurfaces (measure zero); autograd differentiates the branch the run took, i.e. it
  holds the follow sets fixed. The follow sets are invariant under :math:`Z\mapsto tZ` (t > 0), so
  along the path from 0 the gradient is constant and ``ig`` *equals* ``exact`` (Euler's theorem for
  the positively homogeneous :math:`H - b`); ``ig-mean``'s path crosses other follow sets.
- ``gradxinput`` (signed): captum's InputXGradient, :math:`z^0_w\cdot\nabla_{z^0_w}H`; for the
  same reason it equals ``exact`` wherever the gradient exists.
- ``kernelshap`` (signed): captum's KernelShap over word types (a coalition keeps or masks all
  copies of a word; masked words are padding, which the model supports exactly), seeded. A review
  of one word type has one player, whose Shapley value f(all) - f(none) is computed directly
  (captum's sampler needs two).
- ``occlusion`` (signed): leave-one-out occlusion, :math:`H(x) - H(x\setminus i)` for position i,
  the position deleted as the study deletes words (masked as padding, :func:`masked_decision`):
  the exact effect of deleting that one word, where ``exact`` splits the decision of the review as
  written. All n deletions of a review run batched (:func:`occlusion_scores`).
- ``occlusion-word`` (signed): every position of word w gets :math:`H(x) - H(x\setminus w)`, all
  copies of w deleted at once (equal to ``occlusion`` on a review without repeated words).
- ``followers`` (unsigned): how many other tokens follow the word, summed over the K layers.
- ``rollout`` (unsigned): attention rollout (Abnar & Zuidema 2020), the column means of
  :math:`\prod_k(\tfrac12 I + \tfrac12 P_k)` over the real rows. With the model's own residual
  weight :math:`1/(1+\alpha)` instead of 1/2 it would be the influence u of the exact attribution.
- ``random`` (unsigned): a seeded random score.

The gradient methods and KernelShap run on a review's distinct words with their counts (copies
are identical tokens that stay identical, :meth:`~attndyn.sentiment._model.SentimentTransformer.hardmax_logits`);
a word type's score is split equally over its copies, which is what these methods give per
position anyway (the function is symmetric in the copies).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import Tensor

from .._hardmax import hardmax
from .._options import SaveAt
from .._validation import InputError
from ._attribution import influence
from ._config import check_integer, check_number
from ._model import SentimentTransformer, distinct_words

if TYPE_CHECKING:
    from collections.abc import Callable

    from .._trajectory import HardmaxTrajectory

#: Declared ranges of the settings that size the work (each multiplies the forward passes per review).
MAX_IG_STEPS = 1024
MAX_KERNELSHAP_SAMPLES = 10_000

__all__ = [
    "METHODS",
    "SIGNED",
    "CAPTUM_METHODS",
    "MethodSettings",
    "check_methods",
    "require_captum",
    "masked_decision",
    "dynamics_scores",
    "captum_scores",
    "OCCLUSION_METHODS",
    "occlusion_scores",
    "reinitialized",
    "ranking",
]

METHODS = (
    "exact",
    "ig",
    "ig-mean",
    "gradxinput",
    "kernelshap",
    "occlusion",
    "occlusion-word",
    "followers",
    "rollout",
    "random",
)
SIGNED = frozenset({"exact", "ig", "ig-mean", "gradxinput", "kernelshap", "occlusion", "occlusion-word"})
CAPTUM_METHODS = ("ig", "ig-mean", "gradxinput", "kernelshap")
OCCLUSION_METHODS = ("occlusion", "occlusion-word")
OCCLUSION_CELLS = 1 << 22  # reviews x n^2 per masked_decision call: bounds the memory of a batched run
UNK_ID = 1  # the vocabulary's <unk>: what the model reads when no word is left


@dataclass(frozen=True)
class MethodSettings:
    """The baselines' settings, recorded with every result.

    Args:
        seed: seeds ``random``, KernelShap's coalitions and the random tie-breaks of rankings.
        ig_steps: Integrated Gradients' number of path points.
        ig_method: captum's quadrature ("gausslegendre", "riemann_trapezoid", ...).
        kernelshap_samples: coalitions per review.
        rollout_keep: the identity's weight in attention rollout's layers (0.5 in Abnar & Zuidema).
    """

    seed: int = 0
    ig_steps: int = 32
    ig_method: str = "gausslegendre"
    kernelshap_samples: int = 200
    rollout_keep: float = 0.5

    def __post_init__(self) -> None:
        check_integer(self.seed, "seed", low=0)
        check_integer(self.ig_steps, "ig_steps", low=2, high=MAX_IG_STEPS)
        check_integer(self.kernelshap_samples, "kernelshap_samples", low=2, high=MAX_KERNELSHAP_SAMPLES)
        check_number(self.rollout_keep, "rollout_keep", low=0, high=1)
        methods = ("gausslegendre", "riemann_trapezoid", "riemann_left", "riemann_right", "riemann_middle")
        if self.ig_method not in methods:
            raise InputError(f"ig_method must be one of {methods}, got {self.ig_method!r}")

    def to_dict(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "ig_baselines": {"ig": "0 (the padding vector)", "ig-mean": "mean word vector of the vocabulary"},
            "kernelshap_features": "word types (all copies masked together, as padding)",
            "occlusion": "H(x) - H(x without position i), the position masked as padding",
            "occlusion-word": "H(x) - H(x without every copy of the word), the copies masked as padding",
        }


def check_methods(methods: Any) -> tuple[str, ...]:
    """The methods asked for, in :data:`METHODS` order, or an InputError naming the unknown ones."""
    if isinstance(methods, str) or not hasattr(methods, "__iter__"):
        raise InputError(f"methods must be a list of method names from {list(METHODS)}, got {methods!r}")
    asked = list(methods)
    unknown = [m for m in asked if m not in METHODS]
    if unknown:
        raise InputError(f"unknown methods {unknown}; choose from {list(METHODS)}")
    if not asked:
        raise InputError(f"methods is empty; choose at least one of {list(METHODS)}")
    return tuple(m for m in METHODS if m in asked)


def require_captum(methods: tuple[str, ...]) -> None:
    """An InputError when a captum method is asked for and captum is not installed."""
    need = [m for m in methods if m in CAPTUM_METHODS]
    if not need:
        return
    try:
        import captum  # noqa: F401
    except ImportError:
        raise InputError(
            f'methods {need} need captum, which is not installed: pip install -e ".[explain]" '
            f"(or leave them out of methods)"
        ) from None


def masked_decision(model: SentimentTransformer, ids: Tensor, keep: Tensor) -> Tensor:
    """Hardmax decision values (R,) float64 of reviews ``ids`` (R, n) with only the positions ``keep``
    (R, n) bool left: removed words are padding. A row with nothing left reads ``<unk>`` alone, as
    the model does for a text with no known word."""
    empty = ~keep.any(dim=1)
    if bool(empty.any()):
        ids, keep = ids.clone(), keep.clone()
        ids[empty, 0], keep[empty, 0] = UNK_ID, True
    return model.hardmax_logits(ids, keep).to("cpu", torch.float64)


def dynamics_scores(traj: HardmaxTrajectory, a: Tensor, settings: MethodSettings) -> dict[str, Tensor]:
    """``exact``, ``followers`` and ``rollout`` for a batch run (every layer, follow sets kept):
    each (B, n) float64, zero on padding. ``a`` is the exact attribution of the same run; its n words are the
    run's first tokens (a model with registers has R more after them, which are not scored)."""
    assert traj.follow is not None  # the caller ran with follow=True
    K = int(traj.params.layers)
    F = traj.follow[:K]
    m = torch.ones(F.shape[1:3], dtype=torch.bool) if traj.mask is None else traj.mask.cpu()
    F = F & m[None, :, :, None] & m[None, :, None, :]
    N, n = F.shape[-1], a.shape[1]
    others = F & ~torch.eye(N, dtype=torch.bool)  # i follows j, i != j
    followers = others.sum(dim=(0, 2)).to(torch.float64)[:, :n]  # (B, n): over layers and followers i
    reads = m.clone()
    reads[:, n:] = False  # the decoder reads the words
    rollout = influence(traj, keep=settings.rollout_keep, reads=reads)[:, :n]
    return {"exact": a, "followers": followers, "rollout": rollout}


def _vector_forward(model: SentimentTransformer, counts: Tensor) -> Callable[[Tensor], Tensor]:
    """H as a function of a review's distinct word vectors (S, U, d), copies weighted by ``counts`` (U,)."""
    alpha, K = float(model.alpha.detach()), model.config.layers

    def forward(z: Tensor) -> Tensor:
        zs, _ = model.with_registers(z, torch.ones(z.shape[:2], dtype=torch.bool))  # a model's registers after them
        traj = hardmax(zs, alpha=alpha, layers=K, save=SaveAt(every=None), check_hypotheses=False)
        return model.decode_in_order(traj.ys[-1][:, : z.shape[1]], counts.expand(z.shape[0], -1))

    return forward


def _mask_forward(model: SentimentTransformer, ids: Tensor, slot: Tensor) -> Callable[[Tensor], Tensor]:
    """H as a function of a (S, U) keep-mask over a review's word types (0: every copy is padding)."""

    def forward(m: Tensor) -> Tensor:
        keep = m[:, slot] > 0.5  # (S, n) positions kept
        return masked_decision(model, ids.expand(m.shape[0], -1), keep)

    return forward


def _gradient_scores(method: str, model: SentimentTransformer, z: Tensor, counts: Tensor, s: MethodSettings) -> Tensor:
    from captum.attr import InputXGradient, IntegratedGradients

    f = _vector_forward(model, counts)
    if method == "gradxinput":
        return InputXGradient(f).attribute(z.clone().requires_grad_(True)).detach()
    if method == "ig":
        base = torch.zeros_like(z)
    else:  # ig-mean: from the vocabulary's average word (rows 2.. : not <pad>, not <unk>)
        base = model.embed.weight.detach().to("cpu", torch.float64)[2:].mean(dim=0).expand_as(z).contiguous()
    ig = IntegratedGradients(f)
    return ig.attribute(z, baselines=base, n_steps=s.ig_steps, method=s.ig_method).detach()


def captum_scores(method: str, model: SentimentTransformer, ids: Tensor, s: MethodSettings, seed: int) -> np.ndarray:
    """The score of every position of one review ``ids`` (n,) (real words only) by a captum method;
    ``seed`` seeds KernelShap's coalitions (torch's generator, restored afterwards)."""
    from captum.attr import KernelShap

    row, keep = ids.cpu()[None], torch.ones((1, ids.numel()), dtype=torch.bool)
    uid, counts = distinct_words(row, keep)
    slot = (row[0][:, None] == uid[0][None, :]).to(torch.int64).argmax(dim=1)  # (n,) type of each position
    if method == "kernelshap" and uid.shape[1] == 1:  # one player: its Shapley value is f(all) - f(none)
        forward = _mask_forward(model, row, slot)
        per_type = forward(torch.ones((1, 1))) - forward(torch.zeros((1, 1)))
    elif method == "kernelshap":
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            ones = torch.ones((1, uid.shape[1]), dtype=torch.float64)
            ks = KernelShap(_mask_forward(model, row, slot))
            per_type = ks.attribute(
                ones, baselines=0.0, n_samples=s.kernelshap_samples, perturbations_per_eval=s.kernelshap_samples
            )[0]
    else:
        z = model.embed.weight.detach().to("cpu", torch.float64)[uid]  # (1, U, d)
        per_type = _gradient_scores(method, model, z, counts, s)[0].sum(dim=-1)
    per_type = per_type.to(torch.float64) / counts[0]
    return per_type[slot].numpy()


def occlusion_scores(
    model: SentimentTransformer, ids: Tensor, *, by_word: bool = False, cells: int = OCCLUSION_CELLS
) -> np.ndarray:
    r"""Leave-one-out occlusion of one review ``ids`` (n,) (real words only), float64 (n,).

    Position i scores :math:`H(x) - H(x\setminus i)` (``by_word`` False), or
    :math:`H(x) - H(x\setminus w_i)` with every copy of its word :math:`w_i` deleted (``by_word``
    True); a deleted word is padding (:func:`masked_decision`: a review left empty reads ``<unk>``).
    The whole review and its n (or one per word type) deletions run batched, ``cells // n**2``
    reviews per hardmax run, which bounds the memory of the run's (rows, n, n) scores.

    >>> from attndyn.sentiment._model import SentimentConfig
    >>> m = SentimentTransformer(SentimentConfig(vocab_size=8), generator=torch.Generator().manual_seed(0))
    >>> row = torch.tensor([3, 5, 3])  # word 3 twice
    >>> a, w = occlusion_scores(m, row), occlusion_scores(m, row, by_word=True)
    >>> bool(a[0] == a[2]), bool(a[1] == w[1]), w.shape  # copies alike; word 5 has no copy
    (True, True, (3,))
    """
    row = ids.cpu()
    n = row.numel()
    if by_word:
        types, slot = torch.unique(row, return_inverse=True)  # (U,) word types, (n,) the type of each position
        keep = row[None, :] != types[:, None]  # (U, n): every copy of type t deleted
    else:
        slot = torch.arange(n)
        keep = ~torch.eye(n, dtype=torch.bool)  # (n, n): position i deleted
    keep = torch.cat([torch.ones((1, n), dtype=torch.bool), keep])  # row 0: the whole review
    step = max(1, cells // (n * n))
    H = torch.cat([masked_decision(model, row.expand(len(k), -1), k) for k in keep.split(step)])
    return (H[0] - H[1:])[slot].numpy()


def reinitialized(model: SentimentTransformer, seed: int) -> SentimentTransformer:
    """The same architecture with freshly initialised weights (the model-randomization sanity check,
    Adebayo et al. 2018): word vectors, decoder and alpha drawn as at the start of training."""
    gen = torch.Generator().manual_seed(int(seed))
    fresh = SentimentTransformer(model.config, generator=gen)
    if model.config.registers:  # placed on the fresh words and decoder, as training places them
        fresh.place_registers(seed=int(seed))
    return fresh.eval()


def ranking(scores: np.ndarray, signed: bool, H: float, rng: np.random.Generator) -> np.ndarray:
    """Positions best first: signed scores toward the predicted class (sign of H; H <= 0 is the
    negative class), unsigned scores largest first; ties broken at random (``rng``)."""
    side = 1.0 if H > 0 else -1.0
    key = scores * side if signed else scores
    return np.lexsort((rng.random(len(key)), -np.asarray(key, dtype=np.float64)))

r"""The hardmax-transformer sentiment model of the hardmax paper (Section 6), in one file.

.. math::

    z^0_i = E[w_i] \in \mathbb{R}^d,\qquad
    z^{k+1} = \frac{z^k + \alpha\,P(z^k)\,z^k}{1+\alpha}\quad (k = 0..K-1),\qquad
    \hat y = \sigma\Big(\big\langle v, \tfrac{1}{n}\textstyle\sum_{i\ \mathrm{real}} z^K_i\big\rangle + b\Big)

with one attention sublayer shared by all K layers: :math:`Q = K = I`, :math:`V = \alpha I`, and
:math:`P` the row softmax of :math:`\langle z_i, z_j\rangle/\tau` while training (padding keys
masked). Inference replaces :math:`P` by the hardmax of :func:`attndyn.hardmax` with the same
weights; both are the core engine's code path (:mod:`attndyn.attention`, :mod:`attndyn._hardmax`).
:math:`\alpha = \alpha_{\min} + \mathrm{softplus}(\rho)` stays positive by construction, and the
floor :math:`\alpha_{\min}` keeps the dynamics from switching themselves off.

**Registers** (``registers = R > 0``; Darcet et al., ICLR 2024, "Vision transformers need registers"): R more
tokens in every review, :math:`r_k = L(\cos t_k\,u + \sin t_k\,e)`, :math:`t_k = k\pi/(R+1)`, with
:math:`u = v/|v|` the decision's direction and e a unit vector orthogonal to it, and every word shifted by
:math:`c\,e` (its value :math:`\langle v, z_w\rangle` unchanged). A word that no other word outscores then
joins the register of its own value's level, so the decision becomes a vote of the strong words (they lead
themselves) and of levels of the weak ones. The registers attend and are attended like words; the decoder
reads the words only. They are placed once, after the word vectors are trained
(:meth:`SentimentTransformer.place_registers`).

Hook points (``hook_embed``, ``hook_layer.{k}``, ``hook_mean``, ``hook_logit``) name what we
interpret; :meth:`SentimentTransformer.run_with_cache` returns them all.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .. import attention
from .._hardmax import hardmax
from .._options import SaveAt
from .._trajectory import HardmaxTrajectory
from .._validation import InputError
from ._config import JsonConfig, check_number

__all__ = ["SentimentConfig", "SentimentTransformer", "HookPoint", "word_leaders", "distinct_words"]


MAX_D = 65_536  # 30,000 words x 65,536 x 4 bytes is already 7.9 GB of embedding
MAX_LAYERS = 10_000
MAX_REGISTERS = 4_096


@dataclass(frozen=True)
class SentimentConfig(JsonConfig):
    """Everything that fixes the architecture and its initial weights.

    Args:
        vocab_size: rows of the embedding table (index 0 = padding, kept at zero).
        d: token dimension (the paper: 2, 4, 8, 16).
        layers: K, number of layers sharing the one attention sublayer (paper: 8). K = 0 is the
            control without attention: the decision is the mean of the word vectors read by the
            decoder, a linear model trained by the same recipe (what the dynamics cost or add).
        tau: softmax temperature while training (paper: 1e-3); small tau makes softmax ≈ hardmax.
        alpha_init: initial alpha.
        alpha_min: floor of alpha (> 0), so alpha cannot collapse to 0.
        embed_init_std: standard deviation of the initial word vectors; None (default) means
            sqrt(2/d), so that E|z|^2 = 2 and the scores <z_i, z_j>/tau start on the same scale
            for every d (1.0 at d = 2; N(0, 1) in 16-D makes almost every word an extreme point
            of its review, a leader of itself, and nothing clusters).
        registers: R, register tokens appended to every review (0: none, the paper's model). With R > 0
            the model is trained in two stages: the word vectors and decoder as the ``layers=0``
            control, then the registers placed on them (module docstring); needs d >= 2 and layers >= 1.
        register_shift: c, how far every word is moved along e when the registers are placed.
        register_length: L, the registers' norm.
    """

    _kind = "model config"

    vocab_size: int
    d: int = 2
    layers: int = 8
    tau: float = 1e-3
    alpha_init: float = 1.0
    alpha_min: float = 0.5
    embed_init_std: float | None = None
    registers: int = 0
    register_shift: float = 8.0
    register_length: float = 16.0

    def __post_init__(self) -> None:
        for name, least in (("vocab_size", 1), ("d", 1), ("layers", 0), ("registers", 0)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < least:
                zero = {"layers": " (0: no attention, the linear control)", "registers": " (0: none)"}.get(name, "")
                kind = "a positive integer" if least else f"an integer >= 0{zero}"
                raise InputError(f"{name} must be {kind}, got {v!r}")
        for name, most in (("d", MAX_D), ("layers", MAX_LAYERS), ("registers", MAX_REGISTERS)):
            if getattr(self, name) > most:
                raise InputError(
                    f"{name} = {getattr(self, name)} is beyond what this model can run (at most {most:,}; "
                    "the paper uses d <= 16 and 8 layers); choose a smaller value"
                )
        if self.embed_init_std is None:
            object.__setattr__(self, "embed_init_std", math.sqrt(2.0 / self.d))
        for name in ("tau", "alpha_init", "embed_init_std"):
            check_number(getattr(self, name), name, low=0, low_open=True)
        check_number(self.alpha_min, "alpha_min", low=0, low_open=True)
        for name in ("register_shift", "register_length"):  # beyond 1e6 the tokens' scores leave float range
            check_number(getattr(self, name), name, low=1e-6, high=1e6)
        if self.registers and (self.d < 2 or self.layers < 1):
            raise InputError(
                f"registers = {self.registers} needs d >= 2 (a direction beside the decision's) and layers >= 1 "
                f"(got d = {self.d}, layers = {self.layers}); set registers to 0"
            )
        if not self.alpha_min < self.alpha_init:
            raise InputError(
                f"alpha_min must satisfy 0 < alpha_min < alpha_init={self.alpha_init}, got {self.alpha_min!r}"
            )


class HookPoint(nn.Identity):
    """An identity module with a name: register forward hooks on it to read or edit activations."""


def _inverse_softplus(y: float) -> float:
    return y + math.log(-math.expm1(-y))


class SentimentTransformer(nn.Module):
    """Embedding → K shared pure-attention layers → mean over real tokens → linear → logit."""

    registers: Tensor  # (R, d) buffer, only when config.registers > 0 (place_registers fills it)

    def __init__(self, config: SentimentConfig, *, generator: torch.Generator | None = None) -> None:
        super().__init__()
        self.config = config
        c = config
        self.embed = nn.Embedding(c.vocab_size, c.d, padding_idx=0)
        self.alpha_raw = nn.Parameter(torch.tensor(_inverse_softplus(c.alpha_init - c.alpha_min)))
        self.decoder = nn.Linear(c.d, 1)
        self.hook_embed = HookPoint()
        self.hook_layer = nn.ModuleList(HookPoint() for _ in range(c.layers))
        self.hook_mean = HookPoint()
        self.hook_logit = HookPoint()
        if c.registers:  # placed by place_registers(); absent (not zero-sized) without registers: older files load
            self.register_buffer("registers", torch.zeros(c.registers, c.d))
        with torch.no_grad():
            assert c.embed_init_std is not None  # SentimentConfig.__post_init__ fills in the default
            self.embed.weight.normal_(0.0, c.embed_init_std, generator=generator)
            self.embed.weight[0].zero_()
            self.decoder.weight.normal_(0.0, 1.0 / math.sqrt(c.d), generator=generator)
            self.decoder.bias.zero_()

    # ---- what the training loop reads (attndyn.sentiment._train.TrainableModel) ---------------
    @property
    def tau(self) -> float:
        """The softmax temperature the model is trained at (``config.tau``)."""
        return self.config.tau

    def embedding_parameters(self) -> list[Tensor]:
        """The word vectors: the parameters with their own learning rate and weight decay."""
        return [self.embed.weight]

    # ---- registers ------------------------------------------------------------------------
    @torch.no_grad()
    def place_registers(self, seed: int = 0, side: int = 1) -> None:
        r"""Place the R registers on the trained word vectors and decoder (module docstring):
        :math:`r_k = L(\cos t_k\,u + \sin t_k\,e)`, :math:`t_k = k\pi/(R+1)`, k = 1..R,
        :math:`u = v/\lVert v\rVert`, e a seeded unit vector orthogonal to u, and every word (not the padding
        row) moved by c e, which leaves its value :math:`\langle v, z_w\rangle` as it was (to float32 rounding).
        ``side`` = -1 takes -e instead (the registers and the shift on the other side of u; the estimator picks
        the side on the validation reviews). Once: a second call is refused (it would move the words again)."""
        c = self.config
        if not c.registers:
            raise InputError("this model has no registers to place (registers = 0)")
        if bool(self.registers.any()):
            raise InputError(
                "this model's registers are already placed (its words were moved by c e): place them once, on a "
                "model whose registers are zero"
            )
        w = self.decoder.weight.detach().to("cpu", torch.float64)[0]
        if not bool(torch.isfinite(w).all()) or float(w.norm()) == 0.0:
            raise InputError("the decoder's direction v is zero or not finite: registers need a trained decoder")
        u = w / w.norm()
        e = torch.randn(c.d, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
        e = e - (e @ u) * u
        if side not in (1, -1):
            raise InputError(f"side must be 1 or -1 (the side of u the registers lie on), got {side!r}")
        e = side * e / e.norm()
        t = torch.arange(1, c.registers + 1, dtype=torch.float64) * (math.pi / (c.registers + 1))
        regs = c.register_length * (torch.cos(t)[:, None] * u + torch.sin(t)[:, None] * e)
        dev = self.embed.weight.device
        self.embed.weight[1:] += (c.register_shift * e).to(dev, self.embed.weight.dtype)
        self.registers.copy_(regs.to(dev, self.registers.dtype))

    @torch.no_grad()
    def scale_decision(self, scale: float) -> None:
        """Multiply the decoder (v and b) by ``scale`` > 0: every decision value H becomes scale x H, so the
        predictions, the dynamics (which never read v) and the exactness of the attributions are unchanged;
        only the probabilities sigmoid(H) move (temperature scaling of a register model, see the estimator)."""
        if not (math.isfinite(scale) and scale > 0):
            raise InputError(f"the decision scale must be a finite number > 0, got {scale}")
        self.decoder.weight.mul_(scale)
        self.decoder.bias.mul_(scale)

    def with_registers(self, z: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        """``z`` (B, n, d) and ``mask`` (B, n) with the R registers appended as tokens n..n+R-1 (unchanged when
        R = 0); a mask of counts gets count 1 per register."""
        R = self.config.registers
        if not R:
            return z, mask
        B = z.shape[0]
        regs = self.registers.to(z)[None].expand(B, R, z.shape[-1])
        return torch.cat([z, regs], dim=1), torch.cat(
            [mask, torch.ones((B, R), dtype=mask.dtype, device=mask.device)], 1
        )

    def token_ids(self, ids: Tensor) -> Tensor:
        """``ids`` (B, n) with the registers' ids appended (vocab_size + k), as the tokens of :meth:`hardmax_run`'s
        trajectory: every register is a word of its own (for :func:`word_leaders`)."""
        R = self.config.registers
        if not R:
            return ids
        extra = torch.arange(R, dtype=ids.dtype, device=ids.device) + self.config.vocab_size
        return torch.cat([ids, extra[None].expand(ids.shape[0], R)], dim=1)

    # ---- the pieces -------------------------------------------------------------------
    @property
    def alpha(self) -> Tensor:
        """alpha = alpha_min + softplus(alpha_raw) > 0."""
        return self.config.alpha_min + F.softplus(self.alpha_raw)

    def attention_layer(self, z: Tensor, mask: Tensor, tau: float) -> Tensor:
        """One layer z ← (z + α P z)/(1+α), P = softmax(<z_i, z_j>/τ) over real keys. (B, n, d) → (B, n, d)."""
        # alpha once per sequence, (B, 1, 1): its gradient is then summed sequence by sequence
        # before the B sequences are added, sums whose order does not depend on the thread count.
        a = self.alpha.expand(z.shape[0])[:, None, None]
        p = attention.softmax_weights(attention.scores(z), mask, beta=1.0 / tau)  # (B, n, n)
        return (z + a * attention.aggregate(p, z)) / (1.0 + a)

    def decode(self, z: Tensor, mask: Tensor) -> Tensor:
        """Mean over real tokens, then <v, mean> + b. (B, n, d) → (B,) logits.

        ``mask`` may also hold token multiplicities (a float weight per row of ``z``)."""
        m = mask.to(z.dtype)[..., None]  # (B, n, 1)
        mean = self.hook_mean((z * m).sum(dim=1) / m.sum(dim=1))  # (B, d)
        w, b = self.decoder.weight.to(z), self.decoder.bias.to(z)  # z's dtype and device
        return self.hook_logit(mean @ w[0] + b[0])  # (B,)

    def decode_in_order(self, z: Tensor, weight: Tensor) -> Tensor:
        """:meth:`decode` of hardmax inference, its sums taken one term at a time in a fixed order: over the tokens
        (slots) first to last, then over the d coordinates. (B, n, d) → (B,) logits.

        Every step is one elementwise IEEE operation, so a text's H has the same bits whatever batch it is in,
        however it is padded (adding a zero-weight slot adds exactly 0) and on every device and processor;
        :meth:`decode`'s reductions are free to reassociate by shape, which moved H by an ulp between a text
        alone and the same text in a batch. ``weight``: a bool mask or float token multiplicities."""
        w = weight.to(z.dtype)
        total = torch.zeros_like(z[:, 0])  # (B, d)
        count = torch.zeros_like(w[:, 0])  # (B,)
        for u in range(z.shape[1]):
            total = total + z[:, u] * w[:, u, None]
            count = count + w[:, u]
        mean = self.hook_mean(total / count[:, None])  # (B, d)
        v, b = self.decoder.weight.to(z)[0], self.decoder.bias.to(z)[0]
        logit = mean[:, 0] * v[0]
        for a in range(1, mean.shape[1]):
            logit = logit + mean[:, a] * v[a]
        return self.hook_logit(logit + b)

    # ---- softmax (training) forward -------------------------------------------------------
    def layers_softmax(self, ids: Tensor, mask: Tensor, *, tau: float | None = None) -> Iterator[Tensor]:
        """The tokens z^0, z^1, ..., z^K (each (B, n, d)) of the softmax model, one layer at a time."""
        tau = self.config.tau if tau is None else tau
        z = self.hook_embed(self.embed(ids))  # (B, n, d)
        yield z
        n = z.shape[1]
        z, full = self.with_registers(z, mask)  # the words' tokens are the first n
        for k in range(self.config.layers):
            z = self.hook_layer[k](self.attention_layer(z, full, tau))
            yield z[:, :n]

    def forward(self, ids: Tensor, mask: Tensor, *, tau: float | None = None) -> Tensor:
        """Logits (B,) of the softmax model; ``ids``/``mask`` are (B, n)."""
        *_, z = self.layers_softmax(ids, mask, tau=tau)
        return self.decode(z, mask)

    def layer_logits(self, ids: Tensor, mask: Tensor, *, tau: float | None = None) -> Tensor:
        """Logits (K+1, B) of the decoder read at every layer 0..K (row K is :meth:`forward`).

        Rows 0..K-1 are what deep supervision trains on (``TrainConfig.aux_weight``): a loss on
        the mean of layer 0 reaches every word vector, also those of followers, whose influence
        on the last layer shrinks like (1+alpha)^-K once they join a leader.
        """
        return torch.stack([self.decode(z, mask) for z in self.layers_softmax(ids, mask, tau=tau)])

    def run_with_cache(
        self, ids: Tensor, mask: Tensor, *, tau: float | None = None
    ) -> tuple[Tensor, dict[str, Tensor]]:
        """Logits and every hook point's activation, keyed by hook name."""
        cache: dict[str, Tensor] = {}
        handles = [
            mod.register_forward_hook(lambda _m, _i, out, name=name: cache.__setitem__(name, out.detach()))
            for name, mod in self.named_modules()
            if isinstance(mod, HookPoint)
        ]
        try:
            logits = self(ids, mask, tau=tau)
        finally:
            for h in handles:
                h.remove()
        return logits, cache

    # ---- hardmax (inference) forward ------------------------------------------------------
    @torch.no_grad()
    def hardmax_run(
        self, ids: Tensor, mask: Tensor, *, every: int | None = None, follow: bool = False
    ) -> tuple[Tensor, HardmaxTrajectory]:
        """Hardmax inference with the same weights, through :func:`attndyn.hardmax` in float64.

        Returns ``(logits (B,), trajectory)``: the logits are :meth:`hardmax_logits`' (the prediction's H, bit for
        bit: the run's final words are the same tokens); ``every=1`` keeps every layer (for explanations),
        None only the first and last (fast); ``follow`` also keeps the follow sets (see
        :func:`word_leaders`). Runs on the CPU whatever the model's device (the trajectory is
        for analysis; the compiled kernel gives the same bits as any device). With registers the
        trajectory holds n + R tokens, the words first (their ids: :meth:`token_ids`).
        """
        ids, mask = ids.cpu(), mask.cpu()
        z0, full = self.with_registers(self.embed.weight.detach().to("cpu", torch.float64)[ids], mask)  # (B, n+R, d)
        traj = hardmax(
            z0,
            alpha=float(self.alpha.detach()),
            layers=self.config.layers,
            mask=full,
            save=SaveAt(every=every, follow=follow),
            check_hypotheses=False,  # repeated words are legitimate exact ties
        )
        # H as hardmax_logits computes it (the distinct words, in a fixed order), so that an explanation reports
        # the prediction's own number, bit for bit; the run's final words are those of hardmax_logits' run
        return self.hardmax_logits(ids, mask).cpu(), traj

    @torch.no_grad()
    def hardmax_logits(self, ids: Tensor, mask: Tensor) -> Tensor:
        """Hardmax inference logits (B,), decoded by :meth:`decode_in_order` (a text's H does not depend on its
        batch), faster than :meth:`hardmax_run`.

        Copies of a word are identical tokens, and identical tokens stay identical under the
        hardmax dynamics (same scores, same follow set, same update), so each review runs on
        its distinct words and the final mean weights each by its number of copies.
        """
        dev = self.embed.weight.device  # runs where the model is
        uid, counts = distinct_words(ids.to(dev), mask.to(dev))
        z0, real = self.with_registers(self.embed.weight.detach().to(torch.float64)[uid], counts > 0)
        traj = hardmax(
            z0,
            alpha=float(self.alpha.detach()),
            layers=self.config.layers,
            mask=real,
            save=SaveAt(every=None),
            check_hypotheses=False,
        )
        return self.decode_in_order(traj.ys[-1][:, : uid.shape[1]], counts)


def distinct_words(ids: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    """Each review's distinct real words and their multiplicities.

    Returns ``(uid (B, U) int64, counts (B, U) float64)``, U the largest number of distinct
    words of a review; unused slots have id 0 and count 0.

    >>> distinct_words(torch.tensor([[5, 3, 5, 0]]), torch.tensor([[True, True, True, False]]))
    (tensor([[3, 5]]), tensor([[1., 2.]], dtype=torch.float64))
    """
    B = ids.shape[0]
    pad = torch.iinfo(ids.dtype).max
    s = ids.masked_fill(~mask, pad).sort(dim=1).values  # padding last
    real = s != pad
    first = real.clone()
    first[:, 1:] &= s[:, 1:] != s[:, :-1]
    slot = first.cumsum(dim=1) - 1  # (B, n): the distinct-word slot of each sorted token
    U = max(1, int(first.sum(dim=1).max()))
    dev = ids.device
    uid = torch.zeros((B, U), dtype=ids.dtype, device=dev)
    rows = torch.arange(B, device=dev)[:, None].expand_as(s)
    uid[rows[first], slot[first]] = s[first]
    counts = torch.zeros((B, U), dtype=torch.float64, device=dev)
    counts.index_put_(
        (rows[real], slot[real]), torch.ones(int(real.sum()), dtype=torch.float64, device=dev), accumulate=True
    )
    return uid, counts


def word_leaders(traj: HardmaxTrajectory, ids: Tensor) -> Tensor:
    r"""Leaders counted per *word*, (T, B, n) bool at the kept layers (needs ``follow=True``).

    The paper's leader has :math:`C_i = \{i\}`. A word that occurs twice is two identical
    tokens that tie exactly, so by that letter neither copy would ever lead. Here token i leads
    when every token it follows is a copy of its own word (same index), i.e. its word is its
    unique best match.
    """
    if traj.follow is None:
        raise InputError("word_leaders needs the follow sets: run hardmax with save=SaveAt(follow=True)")
    same = ids[:, :, None] == ids[:, None, :]  # (B, n, n)
    other = traj.follow & ~same  # (T, B, n, n): follows a different word
    lead = ~other.any(dim=-1)  # (T, B, n)
    return lead & traj.mask[None] if traj.mask is not None else lead

r"""Self-attention as visible stages: ``scores`` → weights (``hardmax`` or ``softmax``) → ``aggregate``.

This module holds the single definition of the attention pattern used everywhere in
attndyn: the hardmax dynamics, the softmax dynamics and the sentiment model all call
these functions (the compiled hardmax kernels in :mod:`attndyn._kernels`, used for float64
runs on the CPU without gradients, follow the exact same tie rule and are tested against
this module).

Shapes: ``B`` batch, ``n`` tokens, ``d`` token dimension.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = [
    "scores",
    "causal_mask",
    "allowed",
    "hardmax_weights",
    "softmax_weights",
    "softmax_attention",
    "aggregate",
    "follow_sets",
]

# Chunk the (B, n, n) score tensor so that at most this many entries exist at a time.
# (8 MB of float64: large enough to amortise per-call overhead, small enough to stay in cache.)
MAX_CHUNK_ENTRIES = 1 << 20
# On a GPU each chunk costs a dozen kernel launches: chunks of 2^26 entries (512 MB in float64)
# keep the launches few and the memory bounded.
MAX_CHUNK_ENTRIES_GPU = 1 << 26


def chunk_entries(device: torch.device | str | None = None) -> int:
    """How many score entries a chunk may hold on ``device`` (CPU: cache-sized; GPU: 2^26)."""
    return MAX_CHUNK_ENTRIES if torch.device(device or "cpu").type == "cpu" else MAX_CHUNK_ENTRIES_GPU


def scores(
    x: Tensor, A: Tensor | None = None, *, rows: slice = slice(None), out: Tensor | None = None, exact: bool = False
) -> Tensor:
    r"""Pairwise attention scores :math:`s_{ij} = \langle A z_i, z_j\rangle`, shape (B, n, n).

    Hardmax paper, eq. (1.1b), with ``A`` (identity if None). The softmax paper's scores,
    eq. (2), :math:`\langle Q x_i, K x_j\rangle`, are the case :math:`A = K^\top Q`.
    ``rows`` restricts the queries i (for chunking): the result is then (B, r, n). ``out`` is an
    optional contiguous scratch buffer of at least B·r·n entries (not for autograd); the result
    is a view of its start, so one buffer serves chunks of any shape.

    ``exact=True`` fixes the rounding, as the hardmax tie rule needs (ties are decided bit for
    bit): :math:`w = A z_i` and :math:`s_{ij}` are left-to-right sums of rounded products,
    :math:`((w_1 z_{j1} + w_2 z_{j2}) + \dots)`, never fused multiply-adds, so every path — the
    compiled kernels, the torch path on any device, the naive loop — gets the same bits. (A
    matrix product, the default, may fuse and reorder; it is faster for large d.)

    >>> import torch
    >>> z = torch.tensor([[[1.0, 0.0], [0.0, 2.0]]], dtype=torch.float64)
    >>> scores(z).tolist()
    [[[1.0, 0.0], [0.0, 4.0]]]
    >>> torch.equal(scores(z, exact=True), scores(z))
    True
    """
    if exact:
        return _exact_scores(x, A, rows, out)
    q = x[:, rows]
    if A is not None:
        q = q @ A.transpose(-1, -2)  # rows A z_i, (B, r, d)
    if out is not None:
        B, r, n = q.shape[0], q.shape[1], x.shape[1]
        return torch.bmm(q, x.transpose(1, 2), out=out.view(-1)[: B * r * n].view(B, r, n))
    return torch.bmm(q, x.transpose(1, 2))  # (B, r, n)


def _queries(x: Tensor, A: Tensor | None, rows: slice) -> Tensor:
    """The rows :math:`w = A z_i` of the queries ``rows``, (B, r, d): left-to-right sums of rounded products."""
    q = x[:, rows]
    if A is not None:  # w_k = sum_l A_kl z_l, left to right
        w = q[..., 0:1] * A[:, 0]
        for l in range(1, x.shape[-1]):
            w = w + q[..., l : l + 1] * A[:, l]
        q = w
    return q


def _exact_scores(x: Tensor, A: Tensor | None, rows: slice, out: Tensor | None) -> Tensor:
    """Scores with the rounding fixed (see :func:`scores`): one rounded product and one rounded
    sum per coordinate, elementwise (no fusion on any device)."""
    q = _queries(x, A, rows)  # (B, r, d)
    d = x.shape[-1]
    B, r, n = q.shape[0], q.shape[1], x.shape[1]
    grad = torch.is_grad_enabled() and (x.requires_grad or (A is not None and A.requires_grad))
    if out is None or grad:
        s = q[:, :, None, 0] * x[:, None, :, 0]  # (B, r, n)
        for k in range(1, d):
            s = s + q[:, :, None, k] * x[:, None, :, k]
        return s
    s = out.view(-1)[: B * r * n].view(B, r, n)
    torch.mul(q[:, :, None, 0], x[:, None, :, 0], out=s)
    if d > 1:
        tmp = torch.empty_like(s)
        for k in range(1, d):
            torch.mul(q[:, :, None, k], x[:, None, :, k], out=tmp)
            s.add_(tmp)
    return s


def causal_mask(n: int, device: torch.device | str | None = None) -> Tensor:
    """(n, n) booleans, True where query i may attend key j: :math:`j \\le i` (lower triangle, diagonal included).

    >>> causal_mask(3).int().tolist()
    [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    """
    return torch.ones(n, n, dtype=torch.bool, device=device).tril()


def allowed(
    mask: Tensor | None,
    n: int,
    *,
    causal: bool = False,
    rows: slice = slice(None),
    device: torch.device | str | None = None,
) -> Tensor | None:
    r"""Which keys each query may attend: the one place where padding and the causal mask are composed.

    Query i may attend key j when j is a real token (``mask`` (B, n), True for real tokens; None: all real) and,
    with ``causal``, :math:`j \le i`:

    .. math:: \mathcal A_i = \{ j : \mathrm{mask}_j \text{ and } (j \le i \text{ if causal}) \}.

    Returns booleans that broadcast against scores (B, r, n) for the query ``rows`` (for chunking; positions are
    those of the whole sequence): ``mask[:, None, :]`` (B, 1, n) without ``causal``, (1 or B, r, n) with it;
    None when every key is attended. A real query always has its own key (j = i is real and :math:`i \le i`); a
    padding query under ``causal`` is given its own key too, so that no row is empty (its row is discarded:
    padding neither attends nor moves).

    >>> allowed(torch.tensor([[True, False, True]]), 3, causal=True)[0].int().tolist()
    [[1, 0, 0], [1, 1, 0], [1, 0, 1]]
    """
    if not causal:
        return None if mask is None else mask[:, None, :]
    dev = mask.device if mask is not None and device is None else device
    i = torch.arange(n, device=dev)[rows]  # the query positions
    j = torch.arange(n, device=dev)
    keep = j[None, :] <= i[:, None]  # (r, n)
    if mask is None:
        return keep[None]
    return (keep[None] & mask[:, None, :]) | (j[None, :] == i[:, None])[None]  # (B, r, n)


def _masked(s: Tensor, mask: Tensor | None, causal: bool = False, rows: slice = slice(None)) -> Tensor:
    if mask is None and not causal:
        return s  # every key is attended (the unmasked path: no call)
    keep = allowed(mask, s.shape[-1], causal=causal, rows=rows, device=s.device)
    return s if keep is None else s.masked_fill(~keep, float("-inf"))  # keys a query may not attend: never attended


def hardmax_weights(s: Tensor, mask: Tensor | None = None, *, tol: float = 0.0, causal: bool = False) -> Tensor:
    r"""Row-stochastic hardmax pattern from scores ``s`` (B, n, n).

    Tie rule of the hardmax paper, eq. (1.1b), over the keys query i may attend (:func:`allowed`):
    :math:`C_i = \{ j \in \mathcal A_i : s_{ij} \ge \max_{l \in \mathcal A_i} s_{il} - \mathrm{tol} \}` and
    :math:`W_{ij} = 1/|C_i|` for :math:`j\in C_i`, else 0. With ``tol = 0`` (default) this is
    the exact rule: every maximiser counts, bit for bit. Padding keys (``mask`` False) are
    never in :math:`C_i`; a padding query gets the row :math:`e_i` so it does not move. With ``causal``
    the argmax is taken over :math:`j \le i` only.

    >>> import torch
    >>> s = torch.tensor([[[1.0, 3.0, 3.0], [0.0, 2.0, 1.0], [5.0, 0.0, 5.0]]])
    >>> hardmax_weights(s).tolist()
    [[[0.0, 0.5, 0.5], [0.0, 1.0, 0.0], [0.5, 0.0, 0.5]]]
    """
    s = _masked(s, mask, causal)
    m = s.amax(dim=-1, keepdim=True)  # (B, n, 1)
    follow = s >= (m - tol) if tol > 0 else s == m  # C_i as a boolean row
    w = follow.to(s.dtype)
    w = w / w.sum(dim=-1, keepdim=True)
    if mask is not None:
        eye = torch.eye(s.shape[-1], dtype=s.dtype, device=s.device)
        w = torch.where(mask[:, :, None], w, eye)
    return w


def hardmax_mean(
    s: Tensor,
    z: Tensor,
    mask: Tensor | None = None,
    *,
    tol: float = 0.0,
    causal: bool = False,
    overwrite_s: bool = False,
) -> tuple[Tensor, Tensor, Tensor]:
    r""":math:`\frac{1}{|C_i|}\sum_{j\in C_i} z_j` and the boolean follow sets, in few passes.

    Same tie rule as :func:`hardmax_weights` (which it equals: ``hardmax_weights(s) @ z``) without
    forming the weight matrix; padding queries follow nobody and their "mean" is their own token.
    ``overwrite_s`` lets it mask the keys a query may not attend (:func:`allowed`) in ``s`` in place (a scratch
    buffer; saves a pass and an allocation). Returns ``(mean (B, n, d), follow (B, n, n), |C_i| (B, n, 1))``.
    """
    keep = None if mask is None and not causal else allowed(mask, s.shape[-1], causal=causal, device=s.device)
    if overwrite_s and keep is not None:
        s = s.masked_fill_(~keep, float("-inf"))
    elif keep is not None:
        s = s.masked_fill(~keep, float("-inf"))
    m, arg = s.max(dim=-1, keepdim=True)  # (B, n, 1) each
    return _mean_of(s >= (m - tol) if tol > 0 else s == m, arg, z, mask)


def _mean_of(
    follow: Tensor, arg: Tensor, z: Tensor, mask: Tensor | None, count: Tensor | None = None
) -> tuple[Tensor, Tensor, Tensor]:
    """:func:`hardmax_mean` from the follow sets of every query (B, n, n), a maximiser of each (B, n, 1) and, where
    the caller knows them, the sizes of the real queries' follow sets (B, n, 1) int32."""
    if mask is not None:
        follow &= mask[:, :, None]
    if count is None:
        count = follow.view(torch.uint8).sum(dim=-1, keepdim=True, dtype=torch.int32)  # (B, n, 1), a fast bool sum
    elif mask is not None:
        count = count.masked_fill(~mask[:, :, None], 0)  # padding follows nobody
    single = count == 1 if mask is None else (count == 1) | ~mask[:, :, None]
    if bool(single.all()):  # no ties (the generic case): C_i = {argmax}, O(n d) gather
        mean = torch.gather(z, 1, arg.expand(-1, -1, z.shape[-1]))
    else:
        mean = torch.bmm(follow.to(z.dtype), z) / count.clamp_min(1)
    if mask is not None:
        mean = torch.where(mask[:, :, None], mean, z)
    return mean, follow, count


#: Token dimensions from which :func:`hardmax_mean_screened` applies (one token coordinate: the exact scores are
#: one product per pair, no cheaper screen exists). On the CPU it pays from d = 2 on (benchmarks/bench_screen.py).
SCREEN_MIN_D = 2


def screens(x: Tensor, tol: float, A: Tensor | None = None) -> bool:
    """Whether :func:`hardmax_mean_screened` applies to tokens ``x`` (B, n, d) and scores with ``A``: the exact rule
    (``tol`` 0), d of at least :data:`SCREEN_MIN_D`, ``A`` (if any) of the tokens' dtype (the exact scores of
    mixed dtypes are promoted), and a matrix product whose rounding the textbook bound covers: float64, or float32
    where torch multiplies at full float32 precision (``torch.get_float32_matmul_precision() == "highest"``, no
    TF32 on CUDA)."""
    if tol != 0.0 or x.shape[-1] < SCREEN_MIN_D or (A is not None and A.dtype != x.dtype):
        return False
    if x.dtype == torch.float64:
        return True
    full = torch.get_float32_matmul_precision() == "highest" and not torch.backends.cuda.matmul.allow_tf32
    return x.dtype == torch.float32 and full


def _product(q: Tensor, x: Tensor, out: Tensor | None) -> Tensor:
    r""":math:`\tilde s = q x^\top` (B, n, n), one batched matrix product (:func:`hardmax_mean_screened` bounds
    its rounding, whatever order the library sums in)."""
    return torch.bmm(q, x.transpose(1, 2), out=out)


def hardmax_mean_screened(
    x: Tensor, A: Tensor | None, mask: Tensor | None = None, *, causal: bool = False, out: Tensor | None = None
) -> tuple[Tensor, Tensor, Tensor]:
    r"""``hardmax_mean(scores(x, A, exact=True), x, mask, causal=causal)``, the same three tensors, with the exact
    scores of few queries (where :func:`screens`; ``out``: a scratch buffer as :func:`scores` takes).

    The scores are first one matrix product, :math:`\tilde s_{ij} = w_i \cdot x_j` (:math:`w_i = A x_i` as
    :func:`scores` rounds it) summed in whatever order the library takes. Every way of summing d rounded products,
    fused or not, in any order, lies within :math:`\gamma_d \sum_k |w_{ik} x_{jk}|` (plus :math:`d\eta/2` for
    products that underflow, :math:`\eta` the smallest subnormal) of the exact inner product (Higham, *Accuracy and
    Stability of Numerical Algorithms*, 2nd ed., eq. (3.5)); so does the left-to-right sum :math:`s_{ij}` of
    ``scores(exact=True)``. Hence :math:`|\tilde s_{ij} - s_{ij}| \le e_i = 2\gamma_d \sum_k |w_{ik}| X_k + 2d\eta`,
    :math:`X_k` the largest :math:`|x_{jk}|` of the real keys, and a key with
    :math:`\tilde s_{ij} < \max_l \tilde s_{il} - 2e_i` scores exactly below the key that maximises
    :math:`\tilde s_{i\cdot}`: it is not in :math:`C_i` (eq. (1.1b) of the hardmax paper). Where one key is left,
    it is :math:`C_i`; the other real queries (ties, near ties) are scored exactly, left to right. The bound is
    taken twice over, which covers the rounding of its own computation.
    """
    c, L, d = x.shape
    q = _queries(x, A, slice(None))
    s = _product(q, x, None if out is None else out.view(-1)[: c * L * L].view(c, L, L))
    keep = None if mask is None and not causal else allowed(mask, L, causal=causal, device=x.device)
    if keep is not None:
        s.masked_fill_(~keep, float("-inf"))
    big = x.abs() if mask is None else x.abs().masked_fill(~mask[:, :, None], 0.0)
    u = torch.finfo(x.dtype).eps / 2
    gamma = d * u / (1.0 - d * u)
    bound = 4.0 * gamma * (q.abs() * big.amax(dim=1, keepdim=True)).sum(dim=-1, keepdim=True)
    bound += 4.0 * d * torch.finfo(x.dtype).tiny * torch.finfo(x.dtype).eps  # 4 d eta: products that underflow
    m, arg = s.max(dim=-1, keepdim=True)
    second = s.scatter_(-1, arg, float("-inf")).amax(dim=-1)  # (c, L): the best of the other keys
    unsure = second >= (m - 2.0 * bound)[..., 0]  # another key is left in
    unsure = unsure if mask is None else unsure & mask
    follow = torch.zeros((c, L, L), dtype=torch.bool, device=x.device).scatter_(-1, arg, True)
    count = torch.ones((c, L, 1), dtype=torch.int32, device=x.device)
    if bool(unsure.any()):
        b, i = torch.nonzero(unsure, as_tuple=True)
        w = q[b, i]  # (R, d)
        exact = w[:, 0:1] * x[b, :, 0]  # (R, L), left to right as _exact_scores
        for k in range(1, d):
            exact = exact + w[:, k : k + 1] * x[b, :, k]
        if keep is not None:
            exact.masked_fill_(~keep.expand(c, L, L)[b, i], float("-inf"))
        top, at = exact.max(dim=-1, keepdim=True)
        follow[b, i] = ties = exact == top
        arg[b, i] = at
        count[b, i] = ties.view(torch.uint8).sum(dim=-1, keepdim=True, dtype=torch.int32)
    return _mean_of(follow, arg, x, mask, count)


def follow_sets(s: Tensor, mask: Tensor | None = None, *, tol: float = 0.0, causal: bool = False) -> Tensor:
    """Boolean (B, n, n): entry (i, j) is True when j ∈ C_i (see :func:`hardmax_weights`)."""
    return hardmax_weights(s, mask, tol=tol, causal=causal) > 0


def softmax_weights(
    s: Tensor, mask: Tensor | None = None, *, beta: float = 1.0, causal: bool = False, rows: slice = slice(None)
) -> Tensor:
    r"""Row softmax :math:`P_{ij} = e^{\beta s_{ij}} / \sum_{l} e^{\beta s_{il}}` (softmax paper eq. (2)), the
    sums over the keys query i may attend (:func:`allowed`: real tokens; with ``causal``, :math:`j, l \le i`).

    Numerically stable (the row maximum is subtracted before exponentiating), so scores of
    any size give a finite result; padding keys, and with ``causal`` the keys :math:`j > i`, get weight 0.
    ``s`` may hold the query ``rows`` of the sequence only (B, r, n) (positions for ``causal``). Its gradient,
    :math:`\partial L/\partial s_{ij} = P_{ij}\,(g_{ij} - \sum_l g_{il} P_{il})` for
    :math:`g = \partial L/\partial P`, sums each row on its own, so on the CPU the gradient is
    the same bits whatever the number of threads (torch's fused softmax backward is not).

    >>> s = torch.tensor([[[0.0, 1.0], [2.0, 2.0]]], dtype=torch.float64, requires_grad=True)
    >>> torch.autograd.gradcheck(lambda t: softmax_weights(t, beta=3.0), (s,))
    True
    """
    if beta != 1.0:
        s = beta * s
    s = _masked(s, mask, causal, rows)
    if s.requires_grad and torch.is_grad_enabled():
        return _RowSoftmax.apply(s)
    return torch.softmax(s, dim=-1)


class _RowSoftmax(torch.autograd.Function):
    """torch.softmax over the last dimension, with a backward pass whose reductions run row by row."""

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, s: Tensor) -> Tensor:
        p = torch.softmax(s, dim=-1)
        ctx.save_for_backward(p)
        return p

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx, g: Tensor) -> Tensor:
        (p,) = ctx.saved_tensors  # type: ignore[attr-defined]
        gp = g * p
        dot = gp.sum(dim=-1, keepdim=True)  # (..., 1): one reduction per row
        return gp.addcmul_(p, dot, value=-1.0)  # P (g - <g, P>)


def _fused_applies(q: Tensor) -> bool:
    """torch's fused attention kernels exist here: every dtype on the CPU, half/single on CUDA
    (for float64 on CUDA torch falls back to a kernel that materialises n x n)."""
    return q.device.type == "cpu" or q.dtype != torch.float64


def softmax_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    *,
    beta: float = 1.0,
    block: int | None = None,
    causal: bool = False,
) -> Tensor:
    r""":math:`\sum_j P_{ij} v_j` with :math:`P = \mathrm{softmax}(\beta\, q k^\top)` row-wise, never all of P.

    Softmax paper eq. (1)-(2) with queries :math:`q_i = A x_i`, keys :math:`k_j = x_j` (so
    :math:`q_i\cdot k_j = \langle A x_i, x_j\rangle`, as :func:`scores`) and values
    :math:`v_j`; padding keys (``mask`` False) get weight 0, and with ``causal`` so do the keys
    :math:`j > i` (:func:`allowed`). Shapes ``q``, ``k`` (B, n, d),
    ``v`` (B, n, d_v) → (B, n, d_v). Where a maintained fused kernel exists,
    ``torch.nn.functional.scaled_dot_product_attention`` (``scale = beta``; flash / memory-efficient
    kernels: no n x n tensor, forward and backward) computes it; otherwise (float64 on CUDA) blocks
    of query rows of at most ``block`` score entries (default :func:`chunk_entries`) are formed in
    turn. Equal to ``aggregate(softmax_weights(scores), v)`` up to rounding.

    >>> import torch
    >>> x = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]], dtype=torch.float64)
    >>> p = softmax_weights(scores(x), beta=2.0)
    >>> torch.allclose(softmax_attention(x, x, x, beta=2.0), aggregate(p, x))
    True
    """
    B, n, _ = q.shape
    if block is None and _fused_applies(q):
        m = None  # no padding; causal: the fused kernels skip the blocks above the diagonal (is_causal)
        if mask is not None:  # (B, 1, 1, n) padding keys, or (B, 1, n, n) composed with the causal mask
            keep = allowed(mask, n, causal=causal)
            assert keep is not None  # a mask was given
            m = keep[:, None]  # True = attended
        out = torch.nn.functional.scaled_dot_product_attention(
            q[:, None], k[:, None], v[:, None], attn_mask=m, is_causal=causal and mask is None, scale=beta
        )  # (B, 1, n, d_v): the 4-D form selects the fused kernels
        return out[:, 0]
    rows = max(1, (block or chunk_entries(q.device)) // max(1, B * n))
    parts = []
    for a in range(0, n, rows):
        s = torch.bmm(q[:, a : a + rows], k.transpose(1, 2))  # (B, r, n)
        parts.append(aggregate(softmax_weights(s, mask, beta=beta, causal=causal, rows=slice(a, a + rows)), v))
    return parts[0] if len(parts) == 1 else torch.cat(parts, dim=1)


def aggregate(w: Tensor, v: Tensor) -> Tensor:
    r""":math:`\sum_j W_{ij} v_j`: (B, n, n) weights times (B, n, d) values → (B, n, d)."""
    return torch.bmm(w, v)


def ragged_chunks(lengths: Tensor, budget: int | None = None) -> list[tuple[Tensor, int]]:
    r"""Groups of sequences of similar length, each ``(indices, L)``, so a (c, L, L) tensor stays small.

    ``lengths`` (B,) holds how many leading positions of each sequence matter (1 + the index of
    its last real token). Sequences are taken shortest first and a group covers only its
    longest member's L positions: a batch of ragged sequences padded to n costs about
    :math:`\sum_b L_b^2` instead of :math:`B n^2`. Every sequence is in exactly one group, and a
    group holds at most ``budget`` entries (default ``MAX_CHUNK_ENTRIES``; :func:`chunk_entries`
    gives the budget per device) unless a single sequence needs more.

    >>> [(idx.tolist(), L) for idx, L in ragged_chunks(torch.tensor([3, 1, 2]))]
    [([1, 2, 0], 3)]
    """
    budget = MAX_CHUNK_ENTRIES if budget is None else budget
    order = torch.argsort(lengths, stable=True)
    ls = [max(1, v) for v in lengths[order].tolist()]
    B, a, out = len(ls), 0, []
    while a < B:
        c = max(1, min(B - a, budget // (ls[a] * ls[a])))
        while c > 1 and c * ls[a + c - 1] ** 2 > budget:  # the longest member sets the cost
            c = max(1, min(c - 1, budget // ls[a + c - 1] ** 2))
        out.append((order[a : a + c], ls[a + c - 1]))
        a += c
    return out

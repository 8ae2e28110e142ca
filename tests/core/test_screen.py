"""The screened hardmax pattern (attention.hardmax_mean_screened): one matrix product and a rounding bound decide
most follow sets, the exact scores the rest; every output is the exact rule's, bit for bit."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import attndyn
from attndyn import _hardmax, attention


def exact(x, A, mask, causal):
    """The reference: every score left to right (scores(exact=True)), then the tie rule."""
    return attention.hardmax_mean(attention.scores(x, A, exact=True), x, mask, causal=causal)


def near_ties(rng, c, L, d, dtype, *, dyadic=False, exact=True):
    """Tokens copied from others, as they are (``exact``) or one ulp away in one coordinate (the position's, mod d),
    and more tokens moved by one ulp: the pairs the screen cannot tell apart."""
    x = torch.from_numpy(rng.standard_normal((c, L, d))).to(dtype)
    if dyadic:
        x = torch.round(x * 4) / 4  # many exact ties of the scores
    src = torch.from_numpy(rng.integers(0, L, size=(c, L)))
    copy = torch.from_numpy(rng.random((c, L)) < 0.4)
    x = torch.where(copy[..., None], torch.gather(x, 1, src[..., None].expand(-1, -1, d)), x)
    nudge = torch.from_numpy(rng.random((c, L)) < 0.3)
    if not exact:
        nudge = torch.where(copy[..., None], torch.arange(L)[:, None] % d == torch.arange(d), False)
    else:
        nudge = torch.zeros(c, L, d, dtype=torch.bool).index_fill_(2, torch.tensor([0]), True) & nudge[..., None]
    nudge &= x != 0  # (not 0: a subnormal token)
    return torch.where(nudge, torch.nextafter(x, torch.full_like(x, np.inf)), x)


def scores_and_room(q, x):
    """The scores of queries q (c, L, d) against keys x, left to right, and how far a product may stray from each:
    the sum of both paths' rounding bounds, 2 gamma_d sum_k |q_k x_jk|."""
    d, u = x.shape[-1], torch.finfo(x.dtype).eps / 2
    s = torch.zeros(q.shape[0], q.shape[1], x.shape[1], dtype=x.dtype)
    for k in range(d):
        s = s + q[:, :, None, k] * x[:, None, :, k]
    return s, 2 * d * u / (1 - d * u) * (q.abs() @ x.abs().transpose(1, 2))


def assert_same(got, want):
    for name, a, b in zip(("mean", "follow", "count"), got, want):
        assert torch.equal(a, b), name


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    c=st.integers(1, 4),
    L=st.integers(1, 24),
    d=st.integers(1, 12),
    f32=st.booleans(),
    with_A=st.booleans(),
    with_mask=st.booleans(),
    causal=st.booleans(),
    dyadic=st.booleans(),
    scale=st.sampled_from([1.0, 2.0**-300, 2.0**300]),
)
def test_screened_equals_the_exact_rule(seed, c, L, d, f32, with_A, with_mask, causal, dyadic, scale):
    rng = np.random.default_rng(seed)
    dtype = torch.float32 if f32 else torch.float64
    if f32:
        scale = 1.0  # 2^+-300 is outside float32
    x = near_ties(rng, c, L, d, dtype, dyadic=dyadic) * scale
    A = torch.from_numpy(rng.standard_normal((d, d))).to(dtype) if with_A else None
    mask = torch.from_numpy(rng.random((c, L)) > 0.3) if with_mask else None
    assert_same(attention.hardmax_mean_screened(x, A, mask, causal=causal), exact(x, A, mask, causal))


def test_screened_holds_against_the_worst_product_the_bound_allows(monkeypatch):
    """The product replaced by the exact scores moved by up to the sum of both rounding bounds,
    2 gamma_d sum_k |w_k x_jk|, each entry at random: near ties swap places in it, and the screen still finds
    every follow set (a screen whose band is a quarter of its own fails here)."""
    rng = np.random.default_rng(7)
    hits = []

    def worst(q, x, out):
        s, room = scores_and_room(q, x)
        push = torch.from_numpy(rng.uniform(-1.0, 1.0, size=tuple(s.shape))).to(x.dtype)
        moved = s + push * room
        hits.append(int((moved.argmax(-1) != s.argmax(-1)).sum()))
        return moved if out is None else out.copy_(moved)

    monkeypatch.setattr(attention, "_product", worst)
    for trial in range(40):
        dtype = (torch.float64, torch.float32)[trial % 2]
        x = near_ties(rng, 3, 16, 2 + trial % 6, dtype, exact=trial % 8 < 4)  # or no exact tie
        A = torch.from_numpy(rng.standard_normal((x.shape[-1],) * 2)).to(dtype) if trial % 3 else None
        mask = torch.from_numpy(rng.random((3, 16)) > 0.2) if trial % 4 else None
        assert_same(
            attention.hardmax_mean_screened(x, A, mask, causal=trial % 5 == 0), exact(x, A, mask, trial % 5 == 0)
        )
    assert sum(hits) > 20  # the product did put other keys first


def test_screens_only_where_the_bound_holds():
    x = torch.zeros(1, 3, 4, dtype=torch.float64)
    assert attention.screens(x, 0.0) and attention.screens(x.float(), 0.0)
    assert not attention.screens(x, 0.5)  # a tolerance: the band would be tol +- the bound
    assert not attention.screens(x[..., :1], 0.0)  # one coordinate: nothing to spare
    assert not attention.screens(x.half(), 0.0) and not attention.screens(x.bfloat16(), 0.0)
    eye = torch.eye(4, dtype=torch.float64)
    assert attention.screens(x, 0.0, eye) and not attention.screens(x.float(), 0.0, eye)  # mixed: scores promoted
    before = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("high")  # float32 products may go through TF32 or bfloat16 passes
        assert not attention.screens(x.float(), 0.0) and attention.screens(x, 0.0)
    finally:
        torch.set_float32_matmul_precision(before)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("d", [2, 5])
def test_a_torch_path_run_is_the_same_with_and_without_the_screen(monkeypatch, dtype, d):
    rng = np.random.default_rng(11)
    Z = near_ties(rng, 6, 30, d, torch.float64, dyadic=d == 2)
    mask = torch.from_numpy(rng.random((6, 30)) > 0.2)
    monkeypatch.setattr(_hardmax, "_use_kernel", lambda z, A: False)  # float64 too: the torch path
    runs = []
    for least in (1 << 30, attention.SCREEN_MIN_D):
        monkeypatch.setattr(attention, "SCREEN_MIN_D", least)
        runs.append(
            attndyn.hardmax(
                Z, alpha=0.5, layers=6, mask=mask, dtype=dtype, save=attndyn.SaveAt(follow=True), check_hypotheses=False
            )
        )
    a, b = runs
    for name in ("ys", "leader_mask", "follow", "leader_since"):
        assert torch.equal(getattr(a, name), getattr(b, name)), name


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_near_tie_the_product_puts_wrong_is_scored_exactly(monkeypatch, dtype):
    """Two keys one ulp apart and no exact tie: a product that swaps the two best scores of every row (within the
    bound's room) must not decide the follow set or the maximiser the mean is gathered from."""

    def swapped(q, x, out):
        s, room = scores_and_room(q, x)
        top = s.topk(2, dim=-1)
        fits = (top.values[..., :1] - top.values[..., 1:]) <= room.gather(-1, top.indices).amin(-1, keepdim=True)
        assert int(fits.sum()) == 2  # the rows of the two keys one ulp apart
        first = torch.where(fits, top.values[..., 1:], top.values[..., :1])
        second = torch.where(fits, top.values[..., :1], top.values[..., 1:])
        s.scatter_(-1, top.indices[..., :1], first)
        s.scatter_(-1, top.indices[..., 1:], second)
        return s

    v = torch.tensor([1.0, 0.75, -0.5], dtype=dtype)
    w = v.clone()
    w[0] = torch.nextafter(v[0], torch.tensor(2.0, dtype=dtype))
    x = torch.stack([v, w, -v, torch.tensor([0.1, -2.0, 0.3], dtype=dtype)])[None]  # (1, 4, 3)
    want = exact(x, None, None, False)
    assert bool((want[2] == 1).all())  # no tie: every mean is one gathered key
    monkeypatch.setattr(attention, "_product", swapped)
    assert_same(attention.hardmax_mean_screened(x, None, None), want)


def test_float32_tokens_with_a_float64_matrix_step_as_before(monkeypatch):
    """Tokens and A of two dtypes: the exact scores are promoted, and the step is the unscreened one."""
    rng = np.random.default_rng(5)
    z = torch.from_numpy(rng.standard_normal((2, 9, 3))).float()
    A = torch.from_numpy(rng.standard_normal((3, 3)))
    got = _hardmax.hardmax_step(z, alpha=0.5, A=A)
    monkeypatch.setattr(attention, "SCREEN_MIN_D", 1 << 30)
    want = _hardmax.hardmax_step(z, alpha=0.5, A=A)
    assert torch.equal(got.tokens, want.tokens) and torch.equal(got.leader, want.leader)

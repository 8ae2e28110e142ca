"""The compiled planar hardmax kernel (d = 2) against the dense rule and the naive loop, bit for bit.

The dense rule is the torch path of :func:`attndyn._hardmax.hardmax_step` (forced by requiring a
gradient); the naive loop is tests/core/naive.py (plain Python floats). All three round the
scores the same way (``attention.scores(..., exact=True)``), so follow sets, leaders and new
tokens must be *equal*, not close — ties included.
"""

from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import attndyn
from attndyn import _kernels, _planar_run, attention
from attndyn._hardmax import hardmax_step

from . import naive


def kernel_and_dense(z, alpha=0.5, A=None, mask=None, tol=0.0):
    z = torch.as_tensor(z, dtype=torch.float64)
    A = None if A is None else torch.as_tensor(A, dtype=torch.float64)
    m = None if mask is None else torch.as_tensor(mask)
    fast = hardmax_step(z, alpha=alpha, A=A, mask=m, tol=tol, record_follow=True)
    dense = hardmax_step(z.clone().requires_grad_(True), alpha=alpha, A=A, mask=m, tol=tol, record_follow=True)
    return fast, dense


def assert_same_step(fast, dense):
    assert torch.equal(fast.follow, dense.follow)
    assert torch.equal(fast.leader, dense.leader)
    assert torch.equal(fast.tokens, dense.tokens.detach())
    assert torch.equal(fast.moved, dense.moved)
    assert torch.equal(fast.scale, dense.scale)


def naive_follow(z, A=None, mask=None):
    """C_i of every token by the naive loop's scores (plain floats, left to right)."""
    n = len(z)
    A = A or [[1.0, 0.0], [0.0, 1.0]]
    mask = mask or [True] * n
    out = np.zeros((n, n), dtype=bool)
    for i in range(n):
        if not mask[i]:
            continue
        w = [sum(A[r][c] * z[i][c] for c in range(2)) for r in range(2)]
        s = [sum(w[c] * z[j][c] for c in range(2)) if mask[j] else -float("inf") for j in range(n)]
        out[i] = np.array(s) == max(s)
    return out


@st.composite
def planar_batches(draw):
    """Dyadic planar tokens (exact ties everywhere), often with duplicated tokens, a mask and an A."""
    B = draw(st.integers(1, 3))
    n = draw(st.integers(1, 30))
    den = draw(st.sampled_from([1, 2, 4]))
    grid = st.integers(-4, 4)
    z = np.array(draw(st.lists(st.tuples(grid, grid), min_size=B * n, max_size=B * n)), dtype=float).reshape(B, n, 2)
    z /= den
    if draw(st.booleans()) and n > 1:  # duplicate a block of tokens
        k = draw(st.integers(1, n - 1))
        z[:, n - k :] = z[:, :k]
    mask = None
    if draw(st.booleans()):
        mask = np.array(draw(st.lists(st.booleans(), min_size=B * n, max_size=B * n))).reshape(B, n)
        mask[:, 0] = True
    A = None
    if draw(st.booleans()):
        A = np.array(draw(st.lists(st.integers(-3, 3), min_size=4, max_size=4)), dtype=float).reshape(2, 2) / 2
    return z, mask, A


@settings(max_examples=150, deadline=None)
@given(planar_batches(), st.sampled_from([0.5, 1.0, 3.0]))
def test_kernel_equals_dense_rule_with_dyadic_ties(batch, alpha):
    z, mask, A = batch
    fast, dense = kernel_and_dense(z, alpha=alpha, A=A, mask=mask)
    assert_same_step(fast, dense)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(9, 60), st.booleans())
def test_kernel_equals_naive_loop_on_random_tokens_with_duplicates(seed, n, spd):
    """Gaussian tokens (no rounding shortcut) with a third of them duplicated: several layers,
    every token bit-identical to the naive loop (the ties' means are summed in index order)."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, 2))
    z[: n // 3] = z[n - n // 3 :]
    A = None
    if spd:
        M = rng.standard_normal((2, 2))
        A = M @ M.T + np.eye(2)
    traj = attndyn.hardmax(z, alpha=0.7, layers=5, A=A, check_hypotheses=False)
    ref = naive.hardmax(z.tolist(), 0.7, 5, None if A is None else A.tolist())
    assert np.array_equal(traj.tokens.numpy(), np.array(ref))


def exact(w, p):
    return Fraction(w[0]) * Fraction(p[0]) + Fraction(w[1]) * Fraction(p[1])


def fma_first(w, p):  # fma(w_1, p_1, w_0 p_0), as a BLAS kernel may round it
    return float(Fraction(w[1]) * Fraction(p[1]) + Fraction(w[0] * p[0]))


def fma_second(w, p):  # fma(w_0, p_0, w_1 p_1)
    return float(Fraction(w[0]) * Fraction(p[0]) + Fraction(w[1] * p[1]))


def test_a_tie_made_by_rounding_is_a_tie_everywhere():
    """Two hull vertices whose exact scores differ but whose rounded scores (product, product,
    sum) are equal: the dense rule counts both, so must the kernel. Exact arithmetic or a fused
    multiply-add (in either order) separates them: this test fails for any other rounding."""
    rng = np.random.default_rng(7)
    for _ in range(100_000):
        w = np.array([0.05, 0.05]) + 0.01 * rng.random(2)  # the query, deep inside
        a = np.array([2.0, 2.0]) + rng.random(2)
        b = a + 1e-3 * np.array([w[1], -w[0]]) + 1e-15 * rng.standard_normal(2)  # nearly the same score
        sa, sb = w[0] * a[0] + w[1] * a[1], w[0] * b[0] + w[1] * b[1]
        if sa == sb and all(f(w, a) != f(w, b) for f in (exact, fma_first, fma_second)):
            break
    else:  # pragma: no cover - the search succeeds within a few hundred draws
        pytest.fail("no rounding tie found")
    inner = 0.1 * rng.standard_normal((12, 2))  # interior tokens: the kernel takes its candidate path
    z = np.vstack([a, b, w, inner, -a - 1.0, np.array([3.5, -3.5]), np.array([-3.5, 3.5])])
    fast, dense = kernel_and_dense(z[None])
    assert_same_step(fast, dense)
    assert fast.follow[0, 2].nonzero().flatten().tolist() == [0, 1]  # the query follows both
    assert np.array_equal(fast.follow[0].numpy(), naive_follow(z.tolist()))


@pytest.mark.parametrize("factor", [1e-160, 1e-100, 1e100, 1e150])
def test_tiny_and_huge_coordinates_follow_the_dense_rule(factor):
    """Where scores underflow (to subnormals or 0, making ties) or overflow, the kernel compares
    with every token and still agrees with the dense rule."""
    rng = np.random.default_rng(1)
    z = rng.standard_normal((4, 20, 2)) * factor
    z[:, 3] *= 1e-200 if factor > 1 else 1.0  # a query with tiny A z_i among normal tokens
    fast, dense = kernel_and_dense(z)
    assert_same_step(fast, dense)


def test_zero_query_follows_every_token():
    z = np.array([[0.0, 0.0]] + [[np.cos(t), np.sin(t)] for t in np.linspace(0, 6, 12)])
    fast, dense = kernel_and_dense(z[None])
    assert_same_step(fast, dense)
    assert bool(fast.follow[0, 0].all())


@pytest.mark.parametrize("tol", [1e-3, 0.5])
def test_positive_tolerance_follows_the_dense_rule(tol):
    rng = np.random.default_rng(2)
    z = rng.integers(-8, 9, size=(6, 25, 2)) / 8
    fast, dense = kernel_and_dense(z, tol=tol)
    assert torch.equal(fast.follow, dense.follow)
    assert torch.equal(fast.leader, dense.leader)
    torch.testing.assert_close(fast.tokens, dense.tokens.detach(), rtol=0, atol=1e-15)


def test_collinear_and_coincident_tokens():
    """Degenerate hulls (a segment, a point) fall back to comparing with every token."""
    line = np.stack([np.linspace(-1, 1, 15), 0.5 * np.linspace(-1, 1, 15)], axis=1)
    point = np.ones((15, 2))
    fast, dense = kernel_and_dense(np.stack([line, point]))
    assert_same_step(fast, dense)


def test_threads_give_the_same_bits(monkeypatch):
    rng = np.random.default_rng(3)
    z = torch.from_numpy(rng.integers(-4, 5, size=(50, 30, 2)) / 4)
    mask = torch.from_numpy(rng.random((50, 30)) > 0.1)
    one = hardmax_step(z, alpha=0.5, mask=mask, record_follow=True)
    monkeypatch.setattr(_kernels, "PARALLEL_MIN_WORK", 0)  # forces the threaded path
    assert _kernels.threads_for(50, 30, 2) >= 1
    many = hardmax_step(z, alpha=0.5, mask=mask, record_follow=True)
    assert_same_step(one, many)


def test_thread_rule_keeps_small_problems_on_one_thread():
    assert _kernels.threads_for(1, 40, 2) == 1
    assert _kernels.threads_for(100, 40, 2) == 1
    assert _kernels.threads_for(10, 40, 3) == 1
    big = _kernels.threads_for(3000, 128, 2)
    assert big == min(3000, _kernels.numba.get_num_threads())


def test_exact_scores_match_plain_rounding_and_autograd():
    rng = np.random.default_rng(4)
    x = torch.from_numpy(rng.standard_normal((2, 7, 3)))
    A = torch.from_numpy(rng.standard_normal((3, 3)))
    xs, As = x.numpy(), A.numpy()
    ref = np.empty((2, 7, 7))
    for b in range(2):
        for i in range(7):
            w = [sum(As[k, l] * xs[b, i, l] for l in range(3)) for k in range(3)]
            for j in range(7):
                ref[b, i, j] = sum(w[k] * xs[b, j, k] for k in range(3))
    assert np.array_equal(attention.scores(x, A, exact=True).numpy(), ref)
    buf = torch.empty(200, dtype=torch.float64)
    assert np.array_equal(attention.scores(x, A, exact=True, out=buf).numpy(), ref)
    xg = x.clone().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda t: attention.scores(t, A, exact=True), (xg,))


def layers_with(z, mask, A, memo, layers=4):
    """``layers`` layers of the planar kernel from z, a memo carried through them (or a fresh one each layer)."""
    B, n, _ = z.shape
    A = np.eye(2) if A is None else A
    mask = np.ones((B, n), np.bool_) if mask is None else mask
    seen = []
    for _ in range(layers):
        out, lead, moved, scale = np.empty_like(z), np.empty((B, n), np.bool_), np.empty(B), np.empty(B)
        follow = np.zeros((1, 1, 1), np.bool_)
        m = _kernels.planar_memo(B) if memo is None else memo
        _planar_run.hardmax_layer_2d(z, A, mask, 1 / 3, 0.0, out, lead, follow, False, moved, scale, -1, None, m)
        seen.append((out, lead, moved, scale))
        z = out
    return seen


@settings(max_examples=100, deadline=None)
@given(planar_batches(), st.integers(0, 2**32 - 1))
def test_polygons_carried_from_layer_to_layer_change_no_bit(batch, seed):
    """The planar kernel keeps each sequence's inscribed polygon for the next layer (planar_memo): the same bits
    as a polygon found afresh at every layer, and as a memo left by another batch (stale slots and coordinates)."""
    z, mask, A = batch
    fresh = layers_with(z, mask, A, None)
    carried = layers_with(z, mask, A, _kernels.planar_memo(z.shape[0]))
    stale = _kernels.planar_memo(z.shape[0])
    other = np.random.default_rng(seed).standard_normal(z.shape)
    layers_with(other, None, None, stale, layers=1)
    assert (stale[0][:, 8] >= 3).any() or z.shape[1] <= 8  # the other batch left polygons behind
    for got in (carried, layers_with(z, mask, A, stale)):
        for a, b in zip(fresh, got):
            for x, y in zip(a, b):
                assert np.array_equal(x, y)


def test_a_carried_polygon_is_convex_with_token_vertices():
    """After each layer the memo holds, per sequence, a polygon on tokens of that layer (slots and coordinates)
    that turns left at every corner: what makes it inscribed whatever the layer after does."""
    state = np.random.default_rng(7).standard_normal((20, 64, 2))
    memo = _kernels.planar_memo(20)
    for _ in range(4):
        ((out, *_),) = layers_with(state, None, None, memo, layers=1)
        pv, pf = memo
        assert (pv[:, 8] >= 3).all()
        for b in range(20):
            h, v = pv[b, 8], pv[b, : pv[b, 8]]
            assert np.array_equal(pf[b, :h], state[b, v, 0]) and np.array_equal(pf[b, 8 : 8 + h], state[b, v, 1])
            p = state[b, v]
            d1, d2 = np.roll(p, -1, axis=0) - p, np.roll(p, -2, axis=0) - np.roll(p, -1, axis=0)
            assert (d1[:, 0] * d2[:, 1] - d1[:, 1] * d2[:, 0] > 0).all()
        state = out

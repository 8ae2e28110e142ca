"""The compiled d >= 3 kernel (blocks of queries, one maximiser found by counting) against the naive loop."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import attndyn
from attndyn._hardmax import hardmax_step

from . import naive


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 23), st.sampled_from([3, 5]), st.booleans())
def test_dense_kernel_equals_naive_loop_with_duplicates(seed, n, d, spd):
    """n not a multiple of the query block, duplicated tokens (exact ties), several layers: every bit."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, d))
    z[: n // 3] = z[n - n // 3 :]
    A = None
    if spd:
        M = rng.standard_normal((d, d))
        A = M @ M.T + np.eye(d)
    traj = attndyn.hardmax(z, alpha=0.7, layers=4, A=A, check_hypotheses=False)
    ref = naive.hardmax(z.tolist(), 0.7, 4, None if A is None else A.tolist())
    assert np.array_equal(traj.tokens.numpy(), np.array(ref))


@pytest.mark.parametrize("d", [3, 7])
def test_dense_kernel_follow_sets_and_tolerance_match_the_dense_rule(d):
    rng = np.random.default_rng(d)
    z = torch.from_numpy(rng.integers(-2, 3, size=(9, 13, d)) / 2)
    mask = torch.from_numpy(rng.random((9, 13)) > 0.2)
    mask[:, 0] = True
    for tol in (0.0, 0.3):
        fast = hardmax_step(z, alpha=0.5, mask=mask, tol=tol, record_follow=True)
        dense = hardmax_step(z.clone().requires_grad_(True), alpha=0.5, mask=mask, tol=tol, record_follow=True)
        assert torch.equal(fast.follow, dense.follow)
        assert torch.equal(fast.leader, dense.leader)
        assert torch.equal(fast.tokens, dense.tokens.detach())


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 13), st.integers(1, 19))
def test_score_rows_are_the_left_to_right_sums(seed, d, m):
    """Four coordinates a pass (_score_rows) add in the dense rule's order: every score the same bits as the plain
    sum 0.0 + q_0 x_0 + ... + q_{d-1} x_{d-1}, with magnitudes spread over 2^+-40 so that any other order rounds
    apart, and the sign of a zero sum as that order gives it. The coordinates past d (padded(d)) are 0 in q and any
    finite number in the keys: they add nothing."""
    from attndyn._kernels import QB, _score_rows, padded

    rng = np.random.default_rng(seed)
    D = padded(d)
    assert D == (d + 1 if d % 4 == 3 else d)
    keys = rng.standard_normal((D, m)) * 2.0 ** rng.integers(-40, 41, (D, m))  # rows past d: finite padding
    q = np.zeros((QB, D))
    q[:, :d] = rng.standard_normal((QB, d)) * 2.0 ** rng.integers(-40, 41, (QB, d))
    keys[:d, rng.random(m) < 0.3] = 0.0  # zero keys: every product of q's first row is -0.0, the sum is +0.0
    q[0, :d] = -np.abs(q[0, :d])
    S = np.full((QB, m + 3), np.nan)
    _score_rows(keys, q, S, m)
    for r in range(QB):
        for t in range(m):
            s = 0.0
            for k in range(d):
                s += float(q[r, k]) * float(keys[k, t])
            assert S[r, t] == s, (r, t)
            assert math.copysign(1.0, S[r, t]) == math.copysign(1.0, s)
    assert np.isnan(S[:, m:]).all()  # keys past mk untouched


@pytest.mark.parametrize("d", [3, 7, 8, 9, 13])
def test_dense_kernel_margins_are_the_naive_margins_bit_for_bit(d):
    """Every layer-0 leader's margin (its score minus the best rival's) as the naive loop sums it, bit for bit:
    scores of tokens spread over 2^+-20 round apart under any other order of the sum (d = 3, 7: a zero coordinate
    padded in, see padded)."""
    rng = np.random.default_rng(d)
    z = rng.standard_normal((40, d)) * 2.0 ** rng.integers(-20, 21, (40, d))
    M = rng.standard_normal((d, d))
    A = M @ M.T + np.eye(d)
    traj = attndyn.hardmax(z, alpha=0.5, layers=1, A=A, check_hypotheses=False)
    led = np.flatnonzero(traj.leader_since[0].numpy() == 0)
    assert len(led) >= 3
    for i in led:
        mu, _ = naive.leader_margin(z.tolist(), int(i), A.tolist())
        assert float(traj.leader_margin[0, i]) == mu, i


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_subnormal=True, width=64), max_size=40), st.integers(0, 40))
def test_rowmax_is_the_largest_double(values, m):
    """The row maximum over ordered keys of the doubles' bits (_rowmax) is the largest double of s[:m] (-inf for
    none): signs, infinities, subnormals, rows shorter than m of the buffer; the entries past m are not read."""
    from attndyn._kernels import _rowmax

    m = min(m, len(values))
    s = np.array(values + [np.inf], dtype=np.float64)  # an entry past m that must not count
    got = _rowmax(s, m, np.empty(8))
    assert got == (max(values[:m]) if m else -math.inf)
    if any(v == 0.0 and math.copysign(1.0, v) > 0 for v in values[:m]) and got == 0.0:
        assert math.copysign(1.0, got) == 1.0  # +0.0 over -0.0

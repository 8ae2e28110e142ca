"""The compiled d >= 3 kernel (blocks of queries, one maximiser found by counting) against the naive loop."""

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

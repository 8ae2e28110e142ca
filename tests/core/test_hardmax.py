"""Hardmax dynamics (hardmax paper eq. 1.1): exact cases, invariants, the naive oracle."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import attndyn
from attndyn import attention
from attndyn._hardmax import hardmax_step

from . import naive

pytestmark = pytest.mark.smoke  # part of the quick subset: pytest -m smoke

ALPHA = 0.5


def run(z, **kw):
    kw.setdefault("alpha", ALPHA)
    kw.setdefault("layers", 30)
    kw.setdefault("check_hypotheses", False)
    return attndyn.hardmax(z, **kw)


# ---- exact small cases ----------------------------------------------------------------------


def test_two_tokens_each_follows_the_one_with_larger_score():
    # <z1, z1> = 4 > <z1, z2> = 0 and <z2, z2> = 1 > <z2, z1> = 0: both are leaders, nothing moves.
    traj = run([[2.0, 0.0], [0.0, 1.0]], layers=5)
    assert torch.equal(traj.final_tokens, traj.initial_tokens)
    assert attndyn.leaders(traj).records() == [
        {"index": 0, "since_layer": 0, "margin": 4.0},  # <z1, z1 - z2> = 4
        {"index": 1, "since_layer": 0, "margin": 1.0},  # <z2, z2 - z1> = 1
    ]


def test_two_tokens_one_step_exact_value():
    # z2 = (1, 1) scores <z2, z1> = 2 > <z2, z2> = 2?  equal: tie, C_2 = {1, 2}
    z = torch.tensor([[[2.0, 0.0], [1.0, 1.0]]], dtype=torch.float64)
    res = hardmax_step(z, alpha=1.0)
    # token 0: scores 4 (self) vs 2 -> leader. token 1: scores 2 (to 0) and 2 (self): tie.
    assert res.leader.tolist() == [[True, False]]
    mean = (z[0, 0] + z[0, 1]) / 2
    expected = z[0, 1] + 0.5 * (mean - z[0, 1])
    assert torch.equal(res.tokens[0, 1], expected)


@pytest.mark.parametrize("k", [3, 4, 5, 7])
def test_regular_polygon_stays_put(k):
    ang = 2 * np.pi * np.arange(k) / k
    z = np.stack([np.cos(ang), np.sin(ang)], axis=1)
    traj = run(z, layers=10)
    torch.testing.assert_close(traj.final_tokens, torch.from_numpy(z), rtol=0, atol=1e-15)
    assert sorted(attndyn.leaders(traj).indices) == list(range(k))


def test_square_corners_and_interior_points_figure_2():
    corners = [[1, 1], [-1, 1], [-1, -1], [1, -1]]
    interior = [[0.3, 0.1], [-0.2, 0.5], [0.1, -0.6], [-0.5, -0.2], [0.05, 0.02]]
    traj = run(corners + interior, layers=80)
    assert sorted(attndyn.leaders(traj).indices) == [0, 1, 2, 3]
    report = attndyn.hardmax_theorem(traj)
    assert len(report.clusters) == 4
    centers = sorted(tuple(np.round(c.center, 6)) for c in report.clusters)
    assert centers == sorted(tuple(map(float, c)) for c in corners)
    assert report.holds and sorted(report.vertex_leaders) == [0, 1, 2, 3]


def test_duplicated_tokens_tie_exactly():
    z = [[1.0, 0.2], [1.0, 0.2], [-1.0, 0.5], [0.1, -1.0]]
    traj = run(z, layers=3, save=attndyn.SaveAt(follow=True))
    follow = traj.follow[0, 0]
    assert follow[0].tolist() == [True, True, False, False]  # ties with its copy, bit for bit
    assert not traj.leader_mask[0, 0, 0]  # a duplicated token is never alone in C_i
    assert torch.equal(traj.tokens[:, 0], traj.tokens[:, 1])  # copies move together forever


def test_matrix_A_changes_whom_a_token_follows_figure_1():
    z1 = [1.0, 0.0]
    z2, z3, z4 = [1.5, 0.5], [1.5, -0.5], [1.2, 1.5]
    z = torch.tensor([[z1, z2, z3, z4]], dtype=torch.float64)
    fid = attention.follow_sets(attention.scores(z))[0, 0]
    assert torch.nonzero(fid).flatten().tolist() == [1, 2]  # A = I: C_1 = {2, 3} (Fig. 1a)
    A = torch.tensor([[2.0, 1.0], [1.0, 1.0]], dtype=torch.float64)
    fa = attention.follow_sets(attention.scores(z, A))[0, 0]
    assert torch.nonzero(fa).flatten().tolist() == [3]  # A = [[2,1],[1,1]]: C_1 = {4} (Fig. 1b)


def test_emerging_leader_example():
    # Example 5.2-like: token 0 follows token 1 at layer 0 but leads from layer 1 on.
    z = [[1.0, 0.0], [1.2, 0.35], [-1.0, 0.1], [0.0, -1.0]]
    traj = run(z, alpha=1.0, layers=5)
    lead = dict(zip(attndyn.leaders(traj).indices, attndyn.leaders(traj).since))
    assert 1 in lead and lead[1] == 0
    s0 = attention.scores(torch.tensor([z], dtype=torch.float64))[0, 0]
    assert int(s0.argmax()) == 1  # not a leader at layer 0


# ---- differential test against the naive per-token loop -------------------------------------


@pytest.mark.parametrize("d", [1, 2, 3, 5])
@pytest.mark.parametrize("spd", [False, True])
def test_engine_matches_naive_loop(d, spd):
    rng = np.random.default_rng(d + 10 * spd)
    z = rng.integers(-4, 5, size=(6, 9, d)).astype(float) / 4  # dyadic: many exact ties
    A = None
    if spd:
        M = rng.integers(-2, 3, size=(d, d)).astype(float)
        A = (M @ M.T + d * np.eye(d)) / 4
    traj = run(z, layers=6, A=A)
    for b in range(z.shape[0]):
        ref = naive.hardmax(z[b].tolist(), ALPHA, 6, None if A is None else A.tolist())
        np.testing.assert_allclose(traj.tokens[:, b].numpy(), np.array(ref), rtol=0, atol=1e-12)


@pytest.mark.parametrize("d", [2, 3])
def test_kernel_and_dense_path_agree_with_ties_and_mask(d):
    rng = np.random.default_rng(3)
    z = torch.from_numpy(rng.integers(-3, 4, size=(40, 12, d)).astype(float) / 2)
    mask = torch.from_numpy(rng.random((40, 12)) > 0.2)
    mask[:, 0] = True
    fast = hardmax_step(z, alpha=0.7, mask=mask, record_follow=True)
    zg = z.clone().requires_grad_(True)  # forces the dense torch path
    dense = hardmax_step(zg, alpha=0.7, mask=mask, record_follow=True)
    assert torch.equal(fast.follow, dense.follow)
    assert torch.equal(fast.leader, dense.leader.cpu())
    torch.testing.assert_close(fast.tokens, dense.tokens.detach(), rtol=0, atol=1e-15)


@pytest.mark.parametrize("d", [1, 2, 3, 16])
@pytest.mark.parametrize("identity", [True, False])
def test_kernel_matches_dense_on_random_tokens(d, identity):
    """The compiled kernels (d = 2: hull candidates; other d: one score row at a time) against
    the torch path, with padding at random places."""
    g = torch.Generator().manual_seed(d)
    z = torch.randn(200, 40, d, dtype=torch.float64, generator=g)
    mask = torch.rand(200, 40, generator=g) > 0.3
    M = torch.randn(d, d, dtype=torch.float64, generator=g)
    A = None if identity else M @ M.T + d * torch.eye(d, dtype=torch.float64)
    fast = attndyn.hardmax(z, alpha=0.5, layers=8, A=A, mask=mask, check_hypotheses=False)
    dense = attndyn.hardmax(z.clone().requires_grad_(True), alpha=0.5, layers=8, A=A, mask=mask, check_hypotheses=False)
    assert torch.equal(fast.leader_since, dense.leader_since)
    torch.testing.assert_close(fast.ys, dense.ys.detach(), rtol=0, atol=1e-12)
    assert fast.stats.final_change == pytest.approx(dense.stats.final_change, rel=1e-9)


def test_mask_padding_neither_attends_nor_is_attended():
    rng = np.random.default_rng(1)
    real = rng.standard_normal((7, 3))
    pad = np.vstack([real, 100 * np.ones((3, 3))])  # huge padding would attract everyone
    mask = [True] * 7 + [False] * 3
    a = run(real, layers=10)
    b = run(pad, layers=10, mask=mask)
    torch.testing.assert_close(b.final_tokens[:7], a.final_tokens)
    torch.testing.assert_close(b.final_tokens[7:], torch.from_numpy(pad[7:]))  # padding stays
    assert set(attndyn.leaders(b).indices) <= set(range(7))


def test_chunked_dense_path_equals_unchunked(monkeypatch):
    z = torch.randn(10, 6, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(2)).requires_grad_(True)
    ref = run(z, layers=4)  # requires_grad: the torch path, which chunks
    monkeypatch.setattr(attention, "MAX_CHUNK_ENTRIES", 40)  # one sequence per chunk
    assert torch.equal(run(z, layers=4).ys, ref.ys)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=60), st.integers(1, 3000))
def test_ragged_chunks_cover_each_sequence_once_within_budget(lengths, budget):
    lengths = torch.tensor(lengths)
    old = attention.MAX_CHUNK_ENTRIES
    try:
        attention.MAX_CHUNK_ENTRIES = budget
        chunks = attention.ragged_chunks(lengths)
    finally:
        attention.MAX_CHUNK_ENTRIES = old
    seen = torch.cat([idx for idx, _ in chunks])
    assert sorted(seen.tolist()) == list(range(len(lengths)))  # every sequence exactly once
    for idx, L in chunks:
        assert L == max(1, int(lengths[idx].max()))  # a chunk spans its longest member
        assert len(idx) == 1 or len(idx) * L * L <= budget


def test_ragged_batch_equals_each_sequence_alone(monkeypatch):
    """Padding trimmed per chunk (d = 3, the dense path): each sequence as if run by itself."""
    rng = np.random.default_rng(5)
    n, B = 12, 9
    z = rng.integers(-3, 4, size=(B, n, 3)).astype(float) / 2  # dyadic: exact ties
    mask = np.zeros((B, n), dtype=bool)
    for b in range(B):
        real = rng.choice(n, size=rng.integers(1, n + 1), replace=False)  # holes, not just a prefix
        mask[b, real] = True
    z[~mask] = 50.0  # padding far out would attract everyone if it were attended
    monkeypatch.setattr(attention, "MAX_CHUNK_ENTRIES", 300)  # several chunks of different L
    batch = run(z, layers=5, mask=mask)
    for b in range(B):
        alone = run(z[b][mask[b]], layers=5)
        np.testing.assert_array_equal(batch.ys[:, b][:, mask[b]].numpy(), alone.ys[:, 0].numpy())
        np.testing.assert_array_equal(
            batch.ys[:, b][:, ~mask[b]].numpy(), np.broadcast_to(z[b][~mask[b]], (6, (~mask[b]).sum(), 3))
        )
    grad = run(torch.from_numpy(z).requires_grad_(True), layers=5, mask=mask)  # autograd path, same chunks
    np.testing.assert_array_equal(grad.ys.detach().numpy(), batch.ys.numpy())


# ---- invariants (property tests) -------------------------------------------------------------

# Tokens within the dynamic range hardmax accepts (attndyn._hardmax.check_dynamic_range): sizes 1e-6..10 or 0.
finite = st.one_of(st.just(0.0), st.floats(1e-6, 10), st.floats(-10, -1e-6))


@settings(max_examples=40, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(2, 8), st.integers(1, 3)), elements=finite), st.floats(0.05, 5.0))
def test_convex_hull_never_grows(z, alpha):
    """Each update is a convex combination, so every support value max_i <u, z_i> never increases."""
    traj = attndyn.hardmax(z, alpha=alpha, layers=5, check_hypotheses=False)
    rng = np.random.default_rng(0)
    U = rng.standard_normal((16, z.shape[1]))
    support = np.einsum("tnd,kd->tkn", traj.tokens.numpy(), U).max(axis=-1)  # (T, 16)
    scale = max(1.0, np.abs(z).max())
    assert np.all(np.diff(support, axis=0) <= 1e-12 * scale * np.abs(U).sum(axis=1).max())


@settings(max_examples=30, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(2, 8), st.integers(1, 3)), elements=finite), st.randoms())
def test_permuting_tokens_permutes_the_trajectory(z, rnd):
    perm = list(range(len(z)))
    rnd.shuffle(perm)
    a = attndyn.hardmax(z, alpha=0.5, layers=4, check_hypotheses=False)
    b = attndyn.hardmax(z[perm], alpha=0.5, layers=4, check_hypotheses=False)
    torch.testing.assert_close(b.ys, a.ys[:, :, perm], rtol=0, atol=1e-12)
    assert torch.equal(b.leader_since[0], a.leader_since[0, perm])


# ---- options, stats, gradients -------------------------------------------------------------


def test_save_every_and_summary_only():
    z = np.random.default_rng(0).standard_normal((5, 2))
    full = run(z, layers=10)
    every = run(z, layers=10, save=attndyn.SaveAt(every=4))
    summary = run(z, layers=10, save=attndyn.SaveAt(every=None))
    assert full.ts.tolist() == list(range(11))
    assert every.ts.tolist() == [0, 4, 8, 10]
    assert summary.ts.tolist() == [0, 10]
    assert torch.equal(summary.final_tokens, full.final_tokens)
    assert torch.equal(every.leader_since, full.leader_since)  # leaders are tracked at every layer


def test_stop_on_convergence_is_scale_invariant():
    z = np.array([[1.0, 1.0], [-1.0, 1.0], [0.0, -1.0], [0.1, 0.2]])
    a = run(z, layers=500, stop=attndyn.StopOnConvergence(rtol=1e-10))
    b = run(1000 * z, layers=500, stop=attndyn.StopOnConvergence(rtol=1e-10))
    assert a.stats.stop_reason == "converged" and a.stats.converged
    assert a.stats.steps == b.stats.steps < 500


def test_gradient_flows_to_tokens_and_A():
    z = torch.tensor([[1.0, 0.3], [-0.5, 1.0], [0.2, -0.8], [0.1, 0.1]], dtype=torch.float64, requires_grad=True)
    A = torch.eye(2, dtype=torch.float64, requires_grad=True)
    traj = attndyn.hardmax(z, alpha=0.5, layers=3, A=A)
    traj.final_tokens.sum().backward()
    assert z.grad is not None and torch.isfinite(z.grad).all() and z.grad.abs().sum() > 0
    # a piecewise-linear map: d(final)/d(z) matches finite differences away from ties
    eps = 1e-6
    zp = z.detach().clone()
    zp[0, 0] += eps
    fd = (attndyn.hardmax(zp, alpha=0.5, layers=3).final_tokens.sum() - traj.final_tokens.detach().sum()) / eps
    assert math.isclose(float(fd), float(z.grad[0, 0]), rel_tol=1e-5, abs_tol=1e-8)


def test_float32_runs_in_float32():
    traj = attndyn.hardmax(np.eye(3), alpha=1.0, layers=2, dtype=torch.float32)
    assert traj.final_tokens.dtype == torch.float32
    assert torch.get_default_dtype() == torch.float32  # the global default is never changed


# ---- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "tokens, kw, match",
    [
        ([[1.0, float("nan")]], {}, "contains NaN"),
        ([[1.0, float("inf")]], {}, "contains inf"),
        ([1.0, 2.0], {}, r"shape \(n, d\)"),
        (np.zeros((0, 2)), {}, "empty"),
        ([[1.0, 0.0]], {"alpha": 0.0}, "alpha must be a positive"),
        ([[1.0, 0.0]], {"alpha": -1.0}, "alpha must be a positive"),
        ([[1.0, 0.0]], {"layers": -1}, "layers must be an integer"),
        ([[1.0, 0.0]], {"A": np.eye(3)}, "dimension d=2"),
        ([[1.0, 0.0]], {"A": np.ones((2, 3))}, "last axis must be 2|must be square"),
        ([[1.0, 0.0]], {"A": np.ones((3, 2))}, "must be square"),
        ([[1.0, 0.0]], {"mask": [False]}, "no real token"),
        # the shapes said are those given (not after the library's own reshaping)
        (np.array(2.0), {}, r"shape \(n, d\) .*got shape \(\)$"),
        (np.zeros((3, 2)), {"mask": [[True, False]]}, r"mask must have shape \(3,\) .*got \(1, 2\)$"),
        (np.zeros((3, 2)), {"mask": [True, False]}, r"mask must have shape \(3,\) .*got \(2,\)$"),
        ([["a", "b"]], {}, "array of numbers"),
        ([[1.0, 0.0]], {"save": "all"}, "SaveAt"),
    ],
)
def test_bad_input_names_the_problem(tokens, kw, match):
    kw.setdefault("alpha", 0.5)
    kw.setdefault("layers", 2)
    with pytest.raises(attndyn.InputError, match=match):
        attndyn.hardmax(tokens, **kw)


def test_outside_hypotheses_warns_and_runs():
    with pytest.warns(attndyn.HypothesisWarning, match="not symmetric positive definite"):
        attndyn.hardmax([[1.0, 0.0], [0.0, 1.0]], alpha=0.5, layers=2, A=[[1.0, 2.0], [0.0, 1.0]])
    with pytest.warns(attndyn.HypothesisWarning, match="repeated"):
        traj = attndyn.hardmax([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]], alpha=0.5, layers=2)
    assert traj.stats.steps == 2
    with pytest.warns(attndyn.HypothesisWarning, match="zero"):
        attndyn.hardmax([[0.0, 0.0], [0.0, 1.0]], alpha=0.5, layers=2)


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, 4),
    st.integers(1, 9),
    st.integers(1, 3),
    st.sampled_from([torch.float64, torch.float32]),
    st.booleans(),
    st.data(),
)
def test_token_checks_match_pairwise_comparison(B, n, d, dtype, threads, data):
    """The warnings' compiled pass (a hash table, exact comparison along its probe chains) against every pair
    and every token: values from a tiny set so that repeats, zero tokens, -0.0 beside 0.0, and repeats and zeros
    in padding occur; one block and blocks shared by threads."""
    from attndyn._distinct import token_flags
    from attndyn._hardmax import _token_flags

    vals = st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, 3.0])
    z = torch.tensor(data.draw(st.lists(vals, min_size=B * n * d, max_size=B * n * d)), dtype=dtype).reshape(B, n, d)
    real = torch.tensor(data.draw(st.lists(st.booleans(), min_size=B * n, max_size=B * n))).reshape(B, n)
    repeated = [
        any(bool((z[b, i] == z[b, j]).all()) for i in range(n) for j in range(i) if real[b, i] and real[b, j])
        for b in range(B)
    ]
    zero = [any(bool((z[b, i] == 0).all()) for i in range(n) if real[b, i]) for b in range(B)]
    got = token_flags(z.double().numpy(), real.numpy(), 2 if threads else 1)
    assert got[0].tolist() == zero and got[1].tolist() == repeated
    assert _token_flags(z, real) == (any(zero), any(repeated))


def test_token_checks_find_every_repeat_along_long_probe_chains():
    """Sequence b holds 600 distinct tokens and, last, a copy of token b: each copy must be found wherever its
    original sits in the table, also when other tokens took its first slot (the chain walked to the end); tokens
    that differ only in their last bits, and a copy that is -0.0 where its original is 0.0."""
    from attndyn._distinct import token_flags

    x = np.random.default_rng(5).standard_normal((600, 2))
    x[:200, 0] = 1.0 + np.arange(200) * np.finfo(float).eps  # the last bits only
    x[:200, 1] = 0.0
    z = np.concatenate([np.broadcast_to(x, (600, 600, 2)), x[:, None, :]], axis=1)
    z[:200, -1, 1] = -0.0
    real = np.ones(z.shape[:2], dtype=bool)
    assert token_flags(z[:, :600], real[:, :600])[1].tolist() == [False] * 600
    for blocks in (1, 2):
        assert token_flags(z, real, blocks)[1].tolist() == [True] * 600
    real[:, -1] = False  # the copy is padding
    assert token_flags(z, real)[1].tolist() == [False] * 600


def test_the_kernels_read_one_mask_type_given_or_not():
    """numba compiles each array type apart, and a variant of the planar run kernel costs about a minute on its
    first call: the mask the kernels read has one type with no mask, a torch mask, a numpy-backed mask and a
    strided one (a read-only default beside a writable mask once compiled the run kernel twice), and making it
    read-only leaves the caller's array writable."""
    import numba

    from attndyn._hardmax import _kernel_mask

    given = torch.ones(6, 10, dtype=torch.bool)
    strided = torch.ones(6, 20, dtype=torch.bool)[:, ::2]
    arrays = [_kernel_mask(None, 6, 10), _kernel_mask(given, 6, 10), _kernel_mask(strided, 6, 10)]
    assert {str(numba.typeof(a)) for a in arrays} == {str(numba.typeof(arrays[0]))}
    assert not arrays[0].flags.writeable
    given[0, 0] = False  # the caller's tensor (and its numpy view) is still writable
    assert given.numpy().flags.writeable and not arrays[1][0, 0]


def test_save_options_check_themselves():
    with pytest.raises(attndyn.InputError, match="every"):
        attndyn.SaveAt(every=0)
    with pytest.raises(attndyn.InputError, match="rtol"):
        attndyn.StopOnConvergence(rtol=-1)


def test_hardmax_mean_equals_weights_times_tokens():
    rng = np.random.default_rng(4)
    z = torch.from_numpy(rng.integers(-2, 3, size=(5, 7, 3)).astype(float))
    mask = torch.from_numpy(rng.random((5, 7)) > 0.3)
    mask[:, 0] = True
    s = attention.scores(z)
    for tol in (0.0, 1.5):
        mean, follow, count = attention.hardmax_mean(s, z, mask, tol=tol)
        w = attention.hardmax_weights(s, mask, tol=tol)
        torch.testing.assert_close(mean, attention.aggregate(w, z))
        assert torch.equal(follow, (w > 0) & mask[:, :, None])
        assert torch.equal(count[..., 0], follow.sum(-1).int())
        scratch = s.clone()
        again = attention.hardmax_mean(scratch, z, mask, tol=tol, overwrite_s=True)
        for x, y in zip(again, (mean, follow, count)):
            assert torch.equal(x, y)
        assert torch.equal(scratch, s.masked_fill(~mask[:, None, :], float("-inf")))  # masked in place


@pytest.mark.parametrize(
    ("z", "kw", "match"),
    [
        (torch.zeros(3, 2, dtype=torch.float64), {}, r"z must be a floating-point torch tensor of shape \(B, n, d\)"),
        ([[[1.0, 0.0]]], {}, "got list"),
        (torch.zeros(1, 3, 2), {"mask": torch.tensor([True, True, False])}, r"mask must be a bool torch tensor"),
        (torch.zeros(1, 3, 2), {"alpha": -1.0}, "alpha must be a positive"),
        (torch.zeros(1, 3, 2), {"A": torch.eye(3)}, r"A must be a \(2, 2\) torch tensor"),
        (torch.zeros(1, 3, 2), {"tol": float("nan")}, "tol must be a non-negative"),
    ],
)
def test_hardmax_step_names_bad_arguments(z, kw, match):
    kw.setdefault("alpha", 1.0)
    with pytest.raises(attndyn.InputError, match=match):
        attndyn.hardmax_step(z, **kw)


def test_follow_graph_and_matrix_name_an_index_out_of_range():
    traj = attndyn.hardmax([[1.0, 0.0], [0.0, 1.0], [0.5, 0.2]], alpha=0.5, layers=3, save=attndyn.SaveAt(follow=True))
    assert attndyn.follow_graph(traj, -1).tolist() == attndyn.follow_graph(traj, 3).tolist()
    with pytest.raises(attndyn.InputError, match=r"layer_index \(of the run's 4 kept states\) must be an integer"):
        attndyn.follow_graph(traj, 99)
    with pytest.raises(attndyn.InputError, match=r"index \(of the run's 4 kept states\)"):
        attndyn.analysis.follow_matrix(traj, 999)


def test_hardmax_attention_checks_its_settings_once_and_each_state_against_them():
    with pytest.raises(attndyn.InputError, match=r"A must be a square \(d, d\) torch tensor, got \(2, 3\)"):
        attndyn.HardmaxAttention(A=torch.ones(2, 3, dtype=torch.float64), alpha=1.0)
    with pytest.raises(attndyn.InputError, match="alpha must be a positive"):
        attndyn.HardmaxAttention(A=torch.eye(2, dtype=torch.float64), alpha=0.0)
    dyn = attndyn.HardmaxAttention(A=torch.eye(3, dtype=torch.float64), alpha=1.0)
    with pytest.raises(attndyn.InputError, match=r"A must be a \(2, 2\) torch tensor for tokens of dimension d = 2"):
        dyn.step(torch.zeros(1, 4, 2, dtype=torch.float64))


@settings(max_examples=60, deadline=None)
@given(
    shape=st.tuples(st.integers(1, 3), st.integers(1, 6), st.integers(1, 3)),
    where=st.integers(0, 10**6),
    bad=st.sampled_from([float("nan"), float("inf"), -float("inf")]),
    big=st.booleans(),
    dtype=st.sampled_from([torch.float64, torch.float32, torch.float16]),
)
def test_check_finite_on_the_cpu_is_exact(shape, where, bad, big, dtype):
    """One numpy sum decides the CPU case: a finite sum clears the tokens, anything else goes to the extremes.
    Finite tokens whose sum overflows pass; one NaN or infinity anywhere (among tokens that overflow or not, in
    a negated view too) is named."""
    from attndyn._validation import check_finite

    top = torch.finfo(dtype).max
    t = torch.full(shape, top if big else 1.0, dtype=dtype)  # big: the sum overflows, every token finite
    check_finite(t, "tokens")
    check_finite(torch._neg_view(t), "tokens")
    t.view(-1)[where % t.numel()] = bad
    with pytest.raises(attndyn.InputError, match="contains NaN" if math.isnan(bad) else "contains inf"):
        check_finite(t, "tokens")
    with pytest.raises(attndyn.InputError, match="contains"):
        check_finite(torch._neg_view(t), "tokens")

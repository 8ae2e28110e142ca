"""Phantom leaders: a leader is reported only when its margin beats the rounding bound.

In exact arithmetic a follower converging onto its leader never leads (attndyn.margins); in
floating point, once it sits within the last bits, rounding decides the comparison. These tests
check that such events are never reported as leaders, on every engine path, that genuine
leaders (layer 0 and emerging ones) still are, and the bound itself.
"""

import importlib
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import attndyn
from attndyn import margins

from . import naive

hardmax_module = importlib.import_module("attndyn._hardmax")


def random_instance(seed, d, n=None):
    rng = np.random.default_rng(seed)
    n = n or int(rng.integers(6, 14))
    M = rng.standard_normal((d, d))
    A = M @ M.T + 0.1 * np.eye(d)  # symmetric positive definite
    return rng.standard_normal((n, d)), A


def run(z, A, alpha, layers, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", attndyn.HypothesisWarning)
        return attndyn.hardmax(z, alpha=alpha, layers=layers, A=A, **kw)


def test_phantom_leader_of_the_issue_is_a_rounding_event():
    # Seed 0 of the issue's sweep: token 6 used to "lead" from layer 53, a follower sitting on its
    # leader to within 1e-16 of the scale.
    rng = np.random.default_rng(0)
    n = rng.integers(6, 14)
    M = rng.standard_normal((2, 2))
    A = M @ M.T + 0.1 * np.eye(2)
    z = rng.standard_normal((n, 2))
    traj = run(z, A, 1.0, 120)
    lead = attndyn.leaders(traj)
    assert all(k <= 1 for k in lead.since)
    assert 6 not in lead.indices
    events = [ev for ev in lead.rounding if ev.index == 6]
    assert events and all(ev.margin <= ev.bound for ev in events)
    first = events[0].layer
    final = traj.ys[first, 0].numpy()
    gaps = np.linalg.norm(final - final[6], axis=1)
    gaps[6] = np.inf
    assert gaps.min() <= 1e-14 * np.abs(final).max()  # it coincides with another token


@pytest.fixture(params=["kernel", "torch"])
def engine(request, monkeypatch):
    if request.param == "torch":
        monkeypatch.setattr(hardmax_module, "_use_kernel", lambda *a: False)
    return request.param


@pytest.mark.parametrize("d", [2, 3, 5])
@pytest.mark.parametrize("alpha", [0.5, 1.0, 3.0])
def test_followers_never_become_leaders_over_500_layers(engine, d, alpha):
    for seed in range(6):
        z, A = random_instance(seed + 100 * d, d)
        traj = run(z, A, alpha, 500, save=attndyn.SaveAt(every=None))
        lead = attndyn.leaders(traj)
        # Leaders of a hardmax run with distinct tokens exist from layer 0, or emerge once the
        # tokens leave their initial places; never once everything has clustered.
        assert all(k <= 2 for k in lead.since), (seed, lead.records())
        assert all(mu > 0 for mu in lead.margins)


def test_engine_paths_and_plain_loop_report_the_same_leaders(monkeypatch):
    for seed in range(12):
        for d in (2, 3):
            z, A = random_instance(seed, d)
            kernel = attndyn.leaders(run(z, A, 1.0, 150))
            with monkeypatch.context() as m:
                m.setattr(hardmax_module, "_use_kernel", lambda *a: False)
                dense = attndyn.leaders(run(z, A, 1.0, 150))
            plain = naive.hardmax_leaders(z.tolist(), 1.0, 150, A.tolist())
            assert dict(zip(kernel.indices, kernel.since)) == plain
            assert dense.indices == kernel.indices and dense.since == kernel.since


def test_emerging_leader_is_still_found_with_its_margin():
    z = [[1.0, 0.0], [1.2, 0.35], [-1.0, 0.1], [0.0, -1.0]]
    lead = attndyn.leaders(run(z, None, 1.0, 30))
    since = dict(zip(lead.indices, lead.since))
    assert since[1] == 0
    assert lead.rounding == ()
    # A margin is a score difference of the positions at the layer the token first led.
    traj = run(z, None, 1.0, 30)
    for i, k, mu in zip(lead.indices, lead.since, lead.margins):
        zk = traj.ys[k, 0]
        s = zk @ zk[i]
        assert mu == pytest.approx(float(s[i] - torch.cat([s[:i], s[i + 1 :]]).max()), rel=1e-12)


def test_dyadic_ties_keep_their_exact_behaviour():
    # Duplicated and tied tokens follow each other exactly: no leader among them, no rounding event.
    z = [[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [-0.5, -0.5]]
    traj = run(z, None, 1.0, 20)
    lead = attndyn.leaders(traj)
    assert lead.indices == (2, 3) and lead.margins == (1.0, 1.0)  # <z2, z2 - z0> = 1, <z3, z3 - z0> = 1
    assert lead.rounding == ()


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), d=st.sampled_from([2, 3]), alpha=st.sampled_from([0.5, 1.0, 2.0]))
def test_every_leader_is_farther_from_every_token_than_the_bound(seed, d, alpha):
    z, A = random_instance(seed, d)
    traj = run(z, A, alpha, 200)
    lead = attndyn.leaders(traj)
    At = torch.from_numpy(A)
    for i, k, mu in zip(lead.indices, lead.since, lead.margins):
        zk = traj.ys[k, 0]
        _, bound = margins.leader_margins(zk[None], At, None, torch.tensor([0]), torch.tensor([i]))
        assert mu > float(bound[0])
        # |A z_i| |z_i - z_j| >= <A z_i, z_i - z_j> >= margin - rounding > 0 for every j != i.
        gap = (zk - zk[i]).norm(dim=1) * (At @ zk[i]).norm()
        gap[i] = torch.inf
        assert float(gap.min()) > float(bound[0])
    for ev in lead.rounding:
        assert ev.margin <= ev.bound


def test_bound_matches_a_direct_evaluation():
    rng = np.random.default_rng(5)
    z = torch.from_numpy(rng.standard_normal((2, 7, 3)))
    A = torch.from_numpy(rng.standard_normal((3, 3)))
    mask = torch.ones(2, 7, dtype=torch.bool)
    mask[1, 5:] = False
    b, i = torch.tensor([0, 1, 1]), torch.tensor([3, 0, 4])
    mu, bound = margins.leader_margins(z, A, mask, b, i)
    for p in range(3):
        real = mask[b[p]].tolist()
        ref_mu, ref_bound = naive.leader_margin(z[b[p]].tolist(), int(i[p]), A.tolist(), real)
        assert float(mu[p]) == pytest.approx(ref_mu, rel=1e-12, abs=1e-14)
        assert float(bound[p]) == pytest.approx(ref_bound, rel=1e-12)
    g = margins.gamma(7, torch.float64)
    assert g == pytest.approx(7 * 2.0**-53, rel=1e-14)
    assert margins.gamma(7, torch.float32) == pytest.approx(7 * 2.0**-24, rel=1e-5)


def test_lone_token_leads_with_infinite_margin():
    lead = attndyn.leaders(run([[1.0, 2.0]], None, 1.0, 3))
    assert lead.indices == (0,) and lead.margins == (float("inf"),)


def test_batch_selection_keeps_each_sequence_rounding_events():
    z0, A = random_instance(0, 2)  # seed 0 has a rounding event (above)
    z1 = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]])
    z = np.zeros((2, max(len(z0), 3), 2))
    mask = np.zeros(z.shape[:2], dtype=bool)
    z[0, : len(z0)], mask[0, : len(z0)] = z0, True
    z[1, :3], mask[1, :3] = z1, True
    traj = run(z, A, 1.0, 120, mask=mask)
    assert attndyn.leaders(traj, 0).rounding == attndyn.leaders(traj.sequence(0)).rounding
    assert attndyn.leaders(traj, 0).rounding
    assert attndyn.leaders(traj, 1).rounding == ()


@pytest.mark.parametrize("d", [2, 3])
def test_kernel_book_keeping_equals_the_torch_path_with_padding_and_rounding_events(monkeypatch, d):
    # The compiled kernels certify leaders themselves (attndyn._kernels, margins.LeaderBook); the
    # torch path calls margins.leader_margins. Same first layers, same rounding events, and margins
    # equal up to the order of a two-term sum (the torch path may fuse a multiply-add).
    seqs = [random_instance(seed, d)[0] for seed in range(8)]
    _, A = random_instance(0, d)
    n = max(len(s) for s in seqs)
    z = np.zeros((len(seqs), n, d))
    mask = np.zeros((len(seqs), n), dtype=bool)
    for b, s in enumerate(seqs):
        z[b, : len(s)] = s
        mask[b, : len(s)] = True
    kernel = run(z, A, 1.0, 200, mask=mask, save=attndyn.SaveAt(every=None))
    with monkeypatch.context() as m:
        m.setattr(hardmax_module, "_use_kernel", lambda *a: False)
        dense = run(z, A, 1.0, 200, mask=mask, save=attndyn.SaveAt(every=None))
    assert torch.equal(kernel.leader_since, dense.leader_since)
    assert torch.equal(kernel.rounding_at, dense.rounding_at)
    if d == 2:
        assert kernel.rounding_at.shape[0] > 0  # the instances hold phantom-leader events
    led = kernel.leader_since >= 0
    torch.testing.assert_close(kernel.leader_margin[led], dense.leader_margin[led], rtol=1e-12, atol=0)
    # An event's margin is itself rounding noise: the two agree to within the bound.
    km, kb = kernel.rounding_margin.unbind(1)
    dm, db = dense.rounding_margin.unbind(1)
    torch.testing.assert_close(kb, db, rtol=1e-12, atol=0)
    assert bool(((km - dm).abs() <= 2 * kb).all()) and bool((km <= kb).all()) and bool((dm <= db).all())
    assert torch.equal(kernel.leader_margin.isnan(), dense.leader_margin.isnan())


def test_serial_and_parallel_loops_agree_and_are_cached_apart(monkeypatch):
    # One loop compiled twice: numba's cache keys a build by bytecode and closure, not by parallel=, so each
    # variant closes over its own range (margins._pair_loop); a shared key would load the other's build.
    rng = np.random.default_rng(3)
    z = torch.from_numpy(rng.standard_normal((3, 40, 3)))
    A = torch.from_numpy(rng.standard_normal((3, 3)))
    b, i = torch.from_numpy(rng.integers(0, 3, 300)), torch.from_numpy(rng.integers(0, 40, 300))
    serial = margins.leader_margins(z, A, None, b, i)
    monkeypatch.setattr(margins, "_PARALLEL_PAIRS", 1)
    parallel = margins.leader_margins(z, A, None, b, i)
    assert all(torch.equal(s, p) for s, p in zip(serial, parallel))
    loops = (margins._margins_serial, margins._margins_parallel)
    assert loops[0].signatures == loops[1].signatures
    keys = {f._cache._index_key(f.signatures[0], f.targetctx.codegen()) for f in loops}
    assert len(keys) == 2


@pytest.mark.parametrize("grad", [False, True])  # the compiled kernel, and the torch path
def test_scores_in_the_subnormal_range_do_not_prove_a_tie_to_be_a_leader(grad):
    # tokens 0 and 1 tie exactly under this A (its rows 1 and 2 are equal, and both tokens' coordinates sum to the
    # same number): their scores are subnormal, and a margin of one subnormal was certified as a leader
    t = 4.283405830518434e-292
    A = np.array([[1.0, 0, 0], [0, t, t], [0, t, t]])
    Z = np.array([[0.0, 6.790228541743641e-13, 5.097983233761694e-13],
                  [0.0, 6.480977426534275e-13, 5.40723434897106e-13], [1.0, 0.0, 0.0]])  # fmt: skip
    z = torch.tensor(Z, requires_grad=grad)
    found = attndyn.leaders(attndyn.hardmax(z, alpha=1.0, layers=0, A=A, check_hypotheses=False))
    assert found.indices == (2,)
    mu, bound = margins.leader_margins(
        torch.tensor(Z)[None], torch.tensor(A), None, torch.tensor([0]), torch.tensor([0])
    )
    assert float(mu[0]) <= float(bound[0])  # within the bound: decided by rounding


@settings(max_examples=200, deadline=None)
@given(
    counts=st.lists(st.integers(1, 40), max_size=12),
    n=st.integers(1, 40),
    d=st.integers(1, 8),
    budget=st.integers(1, 5000),
)
def test_pair_groups_cover_every_pair_once_within_the_budget(counts, n, d, budget):
    seen, seq = [], 0
    for pairs, group in margins._pair_groups(counts, n, d, budget):
        seen.extend(range(pairs.start, pairs.stop))
        if group is None:  # keys gathered: at most budget entries unless one pair alone is more
            assert pairs.stop - pairs.start == 1 or (pairs.stop - pairs.start) * n * d <= budget
        else:  # one n x n product per sequence, each asked about n/8 times or more; whole sequences, in order
            assert group.start == seq or seq <= group.start
            assert (group.stop - group.start) * n * n <= budget
            assert all(c * 8 >= n for c in counts[group])
            assert pairs.stop - pairs.start == sum(counts[group])
            assert pairs.start == sum(counts[: group.start])
        seq = group.stop if group is not None else seq
    assert seen == list(range(sum(counts)))


@pytest.mark.parametrize("causal", [False, True])
def test_margins_by_products_equal_those_by_gathered_keys(monkeypatch, causal):
    """The torch path (float32 here) scores many queries of a sequence by one product: the same margins as each
    query's gathered keys, within the rounding bound, the same bounds and the same lone tokens."""
    rng = np.random.default_rng(3)
    z = torch.from_numpy(rng.standard_normal((5, 24, 3))).float()
    A = torch.from_numpy(rng.standard_normal((3, 3))).float()
    mask = torch.from_numpy(rng.random((5, 24)) > 0.2)
    mask[:, 0] = True
    mask[4, 1:] = False  # a lone token: no competitor, margin inf
    b, i = torch.nonzero(mask | (torch.arange(24) % 5 == 0), as_tuple=True)  # padding asked about too
    keep = torch.from_numpy(rng.random(b.numel()) < 0.8) | (b < 2) | (b == 4)
    b, i = b[keep], i[keep]
    shuffle = torch.from_numpy(rng.permutation(b.numel()))
    b, i = b[shuffle], i[shuffle]  # in no order: the groups sort them and put the answers back
    got = margins.leader_margins(z, A, mask, b, i, causal=causal)
    mu64, _ = margins.leader_margins(z.double(), A.double(), mask, b, i, causal=causal)  # the compiled loop
    fin = torch.isfinite(mu64)
    assert torch.equal(torch.isinf(got[0]), ~fin) and bool((~fin).any())
    assert bool(((got[0][fin].double() - mu64[fin]).abs() <= got[1][fin].double()).all())
    kinds = {g is None for _, g in margins._pair_groups(torch.bincount(b).tolist(), 24, 3, 1 << 20)}
    assert kinds == {False}  # every sequence here is asked about n/8 times or more: products only

    def gathered(counts, n, d, budget):
        for lo in range(0, sum(counts), 7):
            yield slice(lo, min(sum(counts), lo + 7)), None

    monkeypatch.setattr(margins, "_pair_groups", gathered)
    mu, bound = margins.leader_margins(z, A, mask, b, i, causal=causal)
    torch.testing.assert_close(got[1], bound, rtol=1e-5, atol=0.0)
    assert torch.equal(torch.isinf(got[0]), torch.isinf(mu))
    assert bool(((got[0][fin] - mu[fin]).abs() <= bound[fin]).all())

"""The constraint sets cut down to extreme queries and hull-vertex keys: the same optimum, bounded size."""

import time

import numpy as np
import pytest
from scipy.spatial import ConvexHull

from attndyn import InputError
from attndyn.control import choose_A, choose_A_for_clusters
from attndyn.control._constraints import follows_only, margins
from attndyn.control._invariant import invariant_preferences, layer_schedule, positions
from attndyn.control._reduce import REDUCE_ABOVE, hull_vertices, keys_for, lead_rows
from attndyn.control._solve import check_size, solve_margin


def test_hull_vertices_match_qhull_and_handle_flat_sets():
    rng = np.random.default_rng(0)
    for d in (2, 3):
        P = rng.standard_normal((50, d))
        assert hull_vertices(P).tolist() == sorted(ConvexHull(P).vertices.tolist())
    line = np.outer(np.linspace(-1, 1, 20), [1.0, 2.0, -1.0])  # collinear in 3-d: qhull alone would fail
    assert hull_vertices(line).tolist() == [0, 19]
    plane = np.c_[rng.standard_normal((30, 2)), np.zeros(30)]
    assert hull_vertices(plane).tolist() == sorted(ConvexHull(plane[:, :2]).vertices.tolist())
    assert len(hull_vertices(rng.standard_normal((30, 9)))) == 30  # above the dimension limit: everything


@pytest.mark.parametrize("seed", [0, 1])
def test_reduced_invariant_problem_has_the_full_problems_optimum(seed):
    """The margin over all (query, key) pairs equals the margin over the reduced pairs (reduce.py's proof),
    and the reduced problem's A meets every full constraint with that margin."""
    rng = np.random.default_rng(seed)
    n = REDUCE_ABOVE + 16
    Z = rng.standard_normal((n, 2))
    V = hull_vertices(Z)
    S = (int(V[0]), int(V[len(V) // 2]))
    owner = tuple(i if i in S else S[int(np.argmax(Z[list(S)] @ Z[i]))] for i in range(n))
    ks = layer_schedule(20, 0.5)
    reduced = invariant_preferences(Z, owner, 0.5, ks)
    full = [p for k in ks for i in range(n) for p in follows_only(positions(Z, owner, 0.5, k), i, owner[i], k)]
    assert len(reduced) < len(full) / 5
    a, b = solve_margin(reduced, 2, spd=False), solve_margin(full, 2, spd=False)
    assert a.margin == pytest.approx(b.margin, abs=1e-7)
    assert margins(a.A, full).min() >= a.margin - 1e-9


def test_small_problems_keep_every_pair():
    Z = np.random.default_rng(4).standard_normal((REDUCE_ABOVE, 2))
    assert keys_for(Z, 3) == [m for m in range(REDUCE_ABOVE) if m != 3] and len(lead_rows(Z, 0)) == REDUCE_ABOVE - 1


@pytest.mark.slow
def test_two_thousand_planar_tokens_one_target_finish():
    """Issue 26: 2,000 planar tokens, one target, took 9.4 GB and more than 170 s."""
    Z = np.random.default_rng(0).standard_normal((2000, 2))
    res = choose_A(Z, [int(hull_vertices(Z)[0])], spd=False, layers=20, rounds=2)
    assert res.verdict in ("reached", "layer0_only", "not_reached") and res.trajectory is not None
    assert max(len(r.added) for r in res.rounds) <= 2000


@pytest.mark.slow
def test_thirty_hull_vertex_targets_are_reached():
    """Issue 26: 300 tokens with their 30 hull vertices as targets (over 60 s and 3 GB before)."""
    rng = np.random.default_rng(1)
    a = np.linspace(0, 2 * np.pi, 30, endpoint=False)
    r, b = rng.uniform(0, 0.9, 270), rng.uniform(0, 2 * np.pi, 270)
    Z = np.r_[np.c_[np.cos(a), np.sin(a)], np.c_[r * np.cos(b), r * np.sin(b)]]
    res = choose_A(Z, list(range(30)), spd=False, layers=30)
    assert res.verdict == "reached" and res.leaders_found == tuple(range(30)), res.reason


def test_too_many_constraints_are_refused_at_once_with_the_estimate():
    """2,000 tokens on a circle are all hull vertices: nothing to reduce, refused before anything is built."""
    t = np.random.default_rng(2).uniform(0, 2 * np.pi, 2000)
    Z = np.c_[np.cos(t), np.sin(t)]
    start = time.perf_counter()
    with pytest.raises(
        InputError,
        match=r"would have \d+ constraints on a 2 x 2 matrix \(about .* s for the LP\), "
        r"over max_constraints = 200000; .* or raise max_constraints",
    ):
        choose_A(Z, [0], spd=False)
    with pytest.raises(InputError, match="over max_constraints = 100"):
        choose_A_for_clusters(Z[:20], [0] * 20, spd=False, max_constraints=100)
    assert time.perf_counter() - start < 5  # about 0.2 s on a quiet core
    with pytest.raises(InputError, match="max_constraints must be"):
        choose_A(Z[:5], [0], spd=False, max_constraints=0)


def test_memory_estimate_is_checked_too():
    with pytest.raises(InputError, match=r"constraints on a 64 x 64 matrix \(about .*GB.*\), over 1 GB"):
        check_size(100_000, 64, spd=False, max_memory=1e9)
    check_size(100, 2, spd=True)  # small problems pass

"""Analysis: polytopes, clusters, spectral conditions, theorem reports."""

import importlib

import numpy as np
import pytest

import attndyn
from attndyn.analysis import Polytope, attention_rank, boolean_distance, clusters, is_good_triple_with_multiplicity

pytestmark = pytest.mark.smoke  # part of the quick subset: pytest -m smoke


def test_polytope_vertices_qhull_and_lp_agree():
    rng = np.random.default_rng(0)
    pts = rng.standard_normal((30, 3))
    qh = Polytope.from_points(pts)
    lp = Polytope._lp_vertices(pts)
    assert qh.vertices == tuple(int(v) for v in lp)


def test_polytope_in_high_dimension_uses_lp():
    simplex = np.vstack([np.eye(8), np.zeros((1, 8))])
    pts = np.vstack([simplex, simplex.mean(axis=0, keepdims=True)])
    K = Polytope.from_points(pts)
    assert K.vertices == tuple(range(9))
    assert K.contains(pts[-1]) and not K.on_boundary(pts[-1])
    assert K.on_boundary(simplex[:2].mean(axis=0))
    assert not K.contains(-np.ones(8))


def test_flat_polytope_every_point_is_boundary():
    K = Polytope.from_points([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0.2, 0.2, 0]])
    assert K.dim == 2 and K.vertices == (0, 1, 2)
    assert K.on_boundary([0.2, 0.2, 0]) and not K.contains([0.2, 0.2, 0.1])


def _polytope_answers(K, probes):
    return K.vertices, K.dim, [(K.contains(x), K.on_boundary(x)) for x in probes]


@pytest.mark.parametrize("k", [-60, -30, -12, 12, 30, 60])
@pytest.mark.parametrize(
    "case",
    ["flat triangle in 3d", "segment in 1d", "7-simplex", "square in 2d", "8-simplex with its centre"],
)
def test_a_polytope_scaled_by_a_power_of_two_is_the_same_polytope(case, k):
    # The LP and hull solvers' tolerances are absolute: a triangle at 2**-30 had no vertex (and its membership
    # test aborted the process in scipy's nnls), a point inside a triangle at 2**60 was a vertex, and the
    # centre of a segment (d = 1) or of a 7-simplex at 2**20 was "on the boundary".
    simplex7 = np.vstack([np.zeros(7), np.eye(7)])
    simplex8 = np.vstack([np.eye(8), np.zeros((1, 8))])
    pts, probes = {
        "flat triangle in 3d": (
            [[1, 0, 0], [0, 1, 0], [0, 0, 1], [0.25, 0.25, 0.5]],
            [[0.25, 0.25, 0.5], [1, 1, 1], [0.5, 0.5, 0]],
        ),
        "segment in 1d": ([[-1], [0], [1]], [[0], [1], [2], [-0.5]]),
        "7-simplex": (simplex7, [simplex7.mean(0), simplex7[1], simplex7[:2].mean(0), -np.ones(7)]),
        "square in 2d": ([[0, 0], [1, 0], [0, 1], [1, 1], [0.5, 0.5]], [[0.5, 0.5], [1, 0.5], [2, 2]]),
        "8-simplex with its centre": (
            np.vstack([simplex8, simplex8.mean(0, keepdims=True)]),
            [simplex8.mean(0), simplex8[:2].mean(0)],
        ),
    }[case]
    pts, probes = np.asarray(pts, dtype=float), np.asarray(probes, dtype=float)
    at_one = _polytope_answers(Polytope.from_points(pts), probes)
    assert at_one == _polytope_answers(Polytope.from_points(pts * 2.0**k), probes * 2.0**k)
    interior = {"segment in 1d": 0, "7-simplex": 0, "square in 2d": 0, "8-simplex with its centre": 0}
    if case in interior:  # the first probe lies inside a full-dimensional K: contained, not on the boundary
        assert at_one[2][0] == (True, False)


def test_hardmax_theorem_reads_the_same_verdict_at_every_power_of_two():
    Z = np.array([[1.0, 0, 0], [0, 1, 0], [0, 0, 1], [0.5, 0.5, 0]])
    reps = [attndyn.hardmax_theorem(attndyn.hardmax(Z * 2.0**k, alpha=1.0, layers=100)) for k in (0, -30, -40, 60)]
    assert {r.verdict for r in reps} == {"holds"}
    assert {tuple(r.vertex_leaders) for r in reps} == {(0, 1, 2)}
    assert {r.limits_on_boundary for r in reps} == {True}
    line = np.array([[-1.0], [0.0], [1.0]])  # token 0 ties with all (scores 0): it stays inside the segment
    with pytest.warns(attndyn.HypothesisWarning, match="zero"):
        verdicts = {
            attndyn.hardmax_theorem(attndyn.hardmax(line * 2.0**k, alpha=1.0, layers=60)).verdict for k in (0, 30)
        }
    assert len(verdicts) == 1 and "not seen" in verdicts.pop()


def test_clusters_single_linkage_tolerance():
    pts = np.array([[0.0, 0], [1e-9, 0], [1, 1], [1, 1 + 1e-9], [5, 5]])
    cl = clusters(pts)
    assert [c.members for c in cl] == [(0, 1), (2, 3), (4,)]
    assert [c.members for c in clusters(pts, tol=2.0)] == [(0, 1, 2, 3), (4,)]
    assert [c.members for c in clusters(pts[2:], members=[7, 8, 9])] == [(7, 8), (9,)]


def test_spectral_definitions():
    I = np.eye(2)
    assert attndyn.is_good_triple(I, I, [[2, 1], [1, 2]])  # eigenvalues 3 > 1
    assert not attndyn.is_good_triple(I, I, [[0, -1], [1, 0]])  # complex pair
    assert not attndyn.is_good_triple(I, I, np.diag([1.0, -1.0]))  # |lambda_2| = lambda_1
    assert not attndyn.is_good_triple(I, I, I)  # not simple
    assert attndyn.is_paranormal(I) and attndyn.is_paranormal(np.diag([2.0, 2.0, 1.0]))
    assert not attndyn.is_paranormal(np.diag([-2.0, 1.0]))
    assert is_good_triple_with_multiplicity(I, I, I)
    assert not is_good_triple_with_multiplicity(I, -I, I)


def test_boolean_distance_and_rank():
    P = np.array([[1.0, 0, 0], [0, 1.0, 0], [0.5, 0.25, 0.25]])
    assert boolean_distance(P) == pytest.approx(1.0)
    assert boolean_distance(P, free_rows=1) == 0.0
    assert attention_rank(P) == 3 and attention_rank(np.ones((3, 3)) / 3) == 1


def test_theorem_report_on_random_configurations():
    rng = np.random.default_rng(1)
    holds = 0
    for _ in range(10):
        z = rng.standard_normal((12, 2))
        M = rng.standard_normal((2, 2))
        traj = attndyn.hardmax(z, alpha=1.0, layers=120, A=M @ M.T + 0.5 * np.eye(2))
        rep = attndyn.hardmax_theorem(traj)
        assert rep.hypotheses == {"nonzero_tokens": True, "distinct_tokens": True, "A_spd": True}
        holds += rep.holds
    assert holds == 10


def test_theorem_report_detects_a_run_that_has_not_converged():
    z = np.array([[1.0, 1], [-1, 1], [-1, -1], [1, -1], [0.3, 0.2]])
    rep = attndyn.hardmax_theorem(attndyn.hardmax(z, alpha=0.5, layers=3))
    assert not rep.converged and not rep.holds


def test_leaders_needs_a_sequence_for_batches():
    traj = attndyn.hardmax(np.random.default_rng(2).standard_normal((3, 4, 2)), alpha=0.5, layers=2)
    with pytest.raises(attndyn.InputError, match="pass sequence=b"):
        attndyn.leaders(traj)
    assert attndyn.leaders(traj, 1) == attndyn.leaders(traj.sequence(1))
    with pytest.raises(attndyn.InputError, match="did not keep follow sets"):
        attndyn.follow_graph(traj, 0, 0)


def test_softmax_geometry_requires_rescaled_for_polytope():
    traj = attndyn.softmax(np.random.default_rng(3).standard_normal((5, 2)), time=0.5)
    with pytest.raises(attndyn.InputError, match="rescaled=True"):
        attndyn.softmax_geometry(traj)


def test_repr_html_escapes():
    from dataclasses import replace

    traj = attndyn.hardmax([[1.0, 0.0], [0.0, 1.0]], alpha=0.5, layers=1)
    html = traj._repr_html_()
    assert "<table>" in html and "HardmaxTrajectory" in html
    # a message with markup is shown as text, not interpreted
    odd = replace(traj, stats=replace(traj.stats, message="<script>alert('x') & co</script>"))
    html = odd._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;alert(&#x27;x&#x27;) &amp; co&lt;/script&gt;" in html


def test_hyperplane_count_when_all_tokens_end_on_the_middle_hyperplane():
    """Tokens symmetric about the origin along phi_1 all end at coordinate 0: one hyperplane, not noise."""
    V = np.diag([1.0, 0.5])
    x = np.array([[0.0, 1.0], [0.0, -1.0], [0.0, 0.5]]) + np.array([[1e-12, 0], [-1e-12, 0], [0, 0]])
    traj = attndyn.softmax(x, time=8.0, V=V, rescaled=True)
    rep = attndyn.softmax_geometry(traj)
    assert rep.regime == "hyperplanes" and rep.measured["hyperplanes"] == 1 and rep.holds


def test_clusters_of_many_points_match_the_dense_tree(monkeypatch):
    clusters_module = importlib.import_module("attndyn.analysis._clusters")  # (the function shadows the module)

    rng = np.random.default_rng(0)
    centers = rng.standard_normal((7, 3)) * 5
    pts = centers[rng.integers(0, 7, 600)] + 1e-4 * rng.standard_normal((600, 3))
    pts[::50] += 3.0  # some loners
    dense = clusters_module.clusters(pts, tol=1e-2)
    monkeypatch.setattr(clusters_module, "DENSE_MAX_POINTS", 10)
    monkeypatch.setattr(clusters_module, "_CHUNK", 37)
    chunked = clusters_module.clusters(pts, tol=1e-2)
    assert [c.members for c in chunked] == [c.members for c in dense]
    np.testing.assert_allclose([c.center for c in chunked], [c.center for c in dense])


def test_clusters_are_scale_free_and_refuse_non_finite():
    clusters_module = importlib.import_module("attndyn.analysis._clusters")  # (the function shadows the module)

    pts = np.array([[0.0, 0.0], [1.0, 1.0], [1e-9, 0.0]])
    ref = [c.members for c in clusters_module.clusters(pts, tol=1e-6)]
    for k in (-1000, 1000):
        assert [c.members for c in clusters_module.clusters(pts * 2.0**k, tol=1e-6 * 2.0**k)] == ref
    with pytest.raises(attndyn.InputError, match="NaN or inf"):
        clusters_module.clusters([[0.0, np.inf]])


def test_two_identical_points_are_one_cluster_without_warning():
    # scipy would take a (2, 2) array of points with a zero diagonal for a distance matrix
    assert [c.members for c in clusters([[0.0, 0.0], [0.0, 0.0]])] == [(0, 1)]
    assert [c.members for c in clusters([[0.0, 1.0], [1.0, 0.0]], tol=0.5)] == [(0,), (1,)]


@pytest.mark.parametrize("members", [[5, 5], [-3, 99], [0.5, 1.0]])
def test_cluster_members_are_distinct_token_indices(members):
    with pytest.raises(attndyn.InputError, match=r"members (repeats a token index|must be token indices)"):
        clusters([[0.0, 0.0], [1.0, 1.0]], members=members)


@pytest.mark.parametrize(
    "fn, P, match",
    [(boolean_distance, np.stack([np.eye(3), np.ones((3, 3)) / 3]), r"one \(n, n\) attention matrix, got shape \(2, 3, 3\)"),
     (attention_rank, np.stack([np.eye(3), np.ones((3, 3)) / 3]), r"one \(n, n\) attention matrix, got shape \(2, 3, 3\)"),
     (boolean_distance, [[2.0, -1.0], [0.0, 5.0]], r"row-stochastic .* not scores"),  # was a "distance" of -2
     (attention_rank, np.ones((2, 3)), r"got shape \(2, 3\)"), (attention_rank, [[np.inf, 0.0], [0.0, 1.0]], "NaN or inf"),
     (boolean_distance, 0.5, r"got shape \(\)")],
)  # fmt: skip
def test_the_theorem_2_1_measures_take_one_attention_matrix(fn, P, match):
    with pytest.raises(attndyn.InputError, match=match):
        fn(P)


def test_the_theorem_2_1_measures_check_their_settings():
    P = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.9, 0.1, 0.0]])
    assert boolean_distance(P, free_rows=1) == pytest.approx(0.2)
    for bad in (-1, 1.5, True):
        with pytest.raises(attndyn.InputError, match=r"free_rows must be an integer >= 0"):
            boolean_distance(P, free_rows=bad)
    for bad in (-1.0, float("nan"), 1.0):
        with pytest.raises(attndyn.InputError, match=r"rtol must be a number in \[0, 1\)"):
            attention_rank(P, rtol=bad)

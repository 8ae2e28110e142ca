"""The softmax limit-geometry checks (analysis/geometry.py) and the collapse rate (analysis/collapse.py)."""

from __future__ import annotations

import ast
import inspect

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import attndyn
from attndyn import InputError, SaveAt
from attndyn.analysis import Polytope, collapse_decay, radius_decay, regime_of
from attndyn.analysis._collapse import COLLAPSE_EXPONENT, COLLAPSE_EXPONENT_ATOL
from attndyn.analysis._geometry import REGIMES

pytestmark = pytest.mark.smoke  # part of the quick subset: pytest -m smoke

TIMES = np.concatenate([[0.0], np.geomspace(0.5, 40.0, 30)])


@settings(max_examples=40, deadline=None)
@given(st.floats(-2.0, -0.02), st.floats(0.1, 10.0))
def test_radius_decay_recovers_the_exponent_of_a_power_law(p, c):
    assume(abs(abs(p - COLLAPSE_EXPONENT) - COLLAPSE_EXPONENT_ATOL) > 1e-6)  # not on the threshold itself
    r = np.concatenate([[c * 3], c * TIMES[1:] ** p])
    fit = radius_decay(TIMES, r)
    assert fit.exponent == pytest.approx(p, abs=1e-9)
    assert fit.fit_rms == pytest.approx(0.0, abs=1e-9)
    assert fit.fit_window == (float(TIMES[TIMES >= 10.0][0]), 40.0)
    assert fit.matches == (abs(p - COLLAPSE_EXPONENT) <= COLLAPSE_EXPONENT_ATOL)
    np.testing.assert_allclose(fit.fitted(TIMES[-3:]), r[-3:], rtol=1e-9)


def test_exponential_decay_and_a_stalled_radius_do_not_match_the_collapse_rate():
    assert radius_decay(TIMES, np.exp(-TIMES)).exponent < -5  # log r = -t: slope -t in log-log
    stalled = radius_decay(TIMES, 1.0 + np.exp(-TIMES))
    assert abs(stalled.exponent) < 1e-3 and not stalled.matches


def test_radius_decay_without_enough_points_or_at_the_origin():
    few = radius_decay([0.0, 1.0, 2.0], [1.0, 0.5, 0.4])
    assert few.exponent is None and not few.matches and np.isnan(few.fitted([1.0])).all()
    assert radius_decay([0.0, 1.0, 2.0], [1.0, 0.5, 0.0]).matches  # reached the origin exactly
    with pytest.raises(InputError, match=r"two equal, non-empty 1-d sequences, got \(2,\) and \(3,\)"):
        radius_decay([0.0, 1.0], [1.0, 0.5, 0.2])


def test_V_minus_identity_collapses_like_t_to_the_minus_one_half():
    """Table 1's hypotheses (Q^T K = I with Q = K orthogonal): the derived rate, within 0.05."""
    rng = np.random.default_rng(4)
    O = np.linalg.qr(rng.standard_normal((3, 3)))[0]
    x = rng.standard_normal((16, 3))
    traj = attndyn.softmax(x, time=40.0, Q=O, K=O, V=-np.eye(3), step=0.1, save=SaveAt(every=10))
    rep = attndyn.softmax_geometry(traj)
    assert rep.regime == "collapse" and rep.holds
    assert rep.measured["decay_exponent"] == pytest.approx(-0.5, abs=0.05)
    assert rep.measured["decay_exponent"] == collapse_decay(traj).exponent
    assert list(rep.measured["radius_at"]) == ["0", "2", "5", "10", "20", "40"]


def test_collapse_verdict_fails_when_the_cloud_stops_shrinking():
    """Q = 0: uniform attention, dx_i/dt = -mean(x): the mean dies out, the spread stays. Not a collapse."""
    x = np.random.default_rng(6).standard_normal((12, 2))
    traj = attndyn.softmax(x, time=20.0, Q=np.zeros((2, 2)), V=-np.eye(2), step=0.1, save=SaveAt(every=5))
    rep = attndyn.softmax_geometry(traj, regime="collapse")
    assert not rep.holds and not rep.measured["decay_matches"]
    assert abs(rep.measured["decay_exponent"]) < 0.05


def test_regime_of_each_row_of_table_1():
    eye2, eye3 = np.eye(2), np.eye(3)
    assert regime_of([[1.0]], [[1.0]], [[2.0]]) == "boolean"
    assert regime_of(eye2, eye2, -2 * eye2) == "collapse"
    assert regime_of(eye3, eye3, 3 * eye3) == "polytope"
    assert regime_of(eye2, eye2, np.diag([2.0, 1.0])) == "hyperplanes"
    assert regime_of(eye3, eye3, np.diag([1.0, 1.0, -0.5])) == "paranormal"
    assert regime_of(eye2, eye2, np.diag([-2.0, 1.0])) == "codimension"  # leading eigenvalue negative
    # not a good triple (<Q phi_1, K phi_1> < 0), but V = 2 Id on F = span(e_1), |1| < 2 on G: Definition 2
    assert regime_of(eye2, -eye2, np.diag([2.0, 1.0])) == "paranormal"
    assert set(REGIMES) == {"boolean", "collapse", "polytope", "hyperplanes", "paranormal", "codimension"}


def test_unknown_regime_and_head_out_of_range_are_refused():
    traj = attndyn.softmax(np.random.default_rng(0).standard_normal((5, 2)), time=0.5, rescaled=True)
    with pytest.raises(InputError, match=r"regime='vertices' is not one of boolean, collapse, polytope"):
        attndyn.softmax_geometry(traj, regime="vertices")
    with pytest.raises(InputError, match=r"head=1 is out of range for a run with 1 head\(s\); pass 0 <= head < 1"):
        attndyn.softmax_geometry(traj, head=1)


def test_a_multi_head_run_reports_which_head_it_reads():
    """Multi-head runs are not rescaled (eq. (4) is for one head): in d = 1, head 0 (V = 1) is Thm 2.1's
    Boolean regime and head 1 (V = -1/2) the collapse; each report names its head."""
    x = np.random.default_rng(1).standard_normal((8, 1))
    one = np.ones((2, 1, 1))
    V = np.array([[[1.0]], [[-0.5]]])
    traj = attndyn.softmax(x, time=3.0, Q=one, K=one, V=V, save=SaveAt(every=5, final_attention=True))
    first, second = attndyn.softmax_geometry(traj), attndyn.softmax_geometry(traj, head=1)
    assert (first.regime, first.head, first.heads) == ("boolean", 0, 2)
    assert (second.regime, second.head, second.heads) == ("collapse", 1, 2)
    assert "[head 1 of 2 only" in second.statement and "open problem (Section 6)" in second.statement
    assert second.record()["head"] == 1
    P = traj.attention_final[0, 0].numpy()  # (H, n, n): head 0's matrix is the one checked
    assert first.measured["boolean_distance_all_rows"] == attndyn.analysis.boolean_distance(P)
    unkept = attndyn.softmax(x, time=3.0, Q=one, K=one, V=V, save=SaveAt(every=5))  # P read off the final state
    assert attndyn.softmax_geometry(unkept).measured == pytest.approx(first.measured, rel=1e-12, abs=1e-15)
    single = attndyn.softmax(x, time=3.0)
    rep = attndyn.softmax_geometry(single)
    assert (rep.head, rep.heads) == (0, 1) and "head" not in rep.statement


def test_without_clustering_K_has_the_vertices_of_the_initial_hull():
    """The Table 1 bound on K's vertices can fail: a run too short to cluster keeps conv(z(0))."""
    x = np.random.default_rng(2).standard_normal((12, 3))
    short = attndyn.softmax(x, time=0.01, step=0.01, rescaled=True)
    rep = attndyn.softmax_geometry(short, regime="polytope")
    assert rep.measured["vertices"] == len(Polytope.from_points(x).vertices) > 0.75 * rep.measured["vertices"]
    long = attndyn.softmax(x, time=10.0, rescaled=True)
    assert attndyn.softmax_geometry(long).measured["vertices"] < rep.measured["vertices"]


def test_reproduce_has_no_theorem_4_1_check_of_its_own():
    from attndyn.reproduce import _softmax_experiments as softmax_experiments
    from attndyn.reproduce import _statistics as statistics

    assert not hasattr(statistics, "hyperplane_report")  # the alias is gone: softmax_geometry is the one check

    def imported(module):
        tree = ast.parse(inspect.getsource(module))
        return {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}

    assert "_statistics" not in imported(softmax_experiments)  # no import circle with reproduce._statistics
    assert "_softmax_experiments" in imported(statistics)


@pytest.mark.parametrize("rescaled, V", [(True, np.eye(2)), (True, np.diag([1.5, 0.5])), (False, np.eye(2))])
def test_the_engine_tracks_the_leaders_that_self_attending_defines(rescaled, V):
    """Differential: the leaders softmax() tracks during the run (strict peak of the scores) are the
    tokens whose final attention row peaks strictly on themselves, per analysis.self_attending."""
    x = np.random.default_rng(7).standard_normal((4, 10, 2))
    traj = attndyn.softmax(x, time=3.0, V=V, rescaled=rescaled, save=SaveAt(every=None, final_attention=True))
    for b in range(4):
        expected = attndyn.analysis.self_attending(traj.attention_final[b])
        assert sorted(attndyn.leaders(traj, b).indices) == np.nonzero(expected)[0].tolist()
    assert 0 < sum(len(attndyn.leaders(traj, b)) for b in range(4)) < 40


def test_self_attending_refuses_a_non_square_matrix():
    with pytest.raises(InputError, match=r"needs one square \(n, n\) matrix, got shape \(2, 3\)"):
        attndyn.analysis.self_attending(np.ones((2, 3)))


def test_collapse_without_enough_kept_states_is_judged_without_the_rate_and_says_so():
    x = np.random.default_rng(8).standard_normal((10, 2))
    traj = attndyn.softmax(x, time=12.0, V=-np.eye(2), save=SaveAt(every=None))  # first and last state only
    rep = attndyn.softmax_geometry(traj)
    assert rep.holds and rep.measured["decay_exponent"] is None and rep.measured["decay_matches"] is None
    assert "[rate not tested: fewer than 3 kept times after T/4" in rep.statement
    kept = attndyn.softmax(x, time=12.0, V=-np.eye(2), save=SaveAt(every=10))
    full = attndyn.softmax_geometry(kept)
    assert full.holds and full.measured["decay_matches"] is True and "rate not tested" not in full.statement


def test_the_collapse_rate_is_not_tested_on_identical_tokens():
    # C_0 = 0: the mean decays like e^(-t), and the t^(-1/2) law of the deviations has nothing to act on
    for x in ([[1.0, 0.5]], [[1.0, 0.5]] * 3):
        fit = collapse_decay(attndyn.softmax(x, time=20.0, V=-np.eye(2), save=SaveAt(every=10)))
        assert not fit.has_fit and fit.record()["decay_matches"] is None
        assert fit.untested.startswith("the tokens start identical (C_0 = 0)")


@pytest.mark.parametrize(
    "times, radius, match",
    [([0, 1, 2], [1, float("nan"), 1], "finite numbers >= 0"), ([0, 1, 2], [1, -1, 1], "finite numbers >= 0"),
     ([2, 1, 0], [1, 1, 1], "increasing order"), ([0, 1], [1, 2, 3], r"got \(2,\) and \(3,\)"),
     ([[0, 1]], [[1, 2]], "1-d sequences")],
)  # fmt: skip
def test_radius_decay_checks_its_input(times, radius, match):
    with pytest.raises(InputError, match=match):
        radius_decay(times, radius)
    with pytest.raises(InputError, match=r"fit_from must be a fraction of the run in \[0, 1\]"):
        radius_decay([0, 1, 2, 3], [1, 1, 1, 1], fit_from=2)


def test_a_jordan_block_at_the_top_is_not_a_good_triple_in_any_basis():
    # rounding splits the double eigenvalue by ~1e-8 (more than a fixed 1e-9 gap): left and right eigenvectors are
    # then nearly orthogonal, which tells it from a simple eigenvalue
    I3 = np.eye(3)
    rng = np.random.default_rng(0)
    J = np.array([[2.0, 1.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 0.5]])
    D = np.diag([2.0, 1.9, 0.5])
    for _ in range(200):
        S = rng.standard_normal((3, 3))
        V, W = S @ J @ np.linalg.inv(S), S @ D @ np.linalg.inv(S)
        assert not attndyn.analysis.is_good_triple(I3, I3, V) and not attndyn.analysis.is_good_triple(I3, I3, V * 1e-6)
        assert attndyn.analysis.is_good_triple(I3, I3, W)
    assert regime_of(I3, I3, S @ J @ np.linalg.inv(S)) != "hyperplanes"


def test_theorem_5_1_reads_f_in_a_real_basis_whatever_basis_v_comes_in():
    # V = diag(1, 1, -1/2) in a random basis: rounding can make the double eigenvalue a pair 1 +- 1e-14 i, whose
    # real eigen-coordinates are one column (a square read as a line, a token inside it "on the boundary")
    rng = np.random.default_rng(0)
    F = np.array([[1.0, 1.0], [-1.0, 1.0], [-1.0, -1.0], [1.0, -1.0], [0.3, 0.2]])
    for _ in range(100):
        S = rng.standard_normal((3, 3))
        V = S @ np.diag([1.0, 1.0, -0.5]) @ np.linalg.inv(S)
        x = (S @ np.hstack([F, rng.standard_normal((5, 1))]).T).T
        rep = attndyn.softmax_geometry(
            attndyn.softmax(x, time=1e-8, step=1e-8, V=V, rescaled=True), regime="paranormal"
        )
        assert rep.measured["vertices"] == 4 and not rep.measured_holds  # the fifth token is inside the square


def test_a_collapse_still_on_its_way_is_undecided_not_refuted():
    """Pass 6, M1: V = -I from tokens a quarter of the usual size shrinks at every kept time, but at T = 20 its
    radius is 0.57 of the start and its fitted exponent -0.27 (the t^(-1/2) regime starts later for a small C_0):
    "does NOT hold" then; undecided now, and the same tokens run to T = 400 hold with an exponent near -1/2."""
    x = 0.25 * np.random.default_rng(0).standard_normal((40, 2))
    short = attndyn.softmax(x, V=-np.eye(2), time=20.0, step=0.1, save=SaveAt(every=5))
    rep = attndyn.softmax_geometry(short, regime="collapse")
    assert rep.holds is None and rep.measured["monotone"] and not rep.measured_holds
    assert rep.verdict.startswith("undecided: the radius shrinks at every kept time") and "run longer" in rep.verdict
    long = attndyn.softmax(x, V=-np.eye(2), time=400.0, step=0.1, save=SaveAt(every=50))
    rep = attndyn.softmax_geometry(long, regime="collapse")
    assert rep.holds is True and abs(rep.measured["decay_exponent"] + 0.5) <= 0.1
    grow = attndyn.softmax(x, V=np.eye(2), time=2.0, step=0.1, save=SaveAt(every=5))  # a growing radius: decided
    rep = attndyn.softmax_geometry(grow, regime="collapse")
    assert rep.holds is False and not rep.measured["monotone"]


def test_a_summary_run_is_judged_by_its_last_step_not_by_its_whole_journey():
    """A run that keeps only its first and last states (SaveAt(every=None)) was always "not settled": the gate
    divided the whole journey from t = 0 by T. Its last step decides now, as for a run that kept one state."""
    x = np.random.default_rng(3).standard_normal((12, 3))
    kept = attndyn.softmax(x, time=15.0, step=0.05, rescaled=True, save=SaveAt(every=20))
    summary = attndyn.softmax(x, time=15.0, step=0.05, rescaled=True, save=SaveAt(every=None))
    assert len(summary.ts) == 2 and summary.stats.steps == 300
    assert attndyn.softmax_geometry(kept, regime="polytope").undecided is None
    rep = attndyn.softmax_geometry(summary, regime="polytope")
    assert rep.undecided is None and rep.holds is True
    early = attndyn.softmax(x, time=1.0, step=0.05, rescaled=True, save=SaveAt(every=None))
    assert "only the first and last states were kept" in attndyn.softmax_geometry(early, regime="polytope").undecided

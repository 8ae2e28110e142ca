"""Theorem 1.1 verdicts at the edges: right, or undecided with the reason (issue 34, items (1)-(4))."""

import numpy as np
import pytest
import torch

import attndyn
from attndyn._validation import is_spd
from attndyn.analysis._theorems import SOFTMAX_SETTLED_RTOL

SQUARE = np.array([[1, 1], [-1, 1], [-1, -1], [1, -1], [0.3, 0.1], [-0.2, 0.5], [0.1, -0.6], [-0.5, -0.2]])
SQUARE_CLUSTERS = [(0, 4), (1, 5), (2, 7), (3, 6)]


@pytest.mark.parametrize("alpha", [1e-4, 1e-6, 1e-300])
def test_a_small_alpha_leaves_the_limits_unresolved_and_the_verdict_undecided(alpha):
    rep = attndyn.hardmax_theorem(attndyn.hardmax(SQUARE, alpha=alpha, layers=30))
    assert rep.holds is None and rep.record()["holds"] is None
    assert rep.undecided is not None and "may still travel" in rep.undecided and "run more layers" in rep.undecided
    assert rep.verdict.startswith("undecided: the tokens may still travel up to")


def test_an_unsettled_run_is_undecided_not_refuted():
    rep = attndyn.hardmax_theorem(attndyn.hardmax(SQUARE, alpha=0.5, layers=3))
    assert not rep.settled and rep.holds is None
    assert rep.undecided is not None and rep.undecided.startswith("the run has not settled")


@pytest.mark.parametrize("layers", [0, 1, 2, 3])
def test_an_unsettled_run_lists_the_tokens_where_they_are_not_one_merged_cluster(layers):
    # the tolerance that reads limits (ten times what the tokens may still travel) would merge the whole square here
    traj = attndyn.hardmax(SQUARE, alpha=0.5, layers=layers)
    rep = attndyn.hardmax_theorem(traj)
    assert rep.holds is None and rep.undecided.startswith("the run has not settled (one more layer would move")
    expected = attndyn.clusters(traj.final_tokens.numpy(), tol=1e-2 * np.ptp(SQUARE, axis=0).max())
    assert [c.members for c in rep.clusters] == [c.members for c in expected] == [(i,) for i in range(8)]
    assert rep.cluster_tol == pytest.approx(1e-2 * 2.0)


def test_the_cli_gives_no_softmax_verdict_on_tokens_that_still_move(tmp_path, capsys):
    import json

    from attndyn.cli import main

    path = tmp_path / "sq.json"
    path.write_text(str(SQUARE.tolist()))
    assert main(["softmax", str(path), "--time", "0.1", "--rescaled", "--json"]) == 0
    th = json.loads(capsys.readouterr().out)["theorem"]
    assert th["holds"] is None and th["measured_holds"] is False and "run longer" in th["undecided"]
    assert main(["softmax", str(path), "--time", "0.1", "--rescaled"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "polytope: undecided: what the check reads (the rescaled tokens) has not settled" in out
    assert "does NOT hold" not in out
    assert "not needed: the verdicts read the settled tokens" not in out  # they are not settled
    assert main(["softmax", str(path), "--time", "30", "--rescaled", "--json"]) == 0
    th = json.loads(capsys.readouterr().out)["theorem"]
    assert th["holds"] is True and th["undecided"] is None


def test_the_collapse_verdict_measures_the_approach_and_is_given_on_moving_tokens(tmp_path, capsys):
    # Thm C.5's check is a rate (radius ~ t^(-1/2)): its tokens move until t -> infinity, so "undecided, run
    # longer" would never end; its verdict is given on a finite run, and the softmax_geometry report says so.
    import json

    from attndyn.cli import main

    path, V = tmp_path / "sq.json", tmp_path / "V.npy"
    path.write_text(str(SQUARE.tolist()))
    np.save(V, -np.eye(2))
    traj = attndyn.softmax(SQUARE, V=-np.eye(2), time=40.0)
    rep = attndyn.softmax_geometry(traj)
    assert rep.regime == "collapse" and not rep.reads_limit and rep.holds is True
    assert traj.stats.final_change[0] > SOFTMAX_SETTLED_RTOL  # not settled: the tokens still move
    assert main(["softmax", str(path), "--V", str(V), "--time", "40", "--json"]) == 0
    th = json.loads(capsys.readouterr().out)["theorem"]
    assert th["holds"] is True and th["undecided"] is None
    assert main(["softmax", str(path), "--V", str(V), "--time", "40"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "collapse: holds" in out and "or is a rate measured along the run" in out


def test_a_limit_verdict_reads_what_its_check_reads_not_the_whole_tokens(tmp_path, capsys):
    import json

    from attndyn.cli import main

    # d = 1, V > 0 (Thm 2.1: P(t) tends to a Boolean matrix): x(t) grows like e^t while P(t) settles
    x, V = tmp_path / "x.npy", tmp_path / "V.npy"
    np.save(x, np.array([[0.1], [-0.4], [0.6], [1.3]]))
    np.save(V, np.eye(1))
    assert main(["softmax", str(x), "--V", str(V), "--time", "10", "--json"]) == 0
    th = json.loads(capsys.readouterr().out)["theorem"]
    assert th["regime"] == "boolean" and th["holds"] is True and th["undecided"] is None
    # at t = 40 the tokens are ~1e17 apart from 1e0 differences: rounding merges them, and P with them
    assert main(["softmax", str(x), "--V", str(V), "--time", "40", "--json"]) == 0
    th = json.loads(capsys.readouterr().out)["theorem"]
    assert th["holds"] is None and th["undecided"].startswith("rounding has merged tokens that grew to")
    assert "run the rescaled dynamics (rescaled=True, --rescaled" in th["undecided"]


@pytest.mark.parametrize(("row", "time"), [("hyperplanes", 24.0), ("paranormal", 28.0), ("codimension", 96.0)])
def test_regimes_whose_tokens_never_settle_are_decided_by_the_coordinates_they_speak_of(row, time):
    # Table 1's good triple (Fig. 6, Thm 4.1), paranormal V (Thm 5.1) and Fig. 7a (Conj. 4.2): the rescaled tokens
    # drift away along the other eigen-directions forever, while the coordinates the theorem speaks of settle
    from attndyn.experiments._configurations import table1_value_matrix

    V = table1_value_matrix(row, np.random.default_rng(0))
    x = np.random.default_rng(0).standard_normal((12, len(V)))
    short = attndyn.softmax(x, V=V, time=1.0, rescaled=True)
    long = attndyn.softmax(x, V=V, time=time, rescaled=True)
    assert long.stats.final_change[0] > 1e-3  # the tokens still move
    pending = attndyn.softmax_geometry(short, regime=row).undecided
    assert "has not settled" in pending or "times the time scale" in pending  # moving, or shorter than the gap's scale
    rep = attndyn.softmax_geometry(long, regime=row)
    assert rep.undecided is None and rep.verdict == "holds"


def test_a_cluster_tolerance_that_swallows_the_configuration_is_undecided():
    traj = attndyn.hardmax(SQUARE, alpha=0.5, layers=30)
    rep = attndyn.hardmax_theorem(traj, cluster_tol=5.0)
    assert rep.holds is None and rep.undecided is not None and "pass a smaller cluster_tol" in rep.undecided
    assert attndyn.hardmax_theorem(traj).holds is True


@pytest.mark.parametrize(
    "tokens",
    [
        [[1, 0], [1, 1e-9], [-1, 0], [0, -1]],  # exactly, token 1 leads (margin 1e-18); float64 sees a tie
        [[1e150, 0], [1e150, 1], [-1e150, 0], [0, -1e150]],
    ],
)
def test_a_tie_decided_by_rounding_is_reported_undecided(tokens):
    rep = attndyn.hardmax_theorem(attndyn.hardmax(tokens, alpha=0.5, layers=30))
    assert rep.holds is None
    assert rep.undecided is not None
    assert rep.undecided.startswith("whether token 1 leads at layer 0 is decided by rounding")


def test_an_exact_tie_is_not_a_rounding_tie():
    # <z0, z0> = <z0, z1> = 1 exactly: token 0 does not lead, token 1 does, and float64 agrees.
    rep = attndyn.hardmax_theorem(attndyn.hardmax([[1, 0], [1, 0.5], [-1, 0], [0, -1]], alpha=0.5, layers=60))
    assert rep.undecided is None and rep.holds is True


@pytest.mark.parametrize("scale", [2.0**1023, 1.7e308, 2.0**-1030, 1e-310])
def test_runs_near_the_float_range_give_the_verdict_of_scale_one(scale):
    rep = attndyn.hardmax_theorem(attndyn.hardmax(SQUARE * scale, alpha=0.5, layers=30))
    assert rep.holds is True and [c.members for c in rep.clusters] == SQUARE_CLUSTERS
    assert rep.leaders.indices == (0, 1, 2, 3)


@pytest.mark.parametrize("c", [2.0**-1030, 1e308])
def test_A_is_tested_for_spd_relative_to_its_scale(c):
    A = c * np.eye(2)
    assert is_spd(torch.tensor(A))
    rep = attndyn.hardmax_theorem(attndyn.hardmax(SQUARE, alpha=0.5, layers=30, A=A))
    assert rep.hypotheses["A_spd"] and rep.holds is True and rep.leaders.indices == (0, 1, 2, 3)
    assert not is_spd(torch.tensor(-A))


def test_the_cli_prints_the_undecided_verdict_with_its_reason(tmp_path, capsys):
    from attndyn.cli import main

    path = tmp_path / "sq.json"
    path.write_text(str(SQUARE.tolist()))
    assert main(["hardmax", str(path), "--alpha", "1e-4"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Theorem 1.1: undecided: the tokens may still travel" in out and "holds" not in out


def test_the_cli_says_when_the_theorem_makes_no_claim(tmp_path, capsys):
    from attndyn.cli import main

    path = tmp_path / "twice.json"
    path.write_text(str([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]]))  # a repeated token
    assert main(["hardmax", str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert (
        "Theorem 1.1: makes no claim (its hypotheses do not all hold here: distinct_tokens); its conclusion is" in out
    )
    assert "does NOT hold" not in out and "Theorem 1.1: holds" not in out


@pytest.mark.parametrize(
    "args, match",
    [
        ((np.eye(2), np.eye(3), np.eye(2)), r"Q \(2, 2\), K \(3, 3\) and V \(2, 2\) do not fit together"),
        ((np.eye(2), np.eye(2), np.eye(3)), r"V \(3, 3\) do not fit together"),
        ((np.eye(2), np.eye(2), np.ones((2, 3))), r"V must be a square matrix, got shape \(2, 3\)"),
        ((np.ones((3, 2)), np.ones((2, 2)), np.eye(2)), r"Q \(3, 2\), K \(2, 2\) and V \(2, 2\) do not fit together"),
        (("a", "b", "c"), r"Q must be a matrix of numbers, got str"),
    ],
)
def test_the_spectral_definitions_refuse_matrices_that_do_not_fit(args, match):
    with pytest.raises(attndyn.InputError, match=match):
        attndyn.is_good_triple(*args)
    with pytest.raises(attndyn.InputError, match=match):
        attndyn.analysis.is_good_triple_with_multiplicity(*args)


def test_clusters_of_a_trajectory_names_what_to_pass():
    traj = attndyn.hardmax(SQUARE, alpha=0.5, layers=30)
    with pytest.raises(attndyn.InputError, match=r"clusters\(traj.final_tokens\)"):
        attndyn.clusters(traj)
    assert [c.members for c in attndyn.clusters(traj.final_tokens, tol=1e-3)] == SQUARE_CLUSTERS


@pytest.mark.parametrize(("layers", "tol"), [(30, 0.0), (30, 1e-9), (30, 1e-6), (500, 0.0)])
def test_a_cluster_tolerance_below_what_the_tokens_may_travel_is_undecided_not_refuted(layers, tol):
    # followers still approaching their leaders' limits must not count as limits of their own ("does NOT hold")
    traj = attndyn.hardmax(SQUARE, alpha=0.5, layers=layers, stop=attndyn.StopOnConvergence(rtol=1e-12))
    assert attndyn.hardmax_theorem(traj).holds is True
    rep = attndyn.hardmax_theorem(traj, cluster_tol=tol)
    assert rep.holds is None and "is below what the tokens may still travel" in rep.undecided


@pytest.mark.parametrize("bad", [{"cluster_tol": -1.0}, {"cluster_tol": float("nan")}, {"settled_rtol": -1e-4},
                                 {"settled_rtol": float("nan")}])  # fmt: skip
def test_negative_or_nan_tolerances_are_refused(bad):
    traj = attndyn.hardmax(SQUARE, alpha=0.5, layers=30)
    with pytest.raises(attndyn.InputError, match=f"{next(iter(bad))} must be a non-negative finite number"):
        attndyn.hardmax_theorem(traj, **bad)


def test_a_softmax_theorem_outside_its_hypotheses_on_Q_and_K_makes_no_claim():
    # V paranormal but Q^T K = -I: Thm 5.1 assumes Q^T K > 0 (Definition 2 (i)); the row is V's, the claim is not
    I3 = np.eye(3)
    x = np.random.default_rng(0).standard_normal((12, 3))
    rep = attndyn.softmax_geometry(attndyn.softmax(x, K=-I3, V=np.diag([1.0, 1.0, 0.5]), time=20, rescaled=True))
    assert rep.regime == "paranormal" and rep.hypotheses == {"V_paranormal": True, "QtK_positive_definite": False}
    assert rep.verdict.startswith("makes no claim (its hypotheses do not all hold here: QtK_positive_definite)")
    ok = attndyn.softmax_geometry(attndyn.softmax(x, V=np.diag([1.0, 1.0, 0.5]), time=20, rescaled=True))
    assert all(ok.hypotheses.values()) and ok.verdict == "holds"


def test_a_negative_beta_is_the_sign_of_the_form_the_hypotheses_read():
    """The scores are beta <Q x, K y>: beta = -1 with Q = I is Q = -I with beta = 1, the same run bit for bit, and
    gets the same verdict ("makes no claim"), not a counterexample to Thm C.5 or hypotheses met by a flipped form."""
    x = np.random.default_rng(0).standard_normal((6, 2))
    I2 = np.eye(2)
    a = attndyn.softmax(x, time=20, V=-I2, beta=-1.0)
    b = attndyn.softmax(x, time=20, V=-I2, Q=-I2)
    assert torch.equal(a.tokens, b.tokens)
    ra, rb = attndyn.softmax_geometry(a), attndyn.softmax_geometry(b)
    assert ra.hypotheses == rb.hypotheses == {"V_is_cI_c_negative": True, "QtK_identity": False}
    assert ra.verdict == rb.verdict and ra.verdict.startswith("makes no claim")
    assert attndyn.softmax_geometry(attndyn.softmax(x, time=20, V=-I2, beta=2.0)).hypotheses["QtK_identity"]
    good = attndyn.softmax(x, time=10, V=np.diag([2.0, 1.0]), rescaled=True)
    flipped = attndyn.softmax(x, time=10, V=np.diag([2.0, 1.0]), beta=-1.0, rescaled=True)
    assert attndyn.softmax_geometry(good).regime == "hyperplanes"
    assert attndyn.softmax_geometry(flipped).regime != "hyperplanes"  # no longer a good triple: <-Q phi, K phi> < 0


@pytest.mark.parametrize(
    "second, time, verdict", [(0.99, 20.0, None), (0.99, 100.0, None), (0.9, 20.0, None), (0.9, 60.0, "holds")]
)
def test_a_horizon_short_of_the_spectral_gaps_time_scale_is_undecided(second, time, verdict):
    """V = diag(1, 0.99), a good triple: at T = 20 the tokens rested in an intermediate configuration, six
    hyperplanes, moving by 3e-8, and the verdict was "does NOT hold" (Thm 4.1 is proven here). A horizon under
    3 / (lambda_1 - lambda_2) is undecided, saying so (for 0.99 that is 300, beyond float64's range of e^{tV})."""
    x = np.random.default_rng(2).standard_normal((30, 2))
    rep = attndyn.softmax_geometry(attndyn.softmax(x, time=time, V=np.diag([1.0, second]), rescaled=True))
    assert rep.regime == "hyperplanes" and rep.verdict.split(":")[0] == (verdict or "undecided"), rep.verdict
    if verdict is None:
        scale = round(1 / (1 - second))
        assert f"times the time scale 1/{1 - second:.3g} = {scale}" in rep.undecided
        assert f"a time of at least {3 * scale}" in rep.undecided


@pytest.mark.parametrize("spread, time", [(1e-9, 20.0), (1e-9, 80.0), (1e-3, 20.0), (1e-3, 80.0)])
def test_close_tokens_collapsing_faster_or_straddling_the_origin_are_undecided_not_refuted(spread, time):
    """Thm C.5 holds (V = -I, Q^T K = I): close tokens first follow their mean's exponential decay (faster than
    t^(-1/2)), and once the cloud straddles the origin a token may move away from it for a while. Both were
    "does NOT hold"; the run does not reach the regime that decides, so the verdict is undecided, saying why."""
    x = np.tile([[3.0, 3.0]], (5, 1)) + spread * np.random.default_rng(0).standard_normal((5, 2))
    rep = attndyn.softmax_geometry(attndyn.softmax(x, time=time, V=-np.eye(2), save=attndyn.SaveAt(every=10)))
    assert all(rep.hypotheses.values())
    assert rep.holds is None and rep.verdict.startswith("undecided: the radius"), rep.verdict
    assert rep.measured["final_over_initial_radius"] < 1e-3


@pytest.mark.parametrize("V", [np.diag([-1.0, -2.0]), np.array([[-1.0, 3.0], [0.0, -1.0]]), np.diag([-1.0, -0.999])])
def test_conjecture_4_2_makes_no_claim_without_a_positive_eigenvalue(V):
    """Conj. 4.2 speaks of the k >= 1 eigenvalues with positive real part; with k = 0 it said "holds" (zero
    subspaces, at most three), a vacuous verdict."""
    x = np.random.default_rng(0).standard_normal((8, 2))
    rep = attndyn.softmax_geometry(attndyn.softmax(x, time=10, V=V, rescaled=True))
    assert rep.regime == "codimension" and rep.hypotheses == {"V_has_positive_eigenvalues": False}
    assert rep.verdict.startswith("makes no claim")


@pytest.mark.parametrize("eps", [1e-6, 1.5e-7, 5e-8, 1e-8, 3e-9, 1e-10])
def test_is_paranormal_counts_an_eigenvalue_near_lambda_once(eps):
    # F = e1, rho(V|G) = 1 - eps < 1: paranormal for every eps (two tolerances used to disagree in 1e-9..1e-7)
    assert attndyn.analysis.is_paranormal(np.diag([1.0, 1.0 - eps]))


@pytest.mark.parametrize("s", [1.0, 1e-6, 1e-9, 1e-200])
def test_regime_of_tells_a_multiple_of_the_identity_relative_to_the_size_of_V(s):
    from attndyn.analysis import regime_of

    I = np.eye(2)
    assert regime_of(I, I, s * np.diag([2.0, 1.0])) == "hyperplanes"  # a good triple, not V = cI
    assert regime_of(I, I, -s * np.diag([1.0, 2.0])) == "codimension"  # not V = -cI
    assert regime_of(I, I, s * I) == "polytope" and regime_of(I, I, -s * I) == "collapse"


def test_regime_of_refuses_matrices_that_do_not_fit():
    from attndyn.analysis import regime_of

    with pytest.raises(attndyn.InputError, match="V must be a square matrix, got shape"):
        regime_of(np.eye(2), np.eye(2), np.ones((2, 3)))
    with pytest.raises(attndyn.InputError, match="do not fit together"):
        regime_of(np.eye(2), np.eye(2), np.eye(3))


@pytest.mark.parametrize("scale", [1e-8, 1e-3, 1.0, 1e6])
def test_clusters_and_polytopes_by_default_are_the_same_at_every_scale(scale):
    sq = np.array([[1, 1], [-1, 1], [-1, -1], [1, -1], [0.3, 0.1]]) * scale
    assert [c.members for c in attndyn.clusters(sq)] == [(i,) for i in range(5)]
    assert attndyn.Polytope.from_points(sq).vertices == (0, 1, 2, 3)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: attndyn.Polytope.from_points([1.0, 2.0, 3.0]), r"points must have shape \(m, d\)"),
        (lambda: attndyn.Polytope.from_points(np.zeros((2, 2, 2))), r"points must have shape \(m, d\)"),
        (lambda: attndyn.Polytope.from_points([[np.nan, 0], [1, 0]]), "NaN or inf"),
        (lambda: attndyn.Polytope.from_points(np.zeros((0, 2))), "at least one point"),
        (lambda: attndyn.Polytope.from_points([[0, 0], [1, 0], [0, 1]]).contains([0.1, 0.1, 0.1]), "3 coordinates"),
        (lambda: attndyn.Polytope.from_points([[0, 0], [1, 0]], tol=-1), "tol must be a non-negative"),
        (lambda: attndyn.clusters([[0.0, 0.0], [1.0, 1.0]], tol=-1), "tol must be a non-negative"),
        (lambda: attndyn.clusters([[0.0, 0.0], [1.0, 1.0]], tol=float("nan")), "tol must be a non-negative"),
        (lambda: attndyn.clusters([[0.0, 0.0], [1.0, 1.0]], rtol=-1), "rtol must be a non-negative"),
    ],
)
def test_clusters_and_polytopes_refuse_what_is_not_points(call, match):
    with pytest.raises(attndyn.InputError, match=match):
        call()


@pytest.mark.parametrize("alpha, layers", [(1000.0, 2), (1000.0, 3), (200.0, 2), (50.0, 3), (0.5, 80)])
def test_a_large_alpha_follower_is_clustered_with_its_leader(alpha, layers):
    """Pass 7, F2: the last change is the step Z^K -> Z^(K+1) after the kept state, alpha / (1 + alpha) of the way,
    so the final follower is change (1 + alpha) / alpha from its leader, not change / alpha: at alpha = 1000 it
    was a cluster, a vertex of K and "does NOT hold". z_3 = (0.5, 0.1) follows z_1 at every layer (scores 0.5,
    0.1, 0.26); the limits are z_1 and z_2, and the theorem holds."""
    import attndyn

    traj = attndyn.hardmax([[1.0, 0.0], [0.0, 1.0], [0.5, 0.1]], alpha=alpha, layers=layers)
    last = traj.tokens[-1].numpy()
    gap = float(np.abs(last[2] - last[0]).max())
    change = traj.stats.final_change[0]
    assert gap == pytest.approx(change * (1 + alpha) / alpha, rel=1e-6)  # what the final follower has left
    rep = attndyn.analysis.hardmax_theorem(traj)
    assert rep.holds is True and [c.members for c in rep.clusters] == [(0, 2), (1,)]

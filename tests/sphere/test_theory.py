"""Statistics and reports on the sphere: exact small cases, the energy theorem on 1,000 runs, verdicts that fail."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import attndyn.sphere as sp
from attndyn import InputError, SaveAt


def unit_tokens(rng, *shape):
    x = rng.standard_normal(shape)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def test_energy_of_exact_configurations():
    same = torch.tensor([[1.0, 0.0]] * 3, dtype=torch.float64)
    assert float(sp.energy(same, 2.0)) == pytest.approx(math.exp(2.0) / 4)  # 9 e^2 / (2 * 2 * 9)
    ortho = torch.eye(2, dtype=torch.float64)
    assert float(sp.energy(ortho, 1.0)) == pytest.approx((2 * math.e + 2) / 8)
    assert float(sp.energy(ortho, 0.0)) == pytest.approx(2 / 8)  # beta = 0: sum <x_i, x_j> / (2 n^2)
    big = float(sp.energy(same, 700.0))  # e^700 / 1400: finite through logsumexp
    assert math.isfinite(big) and big == pytest.approx(math.exp(700.0 - math.log(1400.0)))


def test_energy_per_sequence_beta():
    rng = np.random.default_rng(0)
    x = torch.tensor(unit_tokens(rng, 3, 4, 2))
    betas = torch.tensor([0.0, 1.0, 3.0], dtype=torch.float64)
    batch = sp.energy(x, betas)
    for b in range(3):
        assert float(batch[b]) == pytest.approx(float(sp.energy(x[b], float(betas[b]))), rel=1e-14)


def test_order_parameter_fraction_and_rank_on_exact_configurations():
    x = torch.tensor([[1.0, 0.0], [1.0, 0.0], [-1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    assert float(sp.kuramoto(x)) == pytest.approx(math.hypot(1, 1) / 4)
    assert float(sp.clustered_fraction(x, 1e-3)) == pytest.approx(2 / 12)  # the pair (0, 1) both ways
    assert int(sp.cluster_rank(x, 1e-3)) == 3
    assert sp.sphere_clusters(x, 1e-3) == [[0, 1], [2], [3]]
    assert sp.sphere_clusters(x, math.pi / 2 + 1e-9) == [[0, 1, 2, 3]]  # linked through the token at 90 degrees
    assert sp.sphere_clusters(x, math.pi) == sp.sphere_clusters(x, 4.0) == [[0, 1, 2, 3]]  # every pair
    assert sp.sphere_clusters(x, 0.0) == [[0, 1], [2], [3]]  # identical tokens: linked at any angle


def test_identical_unit_tokens_share_a_cluster_at_tiny_angles():
    """<v, v> may round below 1 while cos(angle) == 1.0: the chord |x_i - x_j| = 0 links them all the same."""
    rng = np.random.default_rng(0)
    vs = [v / np.linalg.norm(v) for v in rng.standard_normal((200, 3))]
    v = next(v for v in vs if v @ v < 1)
    for angle in (1e-8, 1e-12, 1e-300, 1e-7, 1e-3):
        assert sp.sphere_clusters(np.array([v, v, -v]), angle) == [[0, 1], [2]]
    # at small angles the chord separates what the rounded cosine cannot: 3e-8 apart, linked at 1e-7 only
    w = np.array([1.0, 3e-8, 0.0]) / np.hypot(1.0, 3e-8)
    x = np.array([[1.0, 0.0, 0.0], w])
    assert sp.sphere_clusters(x, 1e-8) == [[0], [1]] and sp.sphere_clusters(x, 1e-7) == [[0, 1]]
    with pytest.raises(InputError, match=r"angle must be a number >= 0 \(radians\), got -0.1"):
        sp.sphere_clusters(x, -0.1)


def test_cluster_report_numbers_tokens_by_their_index_under_a_mask():
    x = np.array([[1.0, 0, 0], [0, 1.0, 0], [0, 1.0, 0], [0, 0, 1.0]])  # token 0 is padding; 1 and 2 coincide
    rep = sp.cluster_report(sp.evolve(x, time=0.1, beta=1.0, mask=[False, True, True, True]))
    assert rep.clusters == [[1, 2], [3]]
    assert sp.cluster_report(sp.evolve(x, time=0.1, beta=1.0)).clusters == [[0], [1, 2], [3]]


def test_plateaus_are_the_staircase():
    steps = sp.plateaus([0.0, 0.5, 1.0, 1.5, 2.0], [4, 4, 2, 2, 1])
    assert [(p["value"], p["start"], p["end"], p["duration"]) for p in steps] == [
        (4.0, 0.0, 1.0, 1.0),
        (2.0, 1.0, 2.0, 1.0),
        (1.0, 2.0, 2.0, 0.0),
    ]


def test_gamma_closed_form_and_crossing():
    ts = np.linspace(0, 3, 7)
    np.testing.assert_allclose(sp.gamma_curve(ts, 2, 0.0), np.tanh(ts), atol=1e-10)
    assert sp.gamma_crossing(2, 0.0, 0.5, 10.0) == pytest.approx(math.atanh(0.5), abs=1e-8)
    assert sp.gamma_crossing(2, 0.0, 0.999, 1.0) == math.inf
    assert sp.gamma_crossing(2, 0.0, 0.99999, 10.0) == pytest.approx(math.atanh(0.99999), abs=1e-10)
    assert sp.gamma_crossing(2, 0.0, 0.0, 1.0) == 0.0 and sp.gamma_crossing(2, 0.0, -0.5, 1.0) == math.inf


@pytest.mark.parametrize("n", [2, 32])
@pytest.mark.parametrize("beta", [-1.0, 0.5, 9.0, 25.0])
def test_gamma_crossing_by_quadrature_equals_the_event_of_the_ode(n, beta):
    """The quadrature of dt/dgamma against the ODE solved to the event; a beta whose e^beta overflows the
    quadrature goes to the ODE (and the orthogonal start then never clusters within the horizon)."""
    from attndyn.sphere._theory import _gamma_event

    for level in (0.3, 0.999):
        quad, ode = sp.gamma_crossing(n, beta, level, 1e4), _gamma_event(n, beta, level, 1e4)
        assert quad == pytest.approx(ode, rel=1e-7) or quad == ode == math.inf
    assert sp.gamma_crossing(n, 800.0, 0.999, 30.0) == math.inf


def test_energy_never_decreases_along_usa_on_1000_random_runs():
    """Q = K = V = I: USA is a gradient ascent of E_beta (arXiv 2312.10794, Section 2). 1,000 random starts and
    betas in [0, 5] (n = 8, d = 3), one batch; every sequence's energy nondecreasing at every kept time. (The step
    must resolve the fastest sequence: at beta = 5 the velocities reach e^5/8, and rk4 with step 0.05 lets the
    energy of about one run in ten fall by up to 4%.)"""
    rng = np.random.default_rng(20)
    x = unit_tokens(rng, 1000, 8, 3)
    betas = rng.uniform(0.0, 5.0, 1000)
    traj = sp.evolve(x, time=2.0, beta=betas, attention="usa", step=0.01, save=SaveAt(every=5))
    failed = [b for b in range(1000) if not sp.energy_report(traj, b).holds]
    assert failed == []
    assert sp.energy_report(traj, 0).applies
    e = sp.energy(traj.ys, traj.params.beta)  # (T, B)
    assert bool((e[-1] > e[0]).all())  # and it rose: the check reads a real increase


def test_the_energy_verdict_fails_when_the_energy_falls():
    """V = -I: USA runs the energy downhill; the report says so (and that the theorem does not apply)."""
    rng = np.random.default_rng(21)
    traj = sp.evolve(unit_tokens(rng, 6, 3), time=2.0, beta=1.0, attention="usa", V=-np.eye(3))
    rep = sp.energy_report(traj)
    assert not rep.holds and not rep.applies and rep.largest_drop > 1e-3
    assert rep.record()["holds"] is False


def test_orthogonal_report_fails_off_its_hypotheses():
    rng = np.random.default_rng(22)
    traj = sp.evolve(unit_tokens(rng, 4, 4), time=1.0, beta=1.0)
    rep = sp.orthogonal_start_report(traj)
    assert not rep.hypotheses["orthogonal_start"] and not rep.holds


def test_cluster_report_on_one_cluster_and_on_a_metastable_run():
    rng = np.random.default_rng(23)
    one = sp.cluster_report(sp.evolve(unit_tokens(rng, 10, 3), time=30.0, beta=1.0, step=0.1))
    assert one.applies and one.holds and one.order_parameter == pytest.approx(1.0, abs=1e-6)
    # circle, large beta: several clusters survive for a long time (metastability), the verdict is "not yet"
    x = unit_tokens(rng, 32, 2)
    meta = sp.cluster_report(sp.evolve(x, time=10.0, beta=9.0, step=0.1), angle=1e-2)
    assert not meta.holds and not meta.applies  # d = 2 with beta > 1: no theorem, and not one cluster
    assert meta.longest_plateau is not None and meta.longest_plateau["value"] > 1


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"tokens": [[0.0, 0.0], [1.0, 0.0]]}, r"token 0 of sequence 0 has norm 0, so it has no point on the sphere"),
        ({"tokens": [[2.0, 0.0], [1.0, 0.0]]}, r"token 0 of sequence 0 has norm 2, not 1.*normalize=True"),
        ({"attention": "softmax"}, r"unknown attention 'softmax'; choose 'sa' \(softmax\) or 'usa'"),
        ({"method": "rk5"}, r"unknown method 'rk5'; choose one of discrete, euler"),
        ({"norm": "post"}, r"norm='post' sets the layers of the discrete method; drop it or use method='discrete'"),
        ({"method": "discrete", "norm": "layer"}, r"unknown norm 'layer'; choose one of post, pre, peri, ngpt"),
        ({"noise": -0.1, "seed": 0}, r"noise must be a non-negative finite number, got -0.1"),
        ({"noise": 0.1}, r"noise > 0 needs a seed"),
        ({"noise": 0.1, "seed": 0, "method": "dopri5"}, r"noise is defined for fixed-step schemes"),
        ({"beta": [1.0, 2.0, 3.0]}, r"beta has 3 values for a batch of 1 sequences; give one number or 1"),
        ({"beta": float("nan")}, r"beta must be a finite number"),
        ({"beta": 800.0, "attention": "usa"}, r"USA weights e\^\(beta <Qx, Kx>\) overflow torch.float64"),
        ({"time": 1e9, "step": 1e-3}, r"needs 1e\+12 steps, over max_steps=100000"),
        ({"max_memory": 100}, r"this run would keep about .* over the limit of 100 B"),
    ],
)
def test_refusals_name_the_problem_and_the_fix(kwargs, match):
    args = {"tokens": [[1.0, 0.0], [0.0, 1.0]], "time": 1.0} | kwargs
    with pytest.raises(InputError, match=match):
        sp.evolve(args.pop("tokens"), **args)


def test_off_sphere_tokens_are_normalised_when_asked():
    traj = sp.evolve([[2.0, 0.0], [0.0, 0.5]], time=1.0, beta=0.0, normalize=True, step=0.01)
    x = traj.final_tokens
    assert float(x[0] @ x[1]) == pytest.approx(math.tanh(1.0), abs=1e-9)


def test_reports_refuse_other_results():
    import attndyn

    with pytest.raises(InputError, match=r"expected a SphereTrajectory \(from attndyn.sphere.evolve\)"):
        sp.energy_report(attndyn.softmax([[1.0, 0.0]], time=1.0))
    traj = sp.evolve([[1.0, 0.0]], time=1.0)
    with pytest.raises(InputError, match=r"sequence index 3 out of range for a batch of 1"):
        sp.cluster_report(traj, 3)
    with pytest.raises(InputError, match=r"angle must be a number in \(0, pi\), got -1"):
        sp.cluster_report(traj, angle=-1)


def test_float32_energy_verdict_allows_float32_rounding():
    rng = np.random.default_rng(30)
    x = unit_tokens(rng, 64, 8, 3)
    traj = sp.evolve(x, time=2.0, beta=1.0, attention="usa", step=0.01, dtype=torch.float32, save=SaveAt(every=1))
    reports = [sp.energy_report(traj, b) for b in range(64)]
    assert all(r.holds for r in reports) and reports[0].rtol == 1e-5
    assert max(r.largest_drop for r in reports) < 1e-5


@pytest.mark.parametrize(("d", "betas"), [(3, (0.5, 1.0, 2.0)), (2, (0.0, 0.5, 1.0))])
def test_one_cluster_from_random_starts_where_the_theory_says_so(d, betas):
    """Q = K = V = I: one cluster from almost every start for d >= 3, and on the circle for 0 <= beta <= 1
    (arXiv 2312.10794, Part 2): 3 x 20 random starts in one batch, each ending in one cluster, the verdict applying.
    (The theorems are about t -> infinity: at beta = 5 in d = 3, some such runs still hold two clusters at
    t = 200, a metastable state, so the horizon here is one the merging reaches for beta <= 2.)"""
    rng = np.random.default_rng(40 + d)
    x = unit_tokens(rng, 60, 8, d)
    traj = sp.evolve(x, time=60.0, beta=np.repeat(betas, 20), step=0.1, save=SaveAt(every=50))
    reports = [sp.cluster_report(traj, b, angle=1e-3) for b in range(60)]
    assert all(r.applies for r in reports)
    assert [b for b, r in enumerate(reports) if not r.holds] == []


def test_the_energy_at_beta_0_of_balanced_tokens_is_not_rounding_noise():
    # a regular tetrahedron (mean 0) moved by 1e-9: E_0 = |mean|^2 / 2 ~ 2e-20, and the Gram sum cancels to -5e-18
    tet = np.array([[1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]]) / np.sqrt(3)
    x = tet + 1e-9 * np.random.default_rng(0).standard_normal((4, 3))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    e0 = float(sp.energy(torch.tensor(x), 0.0))
    assert e0 >= 0 and math.isclose(e0, float(x.mean(0) @ x.mean(0)) / 2, rel_tol=1e-6)
    rep = sp.energy_report(sp.evolve(x, time=5.0, beta=0.0, attention="usa", step=0.01, save=SaveAt(every=10)))
    assert rep.applies and rep.holds and rep.largest_drop <= 1e-12  # was a "relative drop" of 3e290


def test_reports_of_a_failed_run_or_of_one_state_are_undecided():
    x = unit_tokens(np.random.default_rng(0), 8, 3)
    failed = sp.evolve(x, time=50.0, beta=1.0, method="dopri5", max_steps=5, step=1.0, attention="usa")
    assert failed.stats.stop_reason == "solver_failed"
    for rep in (sp.cluster_report(failed), sp.energy_report(failed)):
        assert rep.holds is None and rep.undecided.startswith("the run failed at t = ")
        assert rep.record()["holds"] is None and rep.record()["measured_holds"] in (True, False)
    assert sp.cluster_report(sp.evolve(x, time=1.0, beta=1.0)).undecided is None


def test_a_float32_run_from_a_rotated_orthonormal_frame_is_an_orthogonal_start():
    Q, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((4, 4)))
    rep = sp.orthogonal_start_report(sp.evolve(Q, time=2.0, beta=2.0, step=0.01, dtype=torch.float32))
    assert rep.hypotheses["orthogonal_start"] and rep.applies and rep.holds is not None
    bent = Q.copy()
    bent[1] = Q[1] + 1e-3 * Q[0]
    assert not sp.orthogonal_start_report(sp.evolve(bent, time=0.5, beta=2.0, dtype=torch.float32)).applies


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf"), True, "1e-6"])
def test_report_tolerances_are_checked(bad):
    traj = sp.evolve(np.eye(3), time=0.5, beta=1.0, attention="usa")
    with pytest.raises(InputError, match=r"rtol must be a finite number >= 0"):
        sp.energy_report(traj, rtol=bad)
    with pytest.raises(InputError, match=r"tol must be a finite number >= 0"):
        sp.orthogonal_start_report(traj, tol=bad)


def test_the_clustering_theorem_asks_beta_at_least_0():
    x = unit_tokens(np.random.default_rng(1), 6, 3)
    assert sp.cluster_report(sp.evolve(x, time=1.0, beta=1.0)).applies
    assert not sp.cluster_report(sp.evolve(x, time=1.0, beta=-1.0)).applies


def test_the_statistics_take_numpy_tokens_and_refuse_bad_ones_in_one_line():
    x = unit_tokens(np.random.default_rng(2), 5, 3)
    t = torch.tensor(x)
    for fn in (lambda a: sp.energy(a, 1.0), sp.kuramoto, lambda a: sp.clustered_fraction(a, 0.1),
               lambda a: sp.cluster_rank(a, 0.1)):  # fmt: skip
        assert torch.equal(fn(x), fn(t)) and torch.equal(fn(x.tolist()), fn(t))
        with pytest.raises(
            InputError, match=r"x must be tokens of shape \(n, d\) or \(\.\.\., n, d\), got shape \(3,\)"
        ):
            fn(np.array([1.0, 0.0, 0.0]))
        with pytest.raises(InputError, match=r"x holds NaN or inf; give finite tokens"):
            fn(np.array([[1.0, 0.0], [np.nan, 1.0]]))
    with pytest.raises(
        InputError, match=r"x must be the tokens of one configuration, shape \(n, d\), got shape \(2, 5, 3\)"
    ):
        sp.sphere_clusters(np.stack([x, x]), 0.1)
    with pytest.raises(InputError, match=r"x must be tokens of shape"):
        sp.sphere_clusters(np.array([1.0, 0.0]), 0.1)
    for delta in (0.0, 2.0, 3.0, float("nan")):
        with pytest.raises(InputError, match=r"delta must be a number in \(0, 2\)"):
            sp.clustered_fraction(x, delta)


def test_the_gamma_curve_and_its_crossing_check_their_arguments():
    assert sp.gamma_crossing(4, 1.0, 1.0, 10.0) == math.inf and sp.gamma_crossing(4, 1.0, 1.5, 10.0) == math.inf
    for args, match in (((0, 1.0, 0.5, 10.0), r"n must be an integer >= 2"), ((4, 1.0, float("nan"), 10.0), r"level must be a number"),
                        ((4, float("inf"), 0.5, 10.0), r"beta must be a finite number")):  # fmt: skip
        with pytest.raises(InputError, match=match):
            sp.gamma_crossing(*args)
    with pytest.raises(InputError, match=r"n must be an integer >= 2"):
        sp.gamma_curve([0.0, 1.0], 1, 0.0)
    with pytest.raises(InputError, match=r"ts must be finite times >= 0 in increasing order, got \[1.0, 0.5\]"):
        sp.gamma_curve([1.0, 0.5], 2, 0.0)


def test_energy_report_reads_the_real_tokens_of_a_masked_run():
    x = unit_tokens(np.random.default_rng(3), 6, 3)
    mask = [True, True, False, True, True, False]
    rep = sp.energy_report(sp.evolve(x, time=0.5, beta=1.0, attention="usa", mask=mask))
    real = sp.evolve(x[[0, 1, 3, 4]], time=0.5, beta=1.0, attention="usa")
    assert math.isclose(rep.energies[-1], float(sp.energy(real.final_tokens, 1.0)), rel_tol=1e-12)
    assert not rep.applies  # a mask is outside the theorem, but its numbers are the system's that ran


@pytest.mark.parametrize("n, beta", [(3, 5.0), (4, 1.0), (8, -1.0)])
def test_the_usa_orthogonal_start_follows_its_own_curve(n, beta):
    """Pass 6, M2: USA's weights are not normalised, so its orthogonal start follows
    gamma' = 2 e^(beta gamma)(1 - gamma)((n - 1) gamma + 1) / n, not SA's curve (n = 3, beta = 5 reaches 1 - 1e-3 at
    t = 0.30 under USA and 17.6 under SA); the engine, from e_1..e_n, agrees with it to rk4's error."""
    from attndyn.sphere import evolve

    T = 2.0
    run = evolve(np.eye(n), time=T, beta=beta, attention="usa", step=0.001)
    x = run.ys[-1, 0].double().numpy()
    engine = (x @ x.T)[~np.eye(n, dtype=bool)].mean()
    assert abs(engine - sp.gamma_curve([0.0, T], n, beta, attention="usa")[-1]) < 1e-9
    level = sp.gamma_curve([0.0, 0.25], n, beta, attention="usa")[-1]
    assert abs(sp.gamma_crossing(n, beta, level, 10.0, attention="usa") - 0.25) < 1e-8
    if (n, beta) == (3, 5.0):
        assert (
            sp.gamma_crossing(3, 5.0, 1 - 1e-3, 30.0, attention="usa")
            < 0.31
            < 17
            < sp.gamma_crossing(3, 5.0, 1 - 1e-3, 30.0)
        )
    with pytest.raises(InputError, match="attention must be 'sa' or 'usa'"):
        sp.gamma_crossing(n, beta, 0.5, 1.0, attention="SA")


def test_gamma_of_a_very_negative_beta_is_the_hardmin_limit_not_an_overflow():
    """n = 2, beta -> -inf: gamma' = 2(1 - gamma^2), gamma = tanh(2t) from 0; beta = -710 overflowed e^{beta(gamma-1)}
    (an OverflowError, and a traceback from `attndyn sphere --beta -1000`)."""
    g = sp.gamma_curve([0.0, 0.5], 2, -710.0)
    assert abs(g[1] - math.tanh(1.0)) < 1e-9
    from attndyn.sphere._theory import gamma_rhs

    assert gamma_rhs(0.3, 2, -1e6) == pytest.approx(2 * (1 - 0.3**2))
    assert gamma_rhs(0.3, 2, 1e6, attention="usa") == math.inf


@pytest.mark.parametrize("beta", [1.0, 20.0, 36.0])
def test_the_usa_gamma_curve_meets_its_crossing_times_and_never_comes_back_short(beta):
    """USA's gamma ODE is stiff near gamma = 1 (rate about e^beta): explicit DOP853 on gamma did not return in 100 s
    at beta = 20, and at beta = 50 returned one value for three times. It is solved in u = -log(1 - gamma); its
    values agree with gamma_crossing's quadrature. At beta = 50 the solve stops short: it was an InputError, and is
    now answered by the quadrature (test_the_usa_gamma_curve_beyond_beta_40_inverts_gamma_crossing)."""
    t90 = sp.gamma_crossing(2, beta, 0.9, 10.0, "usa")
    g = sp.gamma_curve([0.0, t90, 1.0], 2, beta, attention="usa")
    # dgamma/dt is about e^(0.9 beta) there, so the crossing time's own rounding moves gamma: compared where it
    # does not swamp the check (at beta = 36 a relative 1e-15 in t moves gamma by 0.06)
    assert g.shape == (3,) and g[2] > 0.9 and (beta > 30 or abs(g[1] - 0.9) < 1e-5)
    g = sp.gamma_curve([0.0, 0.5, 1.0], 2, 50.0, attention="usa")
    assert g.shape == (3,) and g[0] == 0.0 and g[1] == g[2] == 1.0


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("beta", [45.0, 60.0, 300.0, 1e6])
def test_the_usa_gamma_curve_beyond_beta_40_inverts_gamma_crossing(n, beta):
    """From about beta = 38 USA's gamma ODE stops short (the rise of u is shorter than the spacing of float times)
    and gamma_curve raised "could not be solved ... try a smaller beta". It now inverts gamma_crossing's quadrature,
    so the two agree: gamma_curve at the time of level L gives back that time. Where gamma' t is far above 1e12 a
    float time pins gamma no better than that (at beta = 60, levels 0.5 and 0.9 share a time to 1e-13), so gamma
    itself is compared only where the time's rounding moves it by less than 1e-6."""
    from attndyn.sphere._theory import gamma_rhs

    levels = (0.1, 0.5, 0.9)
    ts = [sp.gamma_crossing(n, beta, level, 10.0, attention="usa") for level in levels]
    g = sp.gamma_curve([0.0, *ts, 1.0], n, beta, attention="usa")
    assert g[0] == 0.0 and g[-1] == 1.0 and bool(np.all(np.diff(g) >= 0))
    for level, t, gamma in zip(levels, ts, g[1:-1], strict=True):
        assert sp.gamma_crossing(n, beta, float(gamma), 10.0, attention="usa") == pytest.approx(t, rel=1e-12, abs=0)
        if gamma_rhs(level, n, beta, "usa") * t * 1e-12 < 1e-6:
            assert gamma == pytest.approx(level, rel=1e-6)
    if beta == 60.0:  # the round trip in gamma where it is well posed: level 0.1
        assert g[1] == pytest.approx(0.1, rel=1e-9)


def test_the_gamma_curve_takes_repeated_times():
    """Equal times are increasing enough for the check, but scipy's t_eval refused them (a ValueError)."""
    g = sp.gamma_curve([0.0, 0.5, 0.5, 1.0], 2, 0.0)
    np.testing.assert_allclose(g, np.tanh([0.0, 0.5, 0.5, 1.0]), atol=1e-10)
    u = sp.gamma_curve([0.0, 0.01, 0.01, 0.02], 3, 5.0, attention="usa")
    assert u[1] == u[2] and u.shape == (4,)


def test_the_statistics_gamma_crossing_and_plateaus_refuse_what_has_no_answer_in_one_line():
    """No tokens (energy raised "math domain error", cluster_rank a reshape RuntimeError, kuramoto gave NaN); a NaN
    or infinite beta in energy (NaN came back); gamma_crossing's t_max NaN, negative or not a number (inf came back,
    or a TypeError, and for SA at beta = 1000 with t_max NaN the ODE never returned); plateaus of times and values
    of different lengths (cut to the shorter, or an IndexError)."""
    for fn in (lambda a: sp.energy(a, 1.0), sp.kuramoto, lambda a: sp.cluster_rank(a, 0.1)):
        for shape in ((0, 3), (2, 0, 3), (3, 0)):
            with pytest.raises(InputError, match=r"x has shape \(.*\), no tokens; give at least one token"):
                fn(np.zeros(shape))
    x = np.eye(3)
    for bad in (float("nan"), float("inf"), torch.tensor([1.0, float("nan")])):
        with pytest.raises(InputError, match=r"beta must be finite \(one number, or one per configuration\)"):
            sp.energy(np.stack([x, x]), bad)
    for t_max in (float("nan"), -1.0, float("inf"), "10"):
        for beta in (1.0, 1000.0):
            with pytest.raises(InputError, match=r"t_max must be a finite time >= 0 \(a crossing after it is inf\)"):
                sp.gamma_crossing(2, beta, 0.5, t_max)
    assert sp.gamma_crossing(2, 1.0, 0.5, 0) == math.inf and sp.gamma_crossing(2, 1.0, 0.0, 0.0) == 0.0
    for ts, values in (([0, 1, 2], [1, 1]), ([0, 1], [1, 1, 2])):
        with pytest.raises(InputError, match=r"ts has \d times but values has \d; give one value per time"):
            sp.plateaus(ts, values)
    assert sp.plateaus([], []) == []

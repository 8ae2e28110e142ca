"""Softmax dynamics (softmax paper eqs. 1-4, Remark 4, Section 6): orders, limits, oracle, gradients."""

import math

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import attndyn
from attndyn import attention
from attndyn._dynamics import SoftmaxAttention

from . import naive

pytestmark = pytest.mark.smoke  # part of the quick subset: pytest -m smoke

V2 = [[0.5, -1.0], [1.0, 0.3]]


def one_token_error(method, step, T=1.0):
    """n = 1: P = 1, so dx/dt = V x and x(T) = exp(TV) x(0) exactly."""
    x0 = torch.tensor([[1.0, -0.5]], dtype=torch.float64)
    V = torch.tensor(V2, dtype=torch.float64)
    traj = attndyn.softmax(x0, time=T, V=V, method=method, step=step, save=attndyn.SaveAt(every=None))
    exact = x0 @ torch.linalg.matrix_exp(T * V).T
    return float((traj.final_tokens - exact).abs().max())


@pytest.mark.parametrize("method, order", [("euler", 1), ("discrete", 1), ("midpoint", 2), ("heun", 2), ("rk4", 4)])
def test_measured_convergence_order(method, order):
    errs = [one_token_error(method, h) for h in (0.1, 0.05, 0.025)]
    rates = [math.log2(errs[i] / errs[i + 1]) for i in range(2)]
    assert all(abs(r - order) < 0.2 for r in rates), rates


def test_adaptive_solver_reaches_its_tolerance():
    assert one_token_error("dopri5", 0.5) < 1e-6


def test_fixed_step_matches_naive_euler_loop():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((7, 3))
    Q, K, V = (rng.standard_normal((3, 3)) for _ in range(3))
    traj = attndyn.softmax(x, time=0.5, Q=Q, K=K, V=V, beta=0.7, method="euler", step=0.05)
    ref = naive.softmax_euler(x.tolist(), Q.tolist(), K.tolist(), V.tolist(), 0.05, 10, beta=0.7)
    np.testing.assert_allclose(traj.final_tokens.numpy(), np.array(ref), rtol=1e-10, atol=1e-12)


def test_rectangular_query_key_matrices():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 3))
    Q, K = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    dyn = SoftmaxAttention(Q=torch.tensor(Q)[None], K=torch.tensor(K)[None], V=torch.eye(3, dtype=torch.float64)[None])
    ref = naive.softmax_velocity(x.tolist(), Q.tolist(), K.tolist(), np.eye(3).tolist())
    np.testing.assert_allclose(dyn(0.0, torch.tensor(x)[None])[0].numpy(), np.array(ref), rtol=1e-12)


def test_multi_head_is_the_sum_of_heads():
    rng = np.random.default_rng(2)
    x = torch.tensor(rng.standard_normal((1, 6, 2)))
    Qs, Ks, Vs = (torch.tensor(rng.standard_normal((3, 2, 2))) for _ in range(3))
    multi = SoftmaxAttention(Q=Qs, K=Ks, V=Vs)(0.0, x)
    heads = sum(SoftmaxAttention(Q=Qs[h : h + 1], K=Ks[h : h + 1], V=Vs[h : h + 1])(0.0, x) for h in range(3))
    torch.testing.assert_close(multi, heads)
    traj = attndyn.softmax(x, time=0.3, Q=Qs, K=Ks, V=Vs, method="discrete", step=0.1)
    assert traj.params.V.shape[0] == 3


def test_rescaled_eq4_is_exp_minus_tV_times_eq1():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 2))
    V = torch.tensor(V2, dtype=torch.float64)
    T = 1.5
    orig = attndyn.softmax(x, time=T, V=V, method="rk4", step=0.01, save=attndyn.SaveAt(every=None))
    resc = attndyn.softmax(x, time=T, V=V, method="rk4", step=0.01, rescaled=True, save=attndyn.SaveAt(every=None))
    expected = orig.final_tokens @ torch.linalg.matrix_exp(-T * V).T
    torch.testing.assert_close(resc.final_tokens, expected, rtol=1e-7, atol=1e-9)


def test_remark4_rescaled_discrete_is_R_power_minus_k_of_eq3():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((5, 2))
    V = torch.tensor(V2, dtype=torch.float64)
    dt, k = 0.1, 12
    orig = attndyn.softmax(x, time=k * dt, V=V, method="discrete", step=dt)
    resc = attndyn.softmax(x, time=k * dt, V=V, method="discrete", step=dt, rescaled=True)
    R = torch.eye(2, dtype=torch.float64) + dt * V
    for j in range(k + 1):
        Rj = torch.linalg.matrix_power(torch.linalg.inv(R), j)
        torch.testing.assert_close(resc.tokens[j], orig.tokens[j] @ Rj.T, rtol=1e-10, atol=1e-12)


def test_a_rescaled_discrete_run_reads_the_attention_leaders_and_verdict_of_the_original():
    """Remark 4: the scores of layer k see R^k z, not e^{tV} z. The saved attention, the leaders, the attention a
    verdict reads and its verdict are those of the original run (they read e^{tV} z: attention 0.17 apart, and
    "holds" on a run whose attention had not settled)."""
    rng = np.random.default_rng(1)
    x = np.sort(rng.uniform(-1, 1, 6))[:, None] * 0.3
    V = [[1.0]]
    save = attndyn.SaveAt(attention=True)
    orig = attndyn.softmax(x, time=13.0, V=V, method="discrete", step=0.5, save=save)
    resc = attndyn.softmax(x, time=13.0, V=V, method="discrete", step=0.5, rescaled=True, save=save)
    torch.testing.assert_close(resc.attention, orig.attention, rtol=0, atol=1e-9)  # rounding, grown 1.5^26-fold
    assert attndyn.leaders(resc).records() == attndyn.leaders(orig).records()
    unsaved = attndyn.softmax(x, time=13.0, V=V, method="discrete", step=0.5, rescaled=True)
    for traj in (resc, unsaved):  # the attention kept, or recomputed from the kept state
        rep = attndyn.softmax_geometry(traj)
        assert rep.holds is None and "has not settled" in rep.verdict, rep.verdict
    assert attndyn.softmax_geometry(orig).holds is None


def test_discrete_step_is_a_convex_combination_when_V_is_identity():
    """Remark 4: with V = I the rescaled discrete step stays in the convex hull."""
    x = np.random.default_rng(5).standard_normal((8, 2))
    traj = attndyn.softmax(x, time=3.0, method="discrete", step=0.1, rescaled=True)
    U = np.random.default_rng(6).standard_normal((12, 2))
    support = np.einsum("tnd,kd->tkn", traj.tokens.numpy(), U).max(axis=-1)
    assert np.all(np.diff(support, axis=0) <= 1e-12)


@settings(max_examples=30, deadline=None)
@given(
    arrays(
        np.float64, st.tuples(st.integers(2, 6), st.integers(1, 3)), elements=st.floats(-3, 3, allow_subnormal=False)
    )
)
def test_softmax_step_tends_to_hardmax_as_beta_grows(z):
    """Away from ties, softmax(beta s) -> hardmax(s), so the discrete step tends to the hardmax step."""
    zt = torch.tensor(z)[None]
    s = attention.scores(zt)
    top2 = torch.topk(s, k=min(2, s.shape[-1]), dim=-1).values
    gap = float((top2[..., 0] - top2[..., -1]).min()) if s.shape[-1] > 1 else 1.0
    assume(gap >= 1e-3)  # away from near-ties: hardmax is discontinuous there
    hard = attention.hardmax_weights(s)
    errs = [float((attention.softmax_weights(s, beta=b) - hard).abs().max()) for b in (10 / gap, 40 / gap)]
    assert errs[1] <= errs[0] + 1e-15
    assert errs[1] <= 2 * (z.shape[0] - 1) * math.exp(-40) + 1e-12


def test_V_minus_identity_collapses_to_the_origin():
    x = np.random.default_rng(7).standard_normal((20, 2))
    traj = attndyn.softmax(x, time=30.0, V=-np.eye(2), method="rk4", step=0.1, save=attndyn.SaveAt(every=50))
    report = attndyn.softmax_geometry(traj)
    assert report.regime == "collapse" and report.holds
    radius = traj.tokens.abs().amax(dim=(1, 2))
    assert torch.all(radius[1:] <= radius[:-1])


def test_one_dimensional_attention_becomes_boolean_theorem_2_1():
    x = np.linspace(-1.0, 1.3, 12)[:, None] + 0.01 * np.random.default_rng(8).standard_normal((12, 1))
    traj = attndyn.softmax(x, time=8.0, method="rk4", step=0.02, save=attndyn.SaveAt(every=100, attention=True))
    report = attndyn.softmax_geometry(traj)
    assert report.regime == "boolean" and report.holds, report.measured
    first = attndyn.analysis.boolean_distance(traj.attention[0, 0], free_rows=1)
    assert report.measured["boolean_distance"] < 1e-6 < first
    assert report.measured["rank"] <= 3


def test_V_identity_converges_to_polytope_vertices_theorem_3_1():
    x = np.random.default_rng(9).standard_normal((25, 3))
    traj = attndyn.softmax(x, time=12.0, rescaled=True, method="rk4", step=0.1)
    report = attndyn.softmax_geometry(traj)
    assert report.regime == "polytope" and report.holds, report.measured


def test_good_triple_at_most_three_hyperplanes_theorem_4_1():
    rng = np.random.default_rng(10)
    V = np.array([[1.2, 0.2], [0.2, -0.05]])
    assert attndyn.is_good_triple(np.eye(2), np.eye(2), V)
    traj = attndyn.softmax(rng.standard_normal((30, 2)), time=15.0, V=V, rescaled=True, method="rk4", step=0.05)
    report = attndyn.softmax_geometry(traj)
    assert report.regime == "hyperplanes" and report.holds and report.measured["hyperplanes"] <= 3


def test_paranormal_theorem_5_1():
    V = np.diag([1.0, 1.0, -0.5])
    assert attndyn.is_paranormal(V)
    traj = attndyn.softmax(np.random.default_rng(11).standard_normal((30, 3)), time=20.0, V=V, rescaled=True)
    report = attndyn.softmax_geometry(traj)
    assert report.regime == "paranormal" and report.holds


def test_gradcheck_through_the_dynamics():
    rng = np.random.default_rng(12)
    x = torch.tensor(rng.standard_normal((1, 4, 2)), requires_grad=True)
    Q = torch.tensor(rng.standard_normal((2, 2)), requires_grad=True)
    K = torch.tensor(rng.standard_normal((2, 2)), requires_grad=True)
    V = torch.tensor(rng.standard_normal((2, 2)), requires_grad=True)

    def f(x, Q, K, V):
        return attndyn.softmax(x, time=0.3, Q=Q, K=K, V=V, method="rk4", step=0.1).final_tokens

    assert torch.autograd.gradcheck(f, (x, Q, K, V))


def test_gradient_through_adaptive_solver():
    x = torch.tensor(np.random.default_rng(13).standard_normal((3, 2)), requires_grad=True)
    out = attndyn.softmax(x, time=0.5, method="dopri5", step=0.25).final_tokens.sum()
    out.backward()
    assert torch.isfinite(x.grad).all()


def test_chunked_attention_equals_dense(monkeypatch):
    x = torch.tensor(np.random.default_rng(14).standard_normal((2, 30, 3)))
    ref = attndyn.softmax(x, time=0.3, step=0.1).final_tokens
    monkeypatch.setattr(attention, "MAX_CHUNK_ENTRIES", 70)  # about one query row at a time
    torch.testing.assert_close(attndyn.softmax(x, time=0.3, step=0.1).final_tokens, ref, rtol=1e-13, atol=1e-13)


def test_mask_matches_running_on_real_tokens_only():
    rng = np.random.default_rng(15)
    real = rng.standard_normal((5, 2))
    padded = np.vstack([real, 50 * np.ones((2, 2))])
    a = attndyn.softmax(real, time=1.0)
    b = attndyn.softmax(padded, time=1.0, mask=[True] * 5 + [False] * 2)
    torch.testing.assert_close(b.final_tokens[:5], a.final_tokens)
    torch.testing.assert_close(b.final_tokens[5:], torch.tensor(padded[5:]))


def test_large_scores_stay_finite():
    x = 30 * np.random.default_rng(16).standard_normal((10, 2))  # scores ~ 1e3: naive exp overflows
    traj = attndyn.softmax(x, time=0.2, step=0.01)
    assert torch.isfinite(traj.final_tokens).all()


def test_failed_adaptive_solve_says_where():
    x = 3 * np.random.default_rng(17).standard_normal((10, 2))
    traj = attndyn.softmax(x, time=5.0, V=2 * np.eye(2), method="dopri5", max_steps=2, rtol=1e-12, atol=1e-14)
    assert traj.stats.stop_reason == "solver_failed"
    t, dt = traj.stats.failed_at
    assert 0 <= t <= 5.0 and dt > 0
    assert "failed at t=" in traj.stats.message


def test_save_every_stop_and_stats():
    x = np.random.default_rng(18).standard_normal((6, 2))
    traj = attndyn.softmax(x, time=2.0, step=0.1, save=attndyn.SaveAt(every=5, attention=True))
    assert np.allclose(traj.times.numpy(), [0.0, 0.5, 1.0, 1.5, 2.0])
    assert traj.attention.shape == (5, 1, 6, 6)
    assert traj.stats.steps == 20 and traj.stats.function_evals == 80
    stopped = attndyn.softmax(
        x,
        time=200.0,
        step=0.1,
        rescaled=True,
        stop=attndyn.StopOnConvergence(rtol=1e-8),
        save=attndyn.SaveAt(every=None),
    )
    assert stopped.stats.stop_reason == "converged" and stopped.stats.steps < 2000


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"time": 0.0}, "time must be a positive"),
        ({"time": 1.0, "method": "rk45"}, "unknown method 'rk45'"),
        ({"time": 1.0, "V": np.eye(3)}, "dimension d=2"),
        ({"time": 1.0, "Q": np.ones((2, 2)), "K": np.ones((3, 2))}, "Q maps to dimension 2 but K to 3"),
        ({"time": 1.0, "V": np.ones((2, 2, 2)), "rescaled": True}, "one head"),
        ({"time": 1.0, "step": -0.1}, "step must be a positive"),
        ({"time": 1.0, "V": -10 * np.eye(2), "method": "discrete", "step": 0.1, "rescaled": True}, "singular"),
    ],
)
def test_softmax_bad_input(kw, match):
    with pytest.raises(attndyn.InputError, match=match):
        attndyn.softmax([[1.0, 0.0], [0.0, 1.0]], **kw)


def test_the_discrete_model_takes_whole_layers_of_its_step():
    x = [[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]]
    with pytest.raises(
        attndyn.InputError,
        match=r'method="discrete" takes whole layers of step=1 .*time=2.5 is 2.5 of them; give time = layers x step, e.g. time=2 for 2 layers',
    ):
        attndyn.softmax(x, time=2.5, step=1.0, method="discrete")  # was 3 layers of step 0.833, silently
    three = attndyn.softmax(x, time=0.3, step=0.1, method="discrete")  # 0.3 / 0.1 = 2.9999999999999996: 3 layers
    assert len(three.ts) == 4 and math.isclose(three.params.step, 0.1)
    assert attndyn.softmax(x, time=2.5, step=1.0, method="rk4").params.step == 2.5 / 3  # a grid may move


def test_an_overflow_of_the_rescaled_dynamics_does_not_advise_the_rescaled_dynamics():
    x = np.random.default_rng(0).standard_normal((5, 2))
    rescaled = attndyn.softmax(x, time=1000.0, rescaled=True, step=1.0)
    assert rescaled.stats.stop_reason == "solver_failed" and rescaled.stats.message.endswith("reduce step or time")
    plain = attndyn.softmax(x, time=1000.0, step=1.0)
    assert plain.stats.message.endswith("or use the rescaled dynamics (rescaled=True; --rescaled on the command line)")

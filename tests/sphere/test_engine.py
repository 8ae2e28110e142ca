"""The sphere engine: tokens stay on the sphere, exact solutions, convergence orders, a naive reference."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import attndyn.sphere as sp
from attndyn import InputError
from attndyn.sphere._field import Heads, SphereAttention

TANH_1 = math.tanh(1.0)


def unit_tokens(rng: np.random.Generator, *shape: int) -> np.ndarray:
    x = rng.standard_normal(shape)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def naive_velocity(x: np.ndarray, A: np.ndarray, V: np.ndarray, beta: float, model: str, causal: bool) -> np.ndarray:
    """The field written token by token, straight from the equation (no batching, no masks but the causal one)."""
    n = len(x)
    out = np.zeros_like(x)
    for i in range(n):
        keys = range(i + 1) if causal else range(n)
        e = np.array([math.exp(beta * (A @ x[i]) @ x[j]) for j in keys])
        w = e / e.sum() if model == "sa" else e / n
        v = sum(w[k] * (V @ x[j]) for k, j in enumerate(keys))
        out[i] = v - (v @ x[i]) * x[i]
    return out


@pytest.mark.parametrize("model", ["sa", "usa"])
@pytest.mark.parametrize("causal", [False, True])
def test_the_field_equals_the_naive_equation(model, causal):
    rng = np.random.default_rng(1)
    x = unit_tokens(rng, 7, 3)
    A, V = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    dyn = SphereAttention(
        A=torch.tensor(A), V=torch.tensor(V), beta=torch.tensor([1.7], dtype=torch.float64), model=model, causal=causal
    )
    got = dyn(0.0, torch.tensor(x)[None])[0].numpy()
    np.testing.assert_allclose(got, naive_velocity(x, A, V, 1.7, model, causal), rtol=1e-12, atol=1e-13)


@pytest.mark.filterwarnings("ignore::attndyn.HypothesisWarning")  # steps beyond rk4's interval for random Q, K, V
@pytest.mark.parametrize("method", [m for m in sp.METHODS if m != "discrete"])
@pytest.mark.parametrize("model", ["sa", "usa"])
def test_tokens_stay_on_the_sphere_to_1e_12(method, model):
    rng = np.random.default_rng(2)
    x = unit_tokens(rng, 3, 9, 4)
    Q, K, V = (rng.standard_normal((4, 4)) for _ in range(3))
    traj = sp.evolve(
        x, time=1.0, beta=[0.0, 1.0, 4.0], attention=model, method=method, step=0.1, Q=Q, K=K, V=V, rtol=1e-5, atol=1e-7
    )
    assert traj.stats.stop_reason == "completed"
    assert float((torch.linalg.vector_norm(traj.ys, dim=-1) - 1).abs().max()) <= 1e-12


@pytest.mark.parametrize("norm", list(sp.NORMS))
def test_every_normalisation_keeps_the_tokens_on_the_sphere(norm):
    rng = np.random.default_rng(3)
    x = unit_tokens(rng, 2, 6, 3)
    traj = sp.evolve(x, time=5.0, beta=2.0, method="discrete", norm=norm, step=0.5, V=rng.standard_normal((3, 3)))
    assert float((torch.linalg.vector_norm(traj.ys, dim=-1) - 1).abs().max()) <= 1e-12
    assert not torch.equal(traj.ys[-1], traj.ys[0])  # the layers moved the tokens


@pytest.mark.parametrize(("method", "step"), [("rk4", 0.01), ("dopri5", 0.1), ("dopri8", 0.5)])
def test_two_orthogonal_tokens_at_beta_0_follow_tanh(method, step):
    """n = 2, beta = 0: <x_1, x_2> = tanh t exactly (gamma' = 1 - gamma^2)."""
    traj = sp.evolve([[1.0, 0.0], [0.0, 1.0]], time=2.0, beta=0.0, method=method, step=step, rtol=1e-11, atol=1e-13)
    g = (traj.tokens[:, 0] * traj.tokens[:, 1]).sum(-1).numpy()
    np.testing.assert_allclose(g, np.tanh(traj.times.numpy()), atol=1e-9)


@pytest.mark.parametrize(("n", "beta"), [(2, 0.0), (3, 1.0), (5, 4.0), (8, 9.0)])
def test_the_orthogonal_start_follows_the_gamma_ode(n, beta):
    """Engine (dopri5, tight tolerances) against scipy's solve_ivp on the gamma ODE, to the solvers' tolerance.
    (The grid states of an adaptive solve come from its quartic dense output, so the tolerance must keep its
    steps short: dopri8 at rtol 1e-11 takes steps long enough for the interpolant to err by 2e-8.)"""
    traj = sp.evolve(np.eye(n), time=4.0, beta=beta, method="dopri5", step=0.25, rtol=1e-12, atol=1e-14)
    rep = sp.orthogonal_start_report(traj, tol=1e-8)
    assert rep.applies and rep.holds, rep.error
    assert rep.error > 0  # measured, not assumed


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize(
    ("beta", "levels"), [(5.0, (0.1, 0.5, 0.9)), (30.0, (0.01, 0.1, 0.3)), (40.0, (0.01, 0.1, 0.3))]
)
def test_the_usa_orthogonal_start_follows_gamma_at_large_beta(n, beta, levels):
    """USA, Q = K = V = I, from e_1..e_n: the engine reaches gamma = level at the time gamma_crossing gives. The
    self-term w_ii x_i (normal to the sphere, e^beta / n) was summed with the others before the projection, and its
    rounding, about e^beta 1e-16, was the velocity from beta ~ 30 on: at beta = 40 gamma(0.005) came out 1.9e-7
    for 0.0056 (and dopri5 ran out of steps). Levels where gamma's time is well conditioned (at beta = 40 and
    gamma = 0.5 a relative 1e-12 in t moves gamma by 1e-5)."""
    for level in levels:
        T = sp.gamma_crossing(n, beta, level, 10.0, attention="usa")
        run = sp.evolve(np.eye(n), time=T, beta=beta, attention="usa", method="dopri5", step=T, rtol=1e-10,
                        atol=1e-12, save=sp_save(), max_steps=20_000)  # fmt: skip
        assert run.stats.stop_reason == "completed", run.stats.message
        x = run.final_tokens.numpy()
        gram = (x @ x.T)[~np.eye(n, dtype=bool)]
        np.testing.assert_allclose(gram, level, rtol=1e-5, atol=0)
        if beta <= 30:  # the same against the ODE's curve
            assert sp.gamma_curve([0.0, T], n, beta, attention="usa")[-1] == pytest.approx(level, rel=1e-7)


def exact_velocity(y, A, V, beta, model, mask, causal):
    """The field at x_i = y_i / |y_i| in 50-digit arithmetic (mpmath), each pair's term w_ij P^perp_{x_i}(V x_j)
    formed on its own; padding tokens get 0."""
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 50
    n, d = y.shape
    mp = lambda row: [mpmath.mpf(float(v)) for v in row]  # noqa: E731  # exact: float64 -> mpf
    xs = [[v / mpmath.sqrt(mpmath.fsum(u * u for u in r)) for v in r] for r in (mp(row) for row in y)]
    apply = lambda M, v: v if M is None else [mpmath.fdot(mp(r), v) for r in M]  # noqa: E731
    real = [True] * n if mask is None else [bool(m) for m in mask]
    out = np.zeros((n, d))
    for i in (i for i in range(n) if real[i]):
        keys = [j for j in range(n) if real[j] and (not causal or j <= i)]
        ax = apply(A, xs[i])
        e = {j: mpmath.exp(mpmath.mpf(float(beta)) * mpmath.fdot(ax, xs[j])) for j in keys}
        z = mpmath.fsum(e.values()) if model == "sa" else sum(real)
        acc = [mpmath.mpf(0)] * d
        for j in keys:
            vx = apply(V, xs[j])
            c = mpmath.fdot(xs[i], vx)
            acc = [a + e[j] / z * (v - c * xi) for a, v, xi in zip(acc, vx, xs[i], strict=True)]
        out[i] = [float(a) for a in acc]
    return out


def _large_beta_case(seed=5, B=3, n=6, d=8):
    """Near-orthogonal unit tokens (d = 8), per-sequence A = I + 0.2 R, V's, betas about 30 and a padding mask."""
    rng = np.random.default_rng(seed)
    y = unit_tokens(rng, B, n, d)
    R = rng.standard_normal((B, d, d)) / math.sqrt(d)
    A = {"I": None, "I+R": np.eye(d) + 0.2 * R}
    V = {"I": None, "I+1e-6R": np.eye(d) + 1e-6 * R[[2, 0, 1]], "R": R[[1, 2, 0]]}
    mask = np.ones((B, n), bool)
    mask[1, [0, 3]] = mask[2, 5] = False
    return y, A, V, mask, np.array([30.0, 27.0, 33.0])


@pytest.mark.parametrize(("model", "causal", "masked", "a"), [
    ("usa", False, False, "I"), ("usa", False, True, "I+R"), ("usa", True, False, "I+R"), ("usa", True, True, "I"),
    ("sa", False, False, "I"), ("sa", True, False, "I+R"), ("sa", True, True, "I"),
])  # fmt: skip
@pytest.mark.parametrize("v", ["I", "I+1e-6R", "R"])
def test_the_field_equals_an_exact_reference_at_large_beta(model, causal, masked, a, v):
    """Every path that forms the weights (USA; causal SA; SA with A = I, the identity path) against the field in
    50 digits, beta ~ 30, to 1e-12 of each token's velocity: the self-term is taken apart (for V = I it is 0; for
    V = I + 1e-6 R, (V - I) x_i keeps its digits). Summed first, its rounding was up to the whole velocity."""
    y, As, Vs, mask, betas = _large_beta_case()
    A, V, m = As[a], Vs[v], (mask if masked else None)
    t = lambda M: None if M is None else torch.tensor(M)  # noqa: E731
    dyn = SphereAttention(A=t(A), V=t(V), beta=torch.tensor(betas), model=model, mask=t(m), causal=causal)
    assert model == "usa" or causal or dyn._identity_sa  # the paths that split the self-term
    got = dyn(0.0, torch.tensor(y)).numpy()
    for b in range(len(y)):
        ref = exact_velocity(y[b], None if A is None else A[b], None if V is None else V[b], betas[b], model,
                             None if m is None else m[b], causal)  # fmt: skip
        err = np.linalg.norm(got[b] - ref, axis=-1)
        assert (err <= 1e-12 * np.linalg.norm(ref, axis=-1) + 1e-30).all(), (b, err / np.linalg.norm(ref, axis=-1))
        if m is not None:
            assert (got[b][~m[b]] == 0).all()  # padding does not move


def test_the_fused_sa_path_keeps_its_documented_limit_and_heads_split_each_self_term():
    """SA with a given A (no causal mask) keeps the fused kernel, which forms no weights: its velocity's error is
    about 1e-16 max_j |V x_j| per token, as SphereAttention.velocity says. Several heads: each head's self-term
    apart, so USA heads at beta ~ 30 meet the 50-digit sum of the heads' fields."""
    y, As, Vs, mask, betas = _large_beta_case(seed=6)
    A = torch.tensor(As["I+R"])
    got = SphereAttention(A=A, V=None, beta=torch.tensor(betas), model="sa")(0.0, torch.tensor(y)).numpy()
    for b in range(len(y)):
        err = np.abs(got[b] - exact_velocity(y[b], As["I+R"][b], None, betas[b], "sa", None, False)).max()
        assert err <= 16 * np.finfo(np.float64).eps
    heads = Heads(tuple(SphereAttention(A=None if M is None else torch.tensor(M), V=None if W is None else torch.tensor(W),
                                        beta=torch.tensor(betas), model="usa", mask=torch.tensor(mask))
                        for M, W in ((As["I"], Vs["I"]), (As["I+R"], Vs["I+1e-6R"]))))  # fmt: skip
    got = heads(0.0, torch.tensor(y)).numpy()
    for b in range(len(y)):
        ref = exact_velocity(y[b], None, None, betas[b], "usa", mask[b], False) + exact_velocity(
            y[b], As["I+R"][b], Vs["I+1e-6R"][b], betas[b], "usa", mask[b], False
        )
        err = np.linalg.norm(got[b] - ref, axis=-1)
        assert (err <= 1e-12 * np.linalg.norm(ref, axis=-1) + 1e-30).all()


def _final(x, method, step, T=1.0, **kw):
    return sp.evolve(x, time=T, beta=2.0, method=method, step=step, save=sp_save(), **kw).final_tokens


def sp_save():
    from attndyn import SaveAt

    return SaveAt(every=None)


@pytest.mark.parametrize(("method", "order"), [("euler", 1), ("midpoint", 2), ("heun", 2), ("rk4", 4)])
def test_measured_convergence_order(method, order):
    rng = np.random.default_rng(4)
    x = unit_tokens(rng, 6, 3)
    V = rng.standard_normal((3, 3))
    ref = _final(x, "dopri8", 0.5, rtol=1e-13, atol=1e-14, V=V)
    steps = [0.1, 0.05] if order < 4 else [0.2, 0.1]
    err = [float((_final(x, method, h, V=V) - ref).abs().max()) for h in steps]
    measured = math.log2(err[0] / err[1])
    assert abs(measured - order) < 0.3, (err, measured)


def test_post_ln_layers_converge_to_sa_at_order_one():
    """N(x + h Attn(x)) = x + h P_x^perp Attn(x) + O(h^2): post-LN layers are a first-order scheme for SA."""
    rng = np.random.default_rng(5)
    x = unit_tokens(rng, 5, 3)
    ref = _final(x, "dopri8", 0.5, rtol=1e-13, atol=1e-14)
    err = [float((_final(x, "discrete", h) - ref).abs().max()) for h in (0.02, 0.01)]
    assert abs(math.log2(err[0] / err[1]) - 1) < 0.2


def test_post_ln_is_the_authors_step():
    """The post-LN layer equals one step of the authors' phase-diagram loop, written out in numpy."""
    rng = np.random.default_rng(6)
    x = unit_tokens(rng, 4, 10, 2)
    betas = np.array([0.1, 1.0, 3.0, 9.0])
    traj = sp.evolve(x, time=0.3, beta=betas, method="discrete", step=0.1)
    m = x.copy()
    for _ in range(3):
        s = betas[:, None, None] * m @ m.transpose(0, 2, 1)
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        m2 = m + 0.1 * (p @ m)
        m = m2 / np.linalg.norm(m2, axis=-1, keepdims=True)
    np.testing.assert_allclose(traj.final_tokens.numpy(), m, rtol=0, atol=1e-14)


@pytest.mark.filterwarnings("ignore::attndyn.HypothesisWarning")  # beta = 6: beyond rk4's interval; equal all the same
def test_beta_per_sequence_equals_separate_runs():
    rng = np.random.default_rng(7)
    x = unit_tokens(rng, 3, 5, 3)
    betas = [0.5, 2.0, 6.0]
    together = sp.evolve(x, time=2.0, beta=betas, attention="usa").final_tokens
    for b, beta in enumerate(betas):
        alone = sp.evolve(x[b], time=2.0, beta=beta, attention="usa").final_tokens
        torch.testing.assert_close(together[b], alone, rtol=0, atol=1e-14)
    assert together.shape == (3, 5, 3)


def test_causal_tokens_see_only_the_past():
    """Token i attends to j <= i: the first token never moves (V = I), and changing the last token changes
    no other."""
    rng = np.random.default_rng(8)
    x = unit_tokens(rng, 6, 3)
    y = x.copy()
    y[-1] = unit_tokens(rng, 3)
    a = sp.evolve(x, time=3.0, beta=1.0, causal=True).tokens
    b = sp.evolve(y, time=3.0, beta=1.0, causal=True).tokens
    torch.testing.assert_close(a[:, 0], a[:1, 0].expand_as(a[:, 0]), rtol=0, atol=1e-15)
    torch.testing.assert_close(a[:, :-1], b[:, :-1], rtol=0, atol=0)
    assert not torch.equal(a[-1, 1:], sp.evolve(x, time=3.0, beta=1.0).tokens[-1, 1:])


def test_padding_neither_moves_nor_is_attended():
    rng = np.random.default_rng(9)
    x = unit_tokens(rng, 5, 3)
    masked = sp.evolve(x, time=2.0, beta=1.0, mask=[True, True, True, False, False]).tokens
    short = sp.evolve(x[:3], time=2.0, beta=1.0).tokens
    torch.testing.assert_close(masked[:, :3], short, rtol=0, atol=1e-14)
    torch.testing.assert_close(masked[:, 3:], masked[:1, 3:].expand_as(masked[:, 3:]), rtol=0, atol=0)


def test_noise_is_seeded_and_stays_on_the_sphere():
    rng = np.random.default_rng(10)
    x = unit_tokens(rng, 8, 3)
    run = lambda seed: sp.evolve(x, time=1.0, beta=1.0, method="euler", step=0.01, noise=0.5, seed=seed).tokens
    a, b, c = run(0), run(0), run(1)
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert float((torch.linalg.vector_norm(a, dim=-1) - 1).abs().max()) <= 1e-12
    still = sp.evolve(x, time=1.0, beta=1.0, method="euler", step=0.01).tokens
    assert float((a - still).abs().max()) > 0.05  # the noise moved the tokens


def test_large_beta_sa_is_finite():
    """SA's softmax is computed stably: beta = 1e6 gives finite tokens (a near-hardmax)."""
    rng = np.random.default_rng(11)
    traj = sp.evolve(unit_tokens(rng, 6, 3), time=1.0, beta=1e6, step=1e-3 * 1.0, method="euler")
    assert bool(torch.isfinite(traj.ys).all())


def test_stop_on_convergence_stops_a_collapsed_run():
    from attndyn import StopOnConvergence

    rng = np.random.default_rng(12)
    traj = sp.evolve(unit_tokens(rng, 5, 3), time=200.0, beta=1.0, stop=StopOnConvergence(rtol=1e-9))
    assert traj.stats.stop_reason == "converged" and traj.stats.steps < 2000
    assert len(sp.sphere_clusters(traj.final_tokens, 1e-6)) == 1


@pytest.mark.parametrize("method", ["rk4", "dopri5", "discrete"])
def test_float32_runs_stay_on_the_sphere_to_its_rounding(method):
    rng = np.random.default_rng(13)
    traj = sp.evolve(unit_tokens(rng, 2, 6, 3), time=2.0, beta=[1.0, 3.0], method=method, dtype=torch.float32)
    assert traj.ys.dtype == torch.float32
    assert float((torch.linalg.vector_norm(traj.ys, dim=-1) - 1).abs().max()) <= 4 * torch.finfo(torch.float32).eps


@pytest.mark.filterwarnings(
    "ignore::attndyn.HypothesisWarning"
)  # one Euler step beyond its interval: exact all the same
def test_heads_are_summed_as_the_naive_equation_sums_them():
    rng = np.random.default_rng(14)
    x = unit_tokens(rng, 6, 3)
    Q, K, V = (rng.standard_normal((2, 3, 3)) for _ in range(3))
    traj = sp.evolve(x, time=0.01, beta=1.5, method="euler", step=0.01, Q=Q, K=K, V=V, attention="usa")
    v = sum(naive_velocity(x, K[h].T @ Q[h], V[h], 1.5, "usa", False) for h in range(2))
    expected = x + 0.01 * v
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(traj.final_tokens.numpy(), expected, rtol=0, atol=1e-14)
    one = sp.evolve(x, time=1.0, Q=Q[:1], K=K[:1], V=V[:1]).final_tokens
    torch.testing.assert_close(one, sp.evolve(x, time=1.0, Q=Q[0], K=K[0], V=V[0]).final_tokens, rtol=0, atol=0)
    with pytest.raises(
        InputError, match=r"V has 3 heads but another matrix has 3|Q has 2 heads but another matrix has 3"
    ):
        sp.evolve(x, time=1.0, Q=Q, K=K, V=rng.standard_normal((3, 3, 3)))


@pytest.mark.parametrize("model", ["sa", "usa"])
@pytest.mark.parametrize(("method", "norm"), [("euler", None), ("rk4", None), ("discrete", "post")])
def test_causal_with_padding_is_the_real_tokens_run_alone(model, method, norm):
    """Padding anywhere in a causal run changes nothing for the real tokens: each sequence of a padded causal batch
    ends where its real tokens alone end (padding is never attended; j <= i counts real tokens only), and padding
    does not move."""
    rng = np.random.default_rng(3)
    a, b = unit_tokens(rng, 5, 3), unit_tokens(rng, 3, 3)
    pad = unit_tokens(rng, 2, 3)
    batch = np.stack([a, np.concatenate([pad[:1], b[:2], pad[1:], b[2:]])])  # padding at 0 and 3 in sequence 1
    mask = np.array([[True] * 5, [False, True, True, False, True]])
    kw = {"time": 1.0, "beta": 2.0, "attention": model, "method": method, "norm": norm, "step": 0.05, "causal": True}
    both = sp.evolve(batch, mask=mask, **kw).final_tokens
    for seq, alone in ((0, a), (1, b)):
        want = sp.evolve(alone, **kw).final_tokens
        torch.testing.assert_close(both[seq][torch.as_tensor(mask[seq])], want, rtol=0, atol=1e-13)
    torch.testing.assert_close(both[1][torch.as_tensor(~mask[1])], torch.as_tensor(pad), rtol=0, atol=0)


@pytest.mark.parametrize("values", ["identity", "matrix"])
def test_the_identity_sa_path_equals_the_general_softmax_to_1e_12(values):
    """A = I, no mask, beta >= 0: the weights e^{beta(<x_i, x_j> - 1)} without a max pass, row sums from the same
    product, against the general path (A given as the identity matrix: the stable softmax)."""
    rng = np.random.default_rng(3)
    x = torch.tensor(unit_tokens(rng, 4, 11, 3))
    V = None if values == "identity" else torch.tensor(rng.standard_normal((3, 3)))
    beta = torch.tensor([0.0, 0.7, 9.0, 300.0], dtype=torch.float64)
    fused = SphereAttention(A=None, V=V, beta=beta)
    general = SphereAttention(A=torch.eye(3, dtype=torch.float64), V=V, beta=beta)
    assert fused._identity_sa and not general._identity_sa
    torch.testing.assert_close(fused.attend(x), general.attend(x), rtol=0, atol=1e-12)
    torch.testing.assert_close(fused(0.0, x), general(0.0, x), rtol=0, atol=1e-12)


def test_the_identity_sa_path_is_not_taken_for_negative_beta_masks_or_causal():
    beta = torch.tensor([1.0, -1.0], dtype=torch.float64)
    assert not SphereAttention(A=None, V=None, beta=beta)._identity_sa
    ok = torch.tensor([1.0, 2.0], dtype=torch.float64)
    assert not SphereAttention(A=None, V=None, beta=ok, causal=True)._identity_sa
    assert not SphereAttention(A=None, V=None, beta=ok, mask=torch.ones(2, 3, dtype=torch.bool))._identity_sa
    assert not SphereAttention(A=None, V=None, beta=ok, model="usa")._identity_sa


@pytest.mark.parametrize("dtype, size", [(torch.float64, 1e200), (torch.float64, 1e-200), (torch.float64, 1e-310),
                                         (torch.float32, 1e20), (torch.float32, 1e-25)])  # fmt: skip
def test_normalize_takes_tokens_of_any_size(dtype, size):
    traj = sp.evolve([[size, size], [1.0, 0.0]], time=1.0, normalize=True, dtype=dtype)
    ref = sp.evolve([[1.0, 1.0], [1.0, 0.0]], time=1.0, normalize=True, dtype=dtype)
    assert traj.stats.stop_reason == "completed"  # was NaN tokens (large) or "norm 0" (small)
    assert torch.allclose(traj.ys, ref.ys, rtol=0, atol=4 * torch.finfo(dtype).eps)


def test_retracting_tokens_is_dividing_by_their_norm_bit_for_bit():
    from attndyn.sphere._engine import _on_sphere
    from attndyn.sphere._field import unit

    x = torch.randn(50, 7, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    for y in (x / torch.linalg.vector_norm(x, dim=-1, keepdim=True) * (1 + 1e-12), 1e3 * x, 1e-3 * x):
        assert torch.equal(_on_sphere(y[None], True), unit(y[None]))  # the power-of-two scaling is exact


def test_a_layer_whose_stream_overflows_the_norm_still_gives_unit_tokens():
    """USA at beta = 400 through pre-LN layers: the stream grows past 1e154, whose squared norm overflowed, and
    the retraction returned tokens of zeros (cluster rank 0) as "completed"."""
    tr = sp.evolve(
        [[1.0, 0.0], [0.6, 0.8]], time=0.2, step=0.1, beta=400.0, attention="usa", method="discrete", norm="pre"
    )
    norms = torch.linalg.vector_norm(tr.ys, dim=-1)
    assert torch.allclose(norms, torch.ones_like(norms), atol=1e-12)
    assert int(np.asarray(sp.cluster_rank(tr.final_tokens, 0.1)).min()) >= 1

"""A causal mask on the R^d engines (issue 32): token i attends to tokens j <= i only, composed with padding.

The engines are tested against the deliberately naive loops of :mod:`tests.core.naive` run token by token
with the same mask; then the exact facts a causal mask implies: token 0 follows only itself (hardmax: it never
moves and leads from layer 0; softmax: x_0(t) = e^{tV} x_0, and the rescaled z_0 never moves), and the first k
tokens of a run do not depend on the tokens after them. The analysis refuses, or reports undecided, what is
stated for the full attention.
"""

import json
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import attndyn
from attndyn import InputError, analysis, attention, margins
from attndyn._hardmax import hardmax_step
from attndyn.cli import main

from . import naive

pytestmark = pytest.mark.smoke  # part of the quick subset: pytest -m smoke


def instance(seed, B, n, d, *, spd, pad, duplicates=True):
    """Tokens (B, n, d) with exact copies (ties), an SPD A or None, a padding mask (or None)."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((B, n, d))
    if duplicates and n >= 3:
        z[:, : n // 3] = z[:, n - n // 3 :]  # later tokens copy earlier ones: ties within a prefix
    A = None
    if spd:
        M = rng.standard_normal((d, d))
        A = M @ M.T + np.eye(d)
    mask = None
    if pad:
        mask = rng.random((B, n)) > 0.25  # padding anywhere, position 0 included
        mask[np.arange(B), rng.integers(0, n, B)] = True  # every sequence keeps a real token
    return z, A, mask


def naive_run(z, A, mask, alpha, layers):
    """The naive loop per sequence, causal, as a (layers + 1, B, n, d) array."""
    out = []
    for b in range(z.shape[0]):
        m = None if mask is None else mask[b].tolist()
        out.append(naive.hardmax(z[b].tolist(), alpha, layers, None if A is None else A.tolist(), m, causal=True))
    return np.array(out).transpose(1, 0, 2, 3)


# ---- the single composition -----------------------------------------------------------------------


def test_allowed_composes_padding_and_the_causal_mask():
    mask = torch.tensor([[True, False, True, True], [False, True, True, False]])
    keep = attention.allowed(mask, 4, causal=True)
    for b in range(2):
        for i in range(4):
            for j in range(4):
                want = (bool(mask[b, j]) and j <= i) or (i == j)  # a padding query keeps its own key: no empty row
                assert bool(keep[b, i, j]) == want
    assert torch.equal(attention.allowed(None, 4, causal=True)[0], attention.causal_mask(4))
    assert attention.allowed(None, 4) is None and torch.equal(attention.allowed(mask, 4), mask[:, None, :])
    rows = attention.allowed(mask, 4, causal=True, rows=slice(2, 4))
    assert torch.equal(rows, keep[:, 2:4])  # a chunk of query rows sees the positions of the whole sequence


def test_the_sphere_uses_the_same_causal_mask():
    from attndyn import sphere

    assert sphere.causal_mask is attention.causal_mask


# ---- hardmax against the naive loop ---------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 3),
    st.integers(1, 19),
    st.sampled_from([2, 3, 5]),
    st.booleans(),
    st.booleans(),
)
def test_causal_hardmax_equals_the_naive_loop_bit_for_bit(seed, B, n, d, spd, pad):
    """Planar and dense d, batches, padding anywhere, exact copies (ties): every layer, every bit."""
    z, A, mask = instance(seed, B, n, d, spd=spd, pad=pad)
    traj = attndyn.hardmax(z, alpha=0.7, layers=5, A=A, mask=mask, causal=True, check_hypotheses=False)
    assert np.array_equal(traj.ys.numpy(), naive_run(z, A, mask, 0.7, 5))
    for b in range(B):  # the leaders, each certified by its margin over j < i and its bound over j <= i
        m = None if mask is None else mask[b].tolist()
        want = naive.hardmax_leaders(z[b].tolist(), 0.7, 4, None if A is None else A.tolist(), m, causal=True)
        since = traj.leader_since[b]
        assert {i: int(since[i]) for i in range(n) if since[i] >= 0 and since[i] <= 4} == want


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("pad", [False, True])
def test_torch_path_equals_the_kernel_follow_sets_leaders_and_margins(d, pad):
    """The differentiable torch path and the compiled kernel: the same follow sets, leaders, margins and
    rounding bounds under the causal mask; the same tokens up to the last bit of a tie's mean."""
    z, A, mask = instance(d, 4, 13, d, spd=True, pad=pad)
    kw = dict(alpha=0.5, layers=6, A=A, mask=mask, causal=True, check_hypotheses=False)
    fast = attndyn.hardmax(z, save=attndyn.SaveAt(follow=True), **kw)
    slow = attndyn.hardmax(torch.tensor(z).requires_grad_(True), save=attndyn.SaveAt(follow=True), **kw)
    assert torch.equal(fast.follow, slow.follow)
    assert torch.equal(fast.leader_since, slow.leader_since)
    assert torch.equal(fast.leader_mask, slow.leader_mask)
    assert torch.equal(fast.leader_margin.isnan(), slow.leader_margin.isnan())
    led = ~fast.leader_margin.isnan()  # the torch path's margins are summed in another order: rounding apart
    torch.testing.assert_close(fast.leader_margin[led], slow.leader_margin[led], rtol=1e-12, atol=1e-13)
    assert torch.allclose(fast.ys, slow.ys.detach(), rtol=0, atol=1e-15)
    upper = torch.ones(13, 13, dtype=torch.bool).triu(1)
    assert not bool(fast.follow[:, :, upper].any())  # nobody follows a later token


@pytest.mark.parametrize("d", [2, 4])
def test_follow_sets_of_one_layer_are_the_argmax_over_the_allowed_keys(d):
    z, A, mask = instance(11, 3, 10, d, spd=False, pad=True)
    zt = torch.tensor(z)
    mt = torch.tensor(mask)
    step = hardmax_step(zt, alpha=1.0, mask=mt, record_follow=True, causal=True)
    for b in range(3):
        for i in range(10):
            if not mask[b, i]:
                assert not step.follow[b, i].any() and torch.equal(step.tokens[b, i], zt[b, i])
                continue
            s = [float(zt[b, i] @ zt[b, j]) if mask[b, j] and j <= i else -math.inf for j in range(10)]
            assert step.follow[b, i].tolist() == [v == max(s) for v in s]


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("tol", [0.0, 0.3])
def test_kernel_and_torch_layers_agree_on_half_integer_tokens_with_a_tolerance(d, tol):
    """Many exact ties (half-integer coordinates) and a tie tolerance: one causal layer, both paths."""
    rng = np.random.default_rng(d)
    z = torch.from_numpy(rng.integers(-2, 3, size=(9, 13, d)) / 2)
    mask = torch.from_numpy(rng.random((9, 13)) > 0.2)
    mask[:, 3] = True
    fast = hardmax_step(z, alpha=0.5, mask=mask, tol=tol, record_follow=True, causal=True)
    slow = hardmax_step(z.clone().requires_grad_(True), alpha=0.5, mask=mask, tol=tol, record_follow=True, causal=True)
    assert torch.equal(fast.follow, slow.follow) and torch.equal(fast.leader, slow.leader)
    assert torch.equal(fast.tokens, slow.tokens.detach())
    s = attention.scores(z, exact=True)
    want = attention.follow_sets(s, mask, tol=tol, causal=True) & mask[:, :, None]  # padding queries follow nobody
    assert torch.equal(fast.follow, want)


# ---- exact facts ---------------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 12), st.sampled_from([2, 3]), st.floats(0.05, 5.0), st.booleans())
def test_the_first_real_token_never_moves_and_leads_from_layer_0(seed, n, d, alpha, spd):
    z, A, mask = instance(seed, 2, n, d, spd=spd, pad=True, duplicates=False)
    traj = attndyn.hardmax(z, alpha=alpha, layers=8, A=A, mask=mask, causal=True, check_hypotheses=False)
    for b in range(2):
        first = int(np.flatnonzero(mask[b])[0])  # it sees only itself
        assert bool((traj.ys[:, b, first] == torch.tensor(z[b, first])).all())
        assert int(traj.leader_since[b, first]) == 0 and math.isinf(float(traj.leader_margin[b, first]))
        assert bool(traj.leader_mask[:, b, first].all())


def test_two_tokens_the_second_follows_the_first_when_its_score_is_larger():
    # <z_1, z_0> = 2 > <z_1, z_1> = 1: token 1 moves halfway (alpha = 1) to token 0, which sees only itself.
    z = [[2.0, 0.0], [1.0, 0.0]]
    traj = attndyn.hardmax(z, alpha=1.0, layers=1, causal=True)
    assert traj.final_tokens.tolist() == [[2.0, 0.0], [1.5, 0.0]]
    assert attndyn.leaders(traj).indices == (0,)


def test_causal_mask_changes_whom_a_token_follows():
    # Token 0 = (1, 0) would follow token 1 = (2, 0) under the full attention; under the mask it cannot see it.
    z = [[1.0, 0.0], [2.0, 0.0]]
    full = attndyn.hardmax(z, alpha=1.0, layers=1)
    causal = attndyn.hardmax(z, alpha=1.0, layers=1, causal=True)
    assert full.final_tokens.tolist() == [[1.5, 0.0], [2.0, 0.0]]
    assert causal.final_tokens.tolist() == [[1.0, 0.0], [2.0, 0.0]]
    assert attndyn.leaders(full).indices == (1,) and attndyn.leaders(causal).indices == (0, 1)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 16), st.sampled_from([2, 3]))
def test_a_prefix_runs_the_same_alone(seed, n, d):
    """The first k tokens never see the others: running them alone gives the same bits and the same leaders."""
    z, A, _ = instance(seed, 1, n, d, spd=True, pad=False)
    k = 1 + seed % (n - 1)
    full = attndyn.hardmax(z, alpha=0.6, layers=6, A=A, causal=True, check_hypotheses=False)
    head = attndyn.hardmax(z[:, :k], alpha=0.6, layers=6, A=A, causal=True, check_hypotheses=False)
    assert torch.equal(full.ys[:, :, :k], head.ys)
    assert torch.equal(full.leader_since[:, :k], head.leader_since)


def test_leader_margins_over_the_allowed_keys_match_the_naive_bound():
    z, A, mask = instance(5, 2, 9, 3, spd=True, pad=True)
    zt, At, mt = torch.tensor(z), torch.tensor(A), torch.tensor(mask)
    b, i = torch.nonzero(mt, as_tuple=True)
    compiled = margins.leader_margins(zt, At, mt, b, i, causal=True)  # the compiled loop (float64, CPU)
    plain = margins.leader_margins(zt, At, mt, b, i)  # the full attention
    torch_path = margins.leader_margins(zt.float(), At.float(), mt, b, i, causal=True)  # the torch loop (float32)
    for p, (bb, ii) in enumerate(zip(b.tolist(), i.tolist())):
        mu, bound = naive.leader_margin(z[bb].tolist(), ii, A.tolist(), mask[bb].tolist(), causal=True)
        assert float(compiled[0][p]) == pytest.approx(mu, rel=1e-12, abs=1e-12) or (
            math.isinf(mu) and math.isinf(float(compiled[0][p]))
        )
        assert float(compiled[1][p]) == pytest.approx(bound, rel=1e-12, abs=0)  # bounds are ~1e-15: no abs slack
        f32 = bound * 2.0**29 * (1 - 7 * 2.0**-53) / (1 - 7 * 2.0**-24)  # gamma_7 of float32 over float64's
        assert float(torch_path[1][p]) == pytest.approx(f32, rel=1e-5, abs=0)
        assert float(torch_path[0][p]) == pytest.approx(mu, rel=1e-5, abs=1e-5) or math.isinf(mu)
    first = [p for p, (bb, ii) in enumerate(zip(b.tolist(), i.tolist())) if ii == int(np.flatnonzero(mask[bb])[0])]
    assert all(math.isinf(float(compiled[0][p])) for p in first)  # no competitor before the first real token
    assert not all(math.isinf(float(plain[0][p])) for p in first)  # the full attention has competitors


@pytest.mark.parametrize("path", ["kernel", "torch"])
def test_a_rounding_event_is_bounded_over_the_keys_the_token_sees(path):
    """Token 1 sits on token 0 to within an ulp: it follows only itself by a margin within the rounding bound
    (a rounding event, not a leader). Under the causal mask its bound takes M over tokens 0 and 1 only: the
    large token 2 after it, which it cannot see, does not widen it."""
    z = torch.tensor([[1.0, 1.0], [1.0, 1.0 + 2.0**-52], [100.0, 0.0]], dtype=torch.float64)
    traj = attndyn.hardmax(z.requires_grad_(path == "torch"), alpha=0.5, layers=1, causal=True)
    events = [ev for ev in attndyn.leaders(traj).rounding if ev.index == 1 and ev.layer == 0]
    assert len(events) == 1 and 1 not in attndyn.leaders(traj).indices
    mu, bound = naive.leader_margin(z.tolist(), 1, causal=True)
    assert events[0].margin == pytest.approx(mu, rel=1e-12, abs=0)
    assert events[0].bound == pytest.approx(bound, rel=1e-12, abs=0)
    assert bound < naive.leader_margin(z.tolist(), 1)[1] / 10  # the full attention's M would count token 2


def test_causal_must_be_a_bool():
    with pytest.raises(InputError, match="causal must be True or False, got 'yes'"):
        attndyn.hardmax([[1.0, 0.0]], layers=1, causal="yes")
    with pytest.raises(InputError, match="causal must be True or False, got 1"):
        attndyn.softmax([[1.0, 0.0]], time=1.0, causal=1)


def test_the_unmasked_run_records_causal_false():
    traj = attndyn.hardmax([[1.0, 0.0], [0.0, 1.0]], layers=1)
    assert traj.params.causal is False
    assert attndyn.softmax([[1.0, 0.0]], time=0.1).params.causal is False


# ---- softmax against the naive loop ----------------------------------------------------------------


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("pad", [False, True])
def test_causal_softmax_equals_the_naive_euler_loop(d, pad):
    rng = np.random.default_rng(d + 10 * pad)
    B, n = 3, 7
    x = rng.standard_normal((B, n, d))
    Q, K, V = (rng.standard_normal((d, d)) for _ in range(3))
    mask = rng.random((B, n)) > 0.3 if pad else None
    traj = attndyn.softmax(
        x, time=0.5, Q=Q, K=K, V=V, beta=1.3, method="euler", step=0.05, mask=mask, causal=True
    )  # fmt: skip
    for b in range(B):
        m = None if mask is None else mask[b].tolist()
        ref = naive.softmax_euler(x[b].tolist(), Q.tolist(), K.tolist(), V.tolist(), 0.05, 10, 1.3, m, causal=True)
        assert np.allclose(traj.final_tokens[b].numpy(), np.array(ref), rtol=0, atol=1e-12)


def test_softmax_attention_fused_chunked_and_weights_agree_under_the_causal_mask():
    rng = np.random.default_rng(3)
    x = torch.tensor(rng.standard_normal((3, 11, 4)))
    mask = torch.tensor(rng.random((3, 11)) > 0.3)
    mask[0, 0] = False  # a padding query at position 0: its row is never empty (no NaN)
    for m in (None, mask):
        fused = attention.softmax_attention(x, x, x, m, beta=0.7, causal=True)
        chunked = attention.softmax_attention(x, x, x, m, beta=0.7, causal=True, block=40)  # rows of 3 or 4
        weights = attention.softmax_weights(attention.scores(x), m, beta=0.7, causal=True)
        assert torch.isfinite(fused).all() and torch.isfinite(weights).all()
        assert torch.allclose(fused, chunked, atol=1e-14) and torch.allclose(fused, weights @ x, atol=1e-14)
        assert not bool(weights.triu(1).any())  # nobody attends a later token
        if m is not None:  # padding keys get weight 0 (a padding query keeps its own key; its row is discarded)
            assert bool((weights[~m[:, None, :].expand(-1, 11, -1) & ~torch.eye(11, dtype=torch.bool)] == 0).all())


def test_softmax_first_token_solves_the_linear_ode_and_its_rescaled_form_never_moves():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 2))
    V = np.array([[0.5, -1.0], [1.0, 0.3]])
    traj = attndyn.softmax(x, time=1.0, V=V, step=0.01, causal=True)
    exact = torch.linalg.matrix_exp(torch.tensor(V)) @ torch.tensor(x[0])
    assert torch.allclose(traj.final_tokens[0], exact, rtol=0, atol=1e-9)  # rk4, step 0.01: error h^4
    alone = attndyn.softmax(x[:1], time=1.0, V=V, step=0.01)  # n = 1: P = 1
    assert torch.equal(traj.final_tokens[0], alone.final_tokens[0])
    z = attndyn.softmax(x, time=1.0, V=V, step=0.1, causal=True, rescaled=True)
    assert bool((z.ys[:, 0, 0] == torch.tensor(x[0])).all())  # sum_j P_0j V (z_j - z_0) = V (z_0 - z_0) = 0
    assert int(z.leader_since[0, 0]) == 0  # it attends only to itself


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 9), st.sampled_from(["rk4", "discrete", "euler"]))
def test_softmax_rescaled_first_real_token_never_moves(seed, n, method):
    """The first real token attends only to itself: under the rescaled dynamics (eq. (4), Remark 4) its velocity
    sum_j P_ij V (z_j - z_i) is exactly 0, with padding anywhere and any V."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, n, 2))
    V = rng.standard_normal((2, 2))
    mask = rng.random((2, n)) > 0.3
    mask[:, -1] = True
    traj = attndyn.softmax(x, time=0.5, V=V, step=0.1, method=method, rescaled=True, mask=mask, causal=True)
    for b in range(2):
        first = int(np.flatnonzero(mask[b])[0])
        assert bool((traj.ys[:, b, first] == torch.tensor(x[b, first])).all())


@pytest.mark.parametrize("method", ["rk4", "discrete", "dopri5"])
def test_softmax_prefix_runs_the_same_alone(method):
    x = np.random.default_rng(2).standard_normal((9, 3))
    full = attndyn.softmax(x, time=1.0, method=method, step=0.1, causal=True, save=attndyn.SaveAt(every=None))
    head = attndyn.softmax(x[:4], time=1.0, method=method, step=0.1, causal=True, save=attndyn.SaveAt(every=None))
    tol = 1e-12 if method != "dopri5" else 1e-6  # the adaptive steps depend on every token's error
    assert torch.allclose(full.final_tokens[:4], head.final_tokens, rtol=0, atol=tol)


def test_softmax_attention_matrices_and_gradients_under_the_causal_mask():
    x = torch.tensor(np.random.default_rng(4).standard_normal((5, 2)), requires_grad=True)
    traj = attndyn.softmax(x, time=0.3, step=0.1, causal=True, save=attndyn.SaveAt(attention=True))
    assert not bool(traj.attention.triu(1).any()) and torch.allclose(traj.attention.sum(-1), torch.ones(1).double())
    traj.final_tokens[:3].sum().backward()  # the first 3 tokens never see the last 2: no gradient flows to them
    assert bool((x.grad[3:] == 0).all()) and bool((x.grad[:3] != 0).all())


# ---- the analysis: right, or refused / undecided ------------------------------------------------------


def test_hardmax_theorem_is_undecided_under_a_causal_mask():
    square = [[1, 1], [-1, 1], [-1, -1], [1, -1], [0.2, 0.1]]
    full = analysis.hardmax_theorem(attndyn.hardmax(square, alpha=0.5, layers=60))
    assert full.holds is True
    rep = analysis.hardmax_theorem(attndyn.hardmax(square, alpha=0.5, layers=60, causal=True))
    assert rep.holds is None and rep.verdict.startswith("undecided: Theorem 1.1 is stated for the full attention")
    assert "causal mask" in rep.undecided and 0 in rep.leaders.indices


def test_softmax_geometry_refuses_a_causal_run_in_one_line():
    traj = attndyn.softmax(np.random.default_rng(0).standard_normal((5, 2)), time=1.0, causal=True, rescaled=True)
    with pytest.raises(
        InputError, match=r"^softmax_geometry\(\) checks theorems stated for the full attention.*causal"
    ):
        analysis.softmax_geometry(traj)


def test_collapse_rate_refuses_a_causal_run():
    x = np.random.default_rng(0).standard_normal((6, 2))
    traj = attndyn.softmax(x, time=4.0, V=-np.eye(2), causal=True, save=attndyn.SaveAt(every=5))
    with pytest.raises(InputError, match=r"t\^\(-1/2\) rate derived for the full attention.*causal mask"):
        analysis.collapse_decay(traj)
    fit = analysis.radius_decay(traj.ts, traj.ys.abs().amax(dim=(1, 2, 3)))  # the measurement itself still runs
    assert fit.radius[-1] < fit.radius[0]


def test_follow_matrix_read_off_a_causal_state_is_the_recorded_one():
    z = np.random.default_rng(7).standard_normal((8, 2))
    kept = attndyn.hardmax(z, alpha=0.5, layers=4, causal=True, save=attndyn.SaveAt(follow=True))
    plain = attndyn.hardmax(z, alpha=0.5, layers=4, causal=True)
    for k in range(5):
        assert np.array_equal(analysis.follow_matrix(plain, k), analysis.follow_matrix(kept, k))
    soft = attndyn.softmax(z, time=1.0, causal=True)
    soft_kept = attndyn.softmax(z, time=1.0, causal=True, save=attndyn.SaveAt(attention=True))
    assert np.array_equal(analysis.follow_matrix(soft, -1), analysis.follow_matrix(soft_kept, -1))
    assert analysis.follow_matrix(soft, -1)[0].tolist() == [True] + [False] * 7


# ---- the command line ------------------------------------------------------------------------------


def test_cli_causal_flag(capsys, tmp_path):
    p = tmp_path / "square.npy"
    np.save(p, np.array([[1, 1], [-1, 1], [-1, -1], [1, -1], [0.2, 0.1]], dtype=float))
    assert main(["hardmax", str(p), "--causal", "--json", "--layers", "60"]) == 0
    out = capsys.readouterr().out
    assert "Infinity" not in out and "NaN" not in out  # strict JSON: every parser reads it
    rec = json.loads(out)
    assert rec["theorem"]["holds"] is None and "causal mask" in rec["theorem"]["undecided"]
    assert rec["leaders"][0] == {"index": 0, "since_layer": 0, "margin": None}  # no competitor before it: +inf
    assert rec["final_tokens"][0] == [1.0, 1.0]
    assert main(["softmax", str(p), "--causal", "--json", "--time", "1"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["theorem"]["holds"] is None and "causal mask" in rec["theorem"]["note"]
    assert main(["hardmax", str(p), "--causal"]) == 0
    assert "Theorem 1.1 is stated for the full attention" in capsys.readouterr().out

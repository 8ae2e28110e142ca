"""The adaptive solve (attndyn._adaptive over the embedded pairs of attndyn.solvers): tables, accuracy,
equality with torchdiffeq's public odeint, streaming, the whole-run step budget and where a solve fails."""

import math

import numpy as np
import pytest
import torch
from torchdiffeq import odeint

import attndyn
from attndyn._adaptive import AdaptiveFailure, AdaptiveSolve
from attndyn._dynamics import SoftmaxAttention
from attndyn.solvers import ADAPTIVE

V2 = torch.tensor([[0.5, -1.0], [1.0, 0.3]], dtype=torch.float64)


@pytest.mark.parametrize("name", ADAPTIVE)
def test_tables_are_consistent(name):
    """Row sums of a are the nodes c; b sums to 1 and b.c to 1/2 (order >= 2); the error weights sum to 0
    (both solutions are consistent); the mid-point weights sum to 1/2 (y(t0 + h/2) is consistent)."""
    tab = ADAPTIVE[name]
    for c, row in zip(tab.c, tab.a):
        assert math.isclose(sum(row), c, abs_tol=1e-9), (c, row)
    assert math.isclose(sum(tab.b), 1.0, abs_tol=1e-12)
    assert math.isclose(sum(b * c for b, c in zip(tab.b, tab.c)), 0.5, abs_tol=1e-9)
    assert abs(sum(tab.error)) < 1e-12
    assert math.isclose(sum(tab.mid), 0.5, abs_tol=1e-9)
    assert len(tab.c) == len(tab.a) == len(tab.b) == len(tab.error) == len(tab.mid)


@pytest.mark.parametrize("name", ADAPTIVE)
def test_steps_reach_their_tolerance(name):
    """y' = V y: y(t) = exp(tV) y0 at the end of every accepted step, to a small multiple of the
    tolerance (the local error is controlled, the global one accumulates); tighter is better."""
    y0 = torch.tensor([1.0, -0.5], dtype=torch.float64)
    errors = []
    for tol in (1e-4, 1e-7) if name != "adaptive_heun" else (1e-3, 1e-5):  # (second order: many steps)
        solve = AdaptiveSolve(lambda t, y: V2 @ y, y0, 0.0, ADAPTIVE[name], rtol=tol, atol=tol, max_steps=100_000)
        err = 0.0
        while solve.t1 < 2.0:
            solve._step()
            exact = torch.linalg.matrix_exp(solve.t1 * V2) @ y0
            err = max(err, float((solve.y - exact).abs().max()))
        assert err < 50 * tol, (tol, err)
        errors.append(err)
    assert errors[1] < errors[0] / 10, errors


@pytest.mark.parametrize("name", ["dopri5", "dopri8"])
def test_dense_output_is_exact_on_quartics(name):
    """y' = 4t^3: the steps are exact (order >= 4) and so is the quartic read between them, whatever
    the step sizes (large here: the error estimate is 0, so every step grows tenfold)."""
    solve = AdaptiveSolve(lambda t, y: 4 * t**3 * torch.ones_like(y), torch.zeros(1, dtype=torch.float64), 0.0,
                          ADAPTIVE[name], rtol=1e-3, atol=1e-3, max_steps=100)  # fmt: skip
    for t in (0.13, 0.5, 0.77, 1.9, 3.0):
        assert math.isclose(float(solve.at(t)), t**4, rel_tol=1e-11), t


@pytest.mark.parametrize("name, tol", [("dopri5", 1e-7), ("bosh3", 1e-6), ("adaptive_heun", 1e-4)])
def test_equals_torchdiffeq_odeint(name, tol):
    """The same algorithm and arithmetic as torchdiffeq's public odeint: equal bits at every grid time. Its error
    norm is the RMS of each sequence, the largest over the batch (torchdiffeq's ``norm`` option)."""
    rng = np.random.default_rng(3)
    x = torch.tensor(rng.standard_normal((2, 6, 2)))
    V = torch.tensor(rng.standard_normal((2, 2)))
    traj = attndyn.softmax(x, time=1.5, V=V, beta=2.0, rescaled=True, method=name, step=0.25, rtol=tol, atol=tol)
    dyn = SoftmaxAttention(Q=traj.params.Q, K=traj.params.K, V=traj.params.V, beta=2.0, rescaled=True)
    grid = torch.arange(7, dtype=torch.float64) * 0.25
    per_sequence = {"norm": lambda e: e.abs().pow(2).mean(dim=(1, 2)).sqrt().amax()}
    ref = odeint(lambda t, y: dyn(float(t), y), x, grid, method=name, rtol=tol, atol=tol, options=per_sequence)
    assert torch.equal(traj.times, grid)
    assert torch.equal(traj.ys, ref)


def test_outputs_are_handed_out_as_they_are_reached():
    """A run stopped on convergence evaluates the field less than the whole solve, and its states are
    the whole solve's first states, bit for bit (one solve, read as it goes, never restarted)."""
    x = np.random.default_rng(4).standard_normal((6, 2))
    kw = dict(time=40.0, rescaled=True, method="dopri5", step=0.5)
    whole = attndyn.softmax(x, **kw)
    stopped = attndyn.softmax(x, stop=attndyn.StopOnConvergence(rtol=1e-4), **kw)
    assert stopped.stats.stop_reason == "converged"
    assert stopped.stats.function_evals < whole.stats.function_evals
    k = len(stopped.times)
    assert torch.equal(stopped.ys, whole.ys[:k])


def test_step_budget_is_for_the_whole_run_and_keeps_what_was_computed():
    """max_steps steps in all (6 evaluations each for dopri5, 2 to choose the first step), then a failure
    that says where: at the start of the step it could not take, with that step's size."""
    x = np.random.default_rng(5).standard_normal((6, 2))
    whole = attndyn.softmax(x, time=4.0, step=0.1, method="dopri5", rtol=1e-10, atol=1e-12)
    assert whole.stats.stop_reason == "completed"
    short = attndyn.softmax(x, time=4.0, step=0.1, method="dopri5", rtol=1e-10, atol=1e-12, max_steps=30)
    assert short.stats.stop_reason == "solver_failed"
    assert short.stats.function_evals == 2 + 6 * 30
    k = len(short.times)
    assert 1 < k < len(whole.times)
    assert torch.equal(short.ys, whole.ys[:k])  # the states reached before the failure, kept
    t, dt = short.stats.failed_at
    assert float(short.times[-1]) <= t < float(short.times[-1]) + 0.1 and 0 < dt < 0.1
    assert f"dopri5 failed at t={t:.6g} with dt={dt:.3g}: step budget exhausted (30 steps)" in short.stats.message


def test_failure_at_a_blow_up_says_where():
    """y' = y^2, y(0) = 1 blows up at t = 1: y(0.5) = 2, and the solve fails just there."""
    solve = AdaptiveSolve(lambda t, y: y * y, torch.ones(1, dtype=torch.float64), 0.0, ADAPTIVE["dopri5"],
                          rtol=1e-8, atol=1e-10, max_steps=100_000)  # fmt: skip
    assert abs(float(solve.at(0.5)) - 2.0) < 1e-6
    with pytest.raises(AdaptiveFailure, match="step size underflow") as info:
        solve.at(2.0)
    assert abs(info.value.t - 1.0) < 1e-6 and 0 < info.value.dt < 1e-12


def test_non_finite_field_fails_at_its_step():
    def field(t, y):
        return y if t < 0.5 else y * math.inf

    solve = AdaptiveSolve(field, torch.ones(2, dtype=torch.float64), 0.0, ADAPTIVE["dopri5"],
                          rtol=1e-6, atol=1e-8, max_steps=1000)  # fmt: skip
    assert torch.allclose(solve.at(0.1), torch.full((2,), math.exp(0.1), dtype=torch.float64), rtol=1e-5)
    with pytest.raises(AdaptiveFailure, match="error estimate is not finite") as info:
        solve.at(1.0)
    assert info.value.t < 0.5 < info.value.t + info.value.dt


@pytest.mark.parametrize("method", ["dopri5", "bosh3"])
def test_a_sequence_is_solved_to_the_same_accuracy_whatever_its_batch_mates(method):
    # calm sequences (every token the same: no velocity) used to dilute a batch-wide RMS error norm
    y = np.random.default_rng(0).standard_normal((6, 2))
    alone = attndyn.softmax(y, time=3.0, method=method).final_tokens
    for B in (10, 100):
        batch = np.concatenate([y[None], np.zeros((B - 1, 6, 2))])
        assert torch.equal(attndyn.softmax(batch, time=3.0, method=method).final_tokens[0], alone)


@pytest.mark.parametrize("npad", [99, 999])
def test_padding_does_not_loosen_the_tolerance(npad):
    """Padding neither moves nor is attended, and it no longer dilutes the error norm: one real token padded to
    100 or 1000 tokens is integrated as accurately, with the same evaluations, as alone (it was 10 and 43 times
    less accurate)."""
    x = np.zeros((1, 1 + npad, 1))
    x[0, 0, 0] = 1.0
    mask = np.zeros((1, 1 + npad), dtype=bool)
    mask[0, 0] = True
    alone = attndyn.softmax(x[:, :1], time=3.0, V=[[1.0]], method="dopri5", rtol=1e-6)
    padded = attndyn.softmax(x, time=3.0, V=[[1.0]], method="dopri5", rtol=1e-6, mask=mask)
    assert padded.stats.function_evals == alone.stats.function_evals
    assert torch.equal(padded.final_tokens[0, :1], alone.final_tokens[0])


@pytest.mark.parametrize("time", [1.5, 4.0])
def test_dopri8_meets_its_tolerance_at_every_output_time(time):
    """dopri8 ends a step on each output time: read through the quartic dense output (torchdiffeq's), its
    outputs missed rtol = 1e-7 by 500 times (5.1e-5 on y' = y at t = 1.5), the steps' ends being right."""
    traj = attndyn.softmax([[1.0]], time=time, V=[[1.0]], method="dopri8")
    exact = np.exp(traj.times.numpy())
    assert np.abs(traj.tokens.flatten().numpy() / exact - 1).max() < 1e-7
    x = np.random.default_rng(3).standard_normal((1, 4, 2))
    fine = attndyn.softmax(x, time=time, V=V2, method="dopri8", rtol=1e-12, atol=1e-12)
    coarse = attndyn.softmax(x, time=time, V=V2, method="dopri8")  # rtol = atol = 1e-7
    assert torch.allclose(coarse.ys, fine.ys, rtol=1e-6, atol=1e-6)

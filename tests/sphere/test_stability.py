"""The stability check of fixed-step schemes on the sphere (attndyn.sphere._stability): the intervals are the
schemes', the rate is the field's, and a run beyond the interval warns and leaves its verdicts undecided -- where a
run inside it agrees with an adaptive solve."""

import warnings

import numpy as np
import pytest
import torch

import attndyn.sphere as sp
from attndyn import HypothesisWarning
from attndyn.cli import main
from attndyn.solvers import STABILITY_INTERVAL, TABLEAUS
from attndyn.sphere._stability import field_rate, unstable_step


def _stability_function(tableau, z: float) -> float:
    """R(z) = 1 + z b^T (I - z A)^{-1} 1 of an explicit Runge-Kutta tableau (the step on y' = z y / h)."""
    b = np.asarray(tableau.b, dtype=float)
    s = len(b)
    A = np.zeros((s, s))
    for i, row in enumerate(tableau.a):  # the rows below the diagonal, row i of length i
        A[i, : len(row)] = row
    return float(1 + z * b @ np.linalg.solve(np.eye(s) - z * A, np.ones(s)))


@pytest.mark.parametrize("method", sorted(TABLEAUS))
def test_each_interval_is_the_schemes_own(method):
    bound = STABILITY_INTERVAL[method]
    assert abs(_stability_function(TABLEAUS[method], -bound)) <= 1 + 1e-9
    assert abs(_stability_function(TABLEAUS[method], -(bound + 0.01))) > 1  # the interval ends within 0.01
    assert set(STABILITY_INTERVAL) == set(TABLEAUS)


def _unit(n, d, seed=1):
    x = np.random.default_rng(seed).normal(size=(n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_the_rate_of_sa_is_the_norm_of_v_and_of_usa_grows_like_exp_beta():
    x = np.stack([_unit(4, 2)] * 2)  # two sequences: one per beta
    V = torch.tensor([[3.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    sa = sp.evolve(x, time=0.1, beta=[50.0, -2.0], V=V, attention="sa")  # a beta grid as one batch
    assert field_rate(sa.params).tolist() == pytest.approx([3.0, 3.0], rel=1e-12)  # no beta in SA's rate
    Q = torch.tensor([[2.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HypothesisWarning)
        usa = sp.evolve(x, time=0.1, beta=[1.5, -1.5], Q=Q, V=V, attention="usa")
    assert field_rate(usa.params).tolist() == pytest.approx([3.0 * np.exp(3.0)] * 2, rel=1e-12)  # |beta| ||K^T Q||
    heads = torch.stack([torch.eye(2, dtype=torch.float64)] * 3)
    three = sp.evolve(x[0], time=0.1, beta=0.5, Q=heads, K=heads, V=heads, attention="usa")
    assert float(field_rate(three.params)[0]) == pytest.approx(3 * np.exp(0.5), rel=1e-12)  # summed over heads


@pytest.mark.parametrize(
    "beta, step, inside",
    [(3.0, 0.1, True), (4.0, 0.05, True), (4.0, 0.1, False), (5.0, 0.05, False)],  # h e^beta: 2.0 2.73 5.46 7.42
)
def test_inside_the_interval_rk4_follows_the_flow_and_outside_it_does_not(beta, step, inside):
    """USA, Q = K = V = I, 16 tokens in d = 3, T = 10: the measurements the module docstring states."""
    x = _unit(16, 3)
    ref = sp.evolve(x, time=10, beta=beta, attention="usa", method="dopri5", rtol=1e-9, atol=1e-11, max_steps=400_000)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        run = sp.evolve(x, time=10, beta=beta, attention="usa", step=step)
    err = float((run.final_tokens - ref.final_tokens).norm(dim=-1).max())
    assert (unstable_step(run.params) is None) is inside
    assert any(issubclass(w.category, HypothesisWarning) for w in seen) is not inside
    if inside:
        assert err < 3e-4 and sp.energy_report(run).holds is True
    else:
        assert err > 0.05  # the run is integration error: its energy even decreases
        assert sp.energy_report(run).measured_holds is False


def test_beyond_the_interval_the_verdicts_are_undecided_not_false():
    """USA at beta = 8 with the default step said 'energy: does NOT hold' of a theorem that holds."""
    with pytest.warns(
        HypothesisWarning,
        match=r"step 0.1 is beyond rk4's stability interval for this field: step x rate = 298 > 2.785 .* use step <= 0.00093",
    ):
        run = sp.evolve(_unit(16, 3), time=10, beta=8.0, attention="usa")
    energy, clusters = sp.energy_report(run), sp.cluster_report(run)
    assert energy.measured_holds is False  # what the integration error shows
    assert energy.holds is None and clusters.holds is None
    assert "stability interval" in energy.undecided and "\x1e" not in energy.undecided
    with warnings.catch_warnings():
        warnings.simplefilter("error", HypothesisWarning)  # no warning inside the interval
        small = sp.evolve(_unit(16, 3), time=0.5, beta=8.0, attention="usa", step=5e-4)
    assert sp.energy_report(small).holds is True


def test_the_command_line_warns_in_its_flags(capsys, tmp_path):
    np.save(tmp_path / "u.npy", _unit(16, 3))
    assert main(["sphere", "run", str(tmp_path / "u.npy"), "--attention", "usa", "--beta", "8"]) == 0
    out, err = capsys.readouterr()
    assert err.startswith("warning: the step 0.1 is beyond rk4's stability interval") and err.count("\n") == 1
    assert err.rstrip().endswith("use --step <= 0.00093 or an adaptive --method (dopri5)")
    assert "energy: undecided" in out and "does NOT hold" not in out
    code = main(
        ["sphere", "phase", "--out", str(tmp_path / "ph"), "--attention", "usa", "--method", "rk4"]
        + ["--systems", "2", "--n", "4", "--betas", "4", "--time", "1", "--checkpoints", "2"]
    )
    err = capsys.readouterr().err
    assert code == 0 and "--beta-max below 6" in err, err

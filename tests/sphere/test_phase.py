"""Phase diagrams: the authors' statistics, against a naive loop on the same systems; the rank shortcut."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import attndyn.sphere as sp
from attndyn import InputError


def test_the_cluster_rank_equals_matrix_rank_on_equivalences_and_on_the_rest():
    g = torch.Generator().manual_seed(0)
    centers = torch.nn.functional.normalize(torch.randn(600, 5, 2, generator=g, dtype=torch.float64), dim=-1)
    pick = torch.randint(0, 5, (600, 12), generator=g)
    x = torch.gather(centers, 1, pick[..., None].expand(-1, -1, 2))
    spread = torch.rand(600, 1, 1, generator=g, dtype=torch.float64) * 0.03  # from clean cliques to chains
    x = torch.nn.functional.normalize(x + spread * torch.randn(600, 12, 2, generator=g, dtype=torch.float64), dim=-1)
    t = (x @ x.transpose(1, 2) > 1 - 1e-4).double()
    transitive = ((t @ t > 0).double() == t).flatten(1).all(1)
    assert 50 < int(transitive.sum()) < 550  # both kinds are tested
    torch.testing.assert_close(sp.cluster_rank(x, 1e-4), torch.linalg.matrix_rank(t), rtol=0, atol=0)


def naive_diagram(x0, betas, step, steps, read_at, delta, rank_delta):
    """Post-LN layers one system at a time, the statistics from their definitions."""
    nb, S, n, _ = x0.shape
    frac = np.zeros((nb, len(read_at)))
    med = np.zeros((nb, len(read_at)))
    for b, beta in enumerate(betas):
        ranks = np.zeros((S, len(read_at)))
        for s in range(S):
            x = x0[b, s].copy()
            for k in range(1, steps + 1):
                e = np.exp(beta * x @ x.T)
                x = x + step * (e / e.sum(1, keepdims=True)) @ x
                x /= np.linalg.norm(x, axis=1, keepdims=True)
                for c in np.nonzero(read_at == k)[0]:
                    g = x @ x.T
                    frac[b, c] += ((g > 1 - delta).sum() - np.trace(g > 1 - delta)) / (S * n * (n - 1))
                    ranks[s, c] = np.linalg.matrix_rank((g > 1 - rank_delta).astype(float))
        med[b] = np.median(ranks, axis=0)
    return frac, med


def test_the_diagram_equals_a_naive_loop_on_the_same_systems():
    betas = [0.5, 3.0, 8.0]
    pd = sp.phase_diagram(systems=6, n=5, d=2, betas=betas, time=3.0, step=0.1, checkpoints=4, seed=3)
    rng = np.random.default_rng(3)
    x0 = rng.standard_normal((3, 6, 5, 2))
    x0 /= np.linalg.norm(x0, axis=-1, keepdims=True)
    read_at = np.maximum(1, np.ceil(pd.times / 0.1 - 1e-9)).astype(int)
    assert read_at.tolist() == [1, 10, 20, 30]
    frac, med = naive_diagram(x0, betas, 0.1, 30, read_at, 1e-3, 1e-4)
    np.testing.assert_allclose(pd.fraction, frac, atol=1e-12)
    np.testing.assert_array_equal(pd.clusters, med)
    assert pd.fraction[:, -1].max() > 0.1  # the runs did cluster: the comparison reads real statistics


def test_chunks_do_not_change_the_diagram():
    kw = dict(systems=10, n=6, d=3, betas=[1.0, 4.0], time=2.0, checkpoints=5, seed=1)
    a, b = sp.phase_diagram(**kw), sp.phase_diagram(**kw, chunk=3)
    np.testing.assert_array_equal(a.fraction, b.fraction)
    np.testing.assert_array_equal(a.clusters, b.clusters)


def test_gamma_curve_times_and_the_round_trip(tmp_path):
    pd = sp.phase_diagram(systems=4, n=2, d=2, betas=[0.0, 1.0], time=5.0, checkpoints=3, delta=0.5)
    assert pd.gamma_times[0] == pytest.approx(math.atanh(0.5), abs=1e-7)  # n = 2, beta = 0: tanh t = 1 - delta
    path = pd.save(tmp_path / "phase.json")
    back = sp.load_phase_diagram(path)
    np.testing.assert_array_equal(back.fraction, pd.fraction)
    np.testing.assert_array_equal(back.gamma_times, pd.gamma_times)
    assert back.settings == pd.settings


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"betas": []}, r"betas must be a non-empty sequence of finite numbers"),
        ({"betas": [1.0, float("inf")]}, r"betas must be a non-empty sequence of finite numbers"),
        ({"systems": 0}, r"systems must be an integer >= 1, got 0"),
        (
            {"checkpoints": 1},
            r"checkpoints must be an integer >= 2 \(the grid of times read spans 0 to time\), got 1; for ",
        ),
        ({"checkpoints": 0}, r"checkpoints must be an integer >= 2 .*, got 0"),
        ({"method": "dopri5"}, r"method 'dopri5' cannot run a phase diagram; choose 'discrete' or a fixed-step"),
        ({"norm": "layer"}, r"unknown norm 'layer'"),
        ({"attention": "usa", "betas": [800.0]}, r"USA weights .* overflow"),
        ({"max_memory": 1000}, r"this run would keep about .* over the limit of 1 KB; use fewer systems"),
        ({"time": 0.25, "step": 0.1}, r'method="discrete" takes whole layers of step=0.1 .* time=0.25 is 2.5 of them'),
        pytest.param(
            {"device": "cuda"},
            r"device='cuda' but CUDA is not available on this machine",
            marks=pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is here"),
        ),  # fmt: skip
    ],
)
def test_phase_diagram_refusals(kwargs, match):
    with pytest.raises(InputError, match=match):
        sp.phase_diagram(**({"systems": 2, "n": 3, "betas": [1.0], "time": 0.2, "checkpoints": 2} | kwargs))


def test_loading_something_else_is_refused(tmp_path):
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(InputError, match=r"is not a phase diagram written by PhaseDiagram.save"):
        sp.load_phase_diagram(tmp_path / "x.json")


@pytest.mark.parametrize(("kq", "v"), [("gaussian", "gaussian"), ("goe", "minus"), ("identity", "plus")])
def test_random_parameters_run_per_system_as_a_naive_loop_does(kq, v):
    """One (A, V) per system, drawn after the tokens: the diagram equals a loop over systems with those draws."""
    betas, S, n, d = [1.0, 5.0], 3, 5, 3
    pd = sp.phase_diagram(systems=S, n=n, d=d, betas=betas, time=1.0, checkpoints=3, kq=kq, v=v, seed=2)
    rng = np.random.default_rng(2)
    x0 = rng.standard_normal((2, S, n, d))
    x0 /= np.linalg.norm(x0, axis=-1, keepdims=True)
    A, V = sp.random_parameters(rng, (2 * S,), d, kq, v)
    A = np.broadcast_to(np.eye(d), (2 * S, d, d)) if A is None else A
    read_at = [1, 5, 10]
    frac = np.zeros((2, 3))
    for b in range(2 * S):
        x = x0.reshape(-1, n, d)[b].copy()
        for k in range(1, 11):
            s = betas[b // S] * (x @ A[b].T) @ x.T  # s_ij = <A x_i, x_j>
            p = np.exp(s - s.max(1, keepdims=True))
            x = x + 0.1 * (p / p.sum(1, keepdims=True)) @ x @ V[b].T
            x /= np.linalg.norm(x, axis=1, keepdims=True)
            if k in read_at:
                g = x @ x.T
                frac[b // S, read_at.index(k)] += ((g > 1 - 1e-3).sum() - n) / (S * n * (n - 1))
    np.testing.assert_allclose(pd.fraction, frac, atol=1e-12)
    assert pd.settings["kq"] == kq and pd.settings["v"] == v


def test_the_ensembles_are_the_stated_ones():
    rng = np.random.default_rng(0)
    A, V = sp.random_parameters(rng, (4000,), 3, "goe", "gaussian")
    assert np.allclose(A, np.swapaxes(A, 1, 2)) and (np.linalg.eigvalsh(V) > -1e-12).all()
    assert np.var(A[:, 0, 1]) == pytest.approx(1.0, rel=0.1) and np.var(A[:, 0, 0]) == pytest.approx(2.0, rel=0.1)
    A, V = sp.random_parameters(rng, (4000,), 4, "gaussian", "plus")
    np.testing.assert_allclose(V, A / 2)  # V = +A / sqrt(d)
    assert np.var(A[:, 1, 2]) == pytest.approx(1.0, rel=0.1)  # sum of d products / sqrt(d): variance 1
    with pytest.raises(InputError, match=r"unknown kq ensemble 'wigner'; choose one of identity, gaussian, goe"):
        sp.random_parameters(rng, (1,), 2, "wigner", "identity")


@pytest.mark.parametrize("n", [12, 60])
def test_the_threshold_rank_equals_matrix_rank_on_random_boolean_matrices(n):
    """Matrices that are no equivalence, symmetric or not, with repeated rows and columns, and equivalences."""
    from attndyn.sphere._theory import threshold_rank

    g = torch.Generator().manual_seed(1)
    base = torch.rand(300, n // 3, n // 3, generator=g) < torch.rand(300, 1, 1, generator=g)
    pick = torch.randint(0, n // 3, (300, n), generator=g)  # each row and column repeats one of n / 3
    t = base[torch.arange(300)[:, None, None], pick[:, :, None], pick[:, None, :]]  # (300, n, n)
    sym = t | t.transpose(1, 2)
    for m in (t, sym, sym | torch.eye(n, dtype=torch.bool)):
        torch.testing.assert_close(threshold_rank(m), torch.linalg.matrix_rank(m.double()), rtol=0, atol=0)


def test_the_diagram_records_the_times_its_checkpoints_are_read_at():
    pd = sp.phase_diagram(systems=2, n=3, betas=[1.0], time=1.0, step=0.5, checkpoints=7)
    assert pd.times.tolist() == pytest.approx([k / 6 for k in range(7)])
    assert pd.settings["read_times"] == [0.5, 0.5, 0.5, 0.5, 1.0, 1.0, 1.0]

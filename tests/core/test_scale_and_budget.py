"""Exact at every scale, bounded resources, clear refusals (the engines' trust contract)."""

import importlib
import sys
import time

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import attndyn
from attndyn import InputError, SaveAt
from attndyn._kernels import token_extents

hardmax_module = importlib.import_module("attndyn._hardmax")


def tokens(d, n=12, B=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(-40, 41, size=(B, n, d)) / 16 + rng.standard_normal((B, n, d))


@pytest.fixture(params=["kernel", "torch"])
def path(request, monkeypatch):
    if request.param == "torch":
        monkeypatch.setattr(hardmax_module, "_use_kernel", lambda *a: False)
    return request.param


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("k", [-1000, -300, 300, 1000])
def test_hardmax_is_exactly_scale_equivariant(path, d, k):
    x = tokens(d)
    M = np.random.default_rng(1).standard_normal((d, d))
    A = M @ M.T + np.eye(d)
    ref = attndyn.hardmax(x, alpha=0.5, layers=25, A=A, check_hypotheses=False)
    big = attndyn.hardmax(x * 2.0**k, alpha=0.5, layers=25, A=A, check_hypotheses=False)
    assert torch.equal(big.ys, ref.ys * 2.0**k)
    assert torch.equal(big.leader_since, ref.leader_since)
    assert torch.isfinite(big.ys).all()
    # Scores scale with |z|^2: margins by 2**(2k), in range for |k| <= 300 here.
    if abs(k) <= 300:
        ok = ~torch.isnan(ref.leader_margin)
        assert torch.equal(big.leader_margin[ok], ref.leader_margin[ok] * 2.0 ** (2 * k))


def test_scale_of_A_does_not_change_the_run():
    x = tokens(2)
    A = np.array([[2.0, 0.5], [0.5, 1.0]])
    ref = attndyn.hardmax(x, alpha=1.0, layers=20, A=A)
    huge = attndyn.hardmax(x, alpha=1.0, layers=20, A=A * 2.0**900)
    assert torch.equal(huge.ys, ref.ys) and torch.equal(huge.leader_since, ref.leader_since)


def test_issue_cases_1e160_and_1e_minus_170_give_the_true_leaders():
    x = tokens(2, B=1)[0]
    ref = attndyn.leaders(attndyn.hardmax(x, alpha=0.5, layers=10))
    for c in (1e160, 1e-170):
        got = attndyn.leaders(attndyn.hardmax(x * c, alpha=0.5, layers=10))
        assert got.indices == ref.indices and got.since == ref.since


def test_float32_is_scale_equivariant_within_its_range():
    x = tokens(2)
    ref = attndyn.hardmax(x, alpha=0.5, layers=10, dtype=torch.float32)
    for k in (-100, 100):
        big = attndyn.hardmax(x * 2.0**k, alpha=0.5, layers=10, dtype=torch.float32)
        assert torch.equal(big.ys, ref.ys * 2.0**k)


def test_tie_tolerance_keeps_its_meaning_under_rescaling():
    x = np.array([[1.0, 0.0], [0.0, 1.0 + 1e-9], [-1.0, -1.0]])
    ref = attndyn.hardmax(x, alpha=1.0, layers=3, tol=1e-6, save=SaveAt(follow=True))
    # Scores scale with |z|^2, so the tolerance of tokens scaled by 2**300 is tol * 2**600.
    big = attndyn.hardmax(x * 2.0**300, alpha=1.0, layers=3, tol=1e-6 * 2.0**600, save=SaveAt(follow=True))
    assert torch.equal(big.follow, ref.follow)


def test_padding_keeps_its_values_at_any_scale():
    x = tokens(2, B=2)
    mask = np.ones(x.shape[:2], dtype=bool)
    mask[1, 8:] = False
    x[1, 8:] = 1e300  # garbage in padding
    traj = attndyn.hardmax(x * 2.0**-900, alpha=0.5, layers=5, mask=mask)
    assert torch.equal(traj.ys[-1, 1, 8:], torch.from_numpy(x[1, 8:] * 2.0**-900))


# ---- bounded resources ------------------------------------------------------------------------


def test_huge_layer_count_is_refused_within_a_second():
    t0 = time.perf_counter()
    with pytest.raises(InputError, match=r"would keep about .*SaveAt\(every=None\)"):
        attndyn.hardmax([[1.0, 0.0], [0.0, 1.0]], alpha=0.5, layers=10**20)
    assert time.perf_counter() - t0 < 1.0


def test_explicit_max_memory_is_honoured():
    x = tokens(2, n=50, B=10)
    with pytest.raises(InputError, match=r"over the limit of 20 KB"):
        attndyn.hardmax(x, alpha=0.5, layers=10, max_memory=20_000)
    traj = attndyn.hardmax(x, alpha=0.5, layers=10, max_memory=20_000, save=SaveAt(every=None))
    assert traj.ys.shape[0] == 2
    with pytest.raises(InputError, match="max_memory must be a positive number"):
        attndyn.hardmax(x, alpha=0.5, layers=10, max_memory=-1)


# ---- clear errors at the API boundary ---------------------------------------------------------


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"alpha": "0.5"}, "alpha must be a positive number, got '0.5'"),
        ({"alpha": True}, "alpha must be a positive number"),
        ({"dtype": torch.float16}, "dtype must be torch.float64 .* or torch.float32"),
        ({"device": "bogus"}, "device 'bogus' is not a torch device"),
        ({"device": "meta"}, "device 'meta' holds no data"),
        ({"stop": "x"}, r"stop must be StopOnConvergence\(...\) or None"),
        ({"save": "x"}, r"save must be a SaveAt"),
    ],
)
def test_hardmax_bad_arguments_name_the_fix(kw, match):
    kw = {"alpha": 0.5, "layers": 3, **kw}
    with pytest.raises(InputError, match=match):
        attndyn.hardmax([[1.0, 0.0], [0.0, 1.0]], **kw)


def test_sparse_and_meta_tensors_are_refused():
    dense = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(InputError, match=r"sparse_coo tensor; pass a dense one"):
        attndyn.hardmax(dense.to_sparse(), alpha=0.5, layers=2)
    with pytest.raises(InputError, match="meta tensor"):
        attndyn.hardmax(torch.empty(2, 2, device="meta"), alpha=0.5, layers=2)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without CUDA")
def test_cuda_without_cuda_is_a_clear_error():
    with pytest.raises(InputError, match="CUDA is not available here; use device='cpu'"):
        attndyn.hardmax([[1.0, 0.0]], alpha=0.5, layers=2, device="cuda")


@pytest.mark.parametrize("rtol", [float("nan"), -1.0, 0.0])
def test_stop_rtol_must_be_positive(rtol):
    with pytest.raises(InputError, match=r"StopOnConvergence\(rtol=...\) must be a positive number"):
        attndyn.StopOnConvergence(rtol)


@pytest.mark.slow
def test_softmax_of_20000_tokens_stays_within_1GB_of_extra_memory():
    """No n x n matrix: attention through scaled_dot_product_attention or row chunks, leaders by
    chunks in one scratch buffer, no final attention unless asked."""
    import subprocess

    code = """
import resource, numpy as np, attndyn
x = np.random.default_rng(0).standard_normal((20_000, 3))
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
traj = attndyn.softmax(x, time=0.1, step=0.1, method="euler", rescaled=True, save=attndyn.SaveAt(every=None))
assert traj.attention_final is None and traj.ys.shape == (2, 1, 20_000, 3)
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) * 1024)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    extra = int(out.stdout.strip().splitlines()[-1])
    assert extra < 1e9, f"{extra / 1e9:.2f} GB of extra memory"  # a dense (n, n) float64 matrix is 3.2 GB


@pytest.mark.parametrize(
    "run, what",
    [
        (lambda z: attndyn.hardmax(z, layers=2), r"A and its working copies in dimension d = 10000: 6 matrices"),
        (lambda z: attndyn.softmax(z, time=1.0), r"Q, K, V and their products in dimension d = 10000"),
        (lambda z: __import__("attndyn.control").control.choose_A(z, [0], spd=False), r"the margin problem in dim"),
    ],
)
def test_a_huge_dimension_is_refused_with_its_estimate_before_any_matrix_is_built(run, what):
    """Issue 34: three tokens in d = 10,000 (240 KB) took 3.9 GB and 138 s in hardmax, more in softmax and control."""
    z = np.zeros((3, 10_000))
    z[0, 0], z[1, 1], z[2, 2] = 1.0, 1.0, -1.0
    with pytest.raises(attndyn.InputError, match=r"this run would keep about [\d.]+ GB \(" + what):
        run(z)


@given(
    z=hnp.arrays(
        np.float64,
        hnp.array_shapes(min_dims=3, max_dims=3, min_side=0, max_side=9),
        elements=st.sampled_from([0.0, -0.0, 5e-324, -2.5e-310, 1e-300, -3.0, 0.75, 1e300, -1.7e308]),
    ),
    data=st.data(),
)
@settings(max_examples=200, deadline=None)
def test_compiled_extents_equal_the_plain_reductions(z, data):
    """The one-pass compiled extents (float64 on the CPU) against plain reductions, and torch's (the path of
    other dtypes and devices): padding, zero tokens, subnormals, empty sequences and d = 0 included."""
    mask = data.draw(hnp.arrays(np.bool_, z.shape[:2])) if data.draw(st.booleans()) else None
    norms = np.zeros(z.shape[:2]) if z.shape[2] == 0 else np.abs(z).max(axis=-1)
    norms = norms if mask is None else np.where(mask, norms, 0.0)
    big = norms.max(axis=1, initial=0.0)
    small = np.where(norms > 0, norms, np.inf).min(axis=1, initial=np.inf)
    m = None if mask is None else torch.from_numpy(mask)
    compiled = hardmax_module._extents(torch.from_numpy(z), m)
    assert np.array_equal(compiled[0].numpy(), big) and np.array_equal(compiled[1].numpy(), small)
    blocks = data.draw(st.integers(1, 5))  # the sequences shared out in blocks (as many threads as numba has)
    out = np.full(z.shape[0], np.nan), np.full(z.shape[0], np.nan)
    token_extents(z, np.ones(z.shape[:2], np.bool_) if mask is None else mask, *out, blocks)
    assert np.array_equal(out[0], big) and np.array_equal(out[1], small)
    if z.size:  # (torch does not reduce over an empty axis)
        by_torch = hardmax_module._extents_torch(torch.from_numpy(z), m)
        assert np.array_equal(by_torch[0].numpy(), big) and np.array_equal(by_torch[1].numpy(), small)

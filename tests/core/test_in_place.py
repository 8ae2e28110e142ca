"""Stepping in place and layers whose new tokens are not stored: the same bits as a step into a fresh buffer.

The compiled kernels read each sequence whole before they write it, so ``out`` may be the tokens themselves;
``out=None`` stores no tokens (a run's last layer, whose Z^{K+1} nobody reads). The run record
(:class:`attndyn._hardmax._HardmaxRecord`) steps in place where no one reads the state after the step; these
tests compare every save, stop and scale against the torch path, which never steps in place.
"""

import importlib

import numpy as np
import pytest
import torch

import attndyn
from attndyn import SaveAt, StopOnConvergence, _kernels, _planar_run, margins

hardmax_module = importlib.import_module("attndyn._hardmax")  # (attndyn.hardmax is the function)


def batch(d, seed=0, B=5, n=24):
    """Tokens with padding (sequence 1 has none) and a repeated token (a tie)."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((B, n, d))
    z[2, 5] = z[2, 9]
    mask = rng.random((B, n)) > 0.2
    mask[1] = True
    return z, mask


def layer(z, mask, out, *, d, causal=False, book=True, A=None):
    """One compiled layer (the planar or dense kernel, as the engine picks); every output array."""
    B, n = mask.shape
    A = np.eye(d) if A is None else A
    lead, moved, scale = np.empty((B, n), np.bool_), np.empty(B), np.empty(B)
    bk = margins.LeaderBook(B, n, torch.float64).kernel_arrays(d) if book else None
    args = (z, A, mask, 0.5, 0.0, out, lead, np.zeros((1, 1, 1), np.bool_), False, moved, scale, 0 if book else -1, bk)
    if d == 2 and not causal:
        _planar_run.hardmax_layer_2d(*args)
    else:
        _kernels.hardmax_layer_dense(*args, causal=causal)
    return lead, moved, scale, bk


@pytest.mark.parametrize(("d", "causal"), [(2, False), (3, False), (2, True), (5, True)])
def test_a_step_in_place_gives_the_bits_of_a_step_into_a_buffer(d, causal):
    z, mask = batch(d)
    A = np.array(np.eye(d) + 0.25 * np.ones((d, d)))  # not the identity: the dense kernel's general product
    fresh = np.full_like(z, np.nan)
    seen = layer(z, mask, fresh, d=d, causal=causal, A=A)
    zi = z.copy()
    seen_in_place = layer(zi, mask, zi, d=d, causal=causal, A=A)
    assert np.array_equal(zi, fresh)
    assert np.array_equal(zi[~mask], z[~mask])  # padding stays
    for a, b in zip(seen[:3], seen_in_place[:3]):
        assert np.array_equal(a, b)
    events = seen[3][2] != 0  # the book: (since, margin, ev_layer, ev_mu, ev_bound, nev, g, known)
    for k, (a, b) in enumerate(zip(seen[3], seen_in_place[3])):  # events' entries are written only where they occur
        assert np.array_equal(a[events], b[events]) if k in (3, 4) else np.array_equal(a, b, equal_nan=k == 1)
    assert seen[0].any()  # leaders were certified: the in-place step read its own tokens for their bounds


@pytest.mark.parametrize(("d", "causal"), [(2, False), (4, False), (3, True)])
def test_a_layer_without_out_sees_the_same_and_stores_nothing(d, causal):
    z, mask = batch(d, seed=1)
    kept = z.copy()
    stored = layer(z, mask, np.empty_like(z), d=d, causal=causal)
    unstored = layer(z, mask, None, d=d, causal=causal)
    assert np.array_equal(z, kept)
    for a, b in zip(stored[:3], unstored[:3]):
        assert np.array_equal(a, b)


def run_both(tokens, monkeypatch, **kw):
    """The run on the compiled path and on the torch path (which steps into fresh tensors)."""
    compiled = attndyn.hardmax(tokens, alpha=0.5, check_hypotheses=False, **kw)
    with monkeypatch.context() as m:
        m.setattr(hardmax_module, "_use_kernel", lambda z, A: False)
        reference = attndyn.hardmax(tokens, alpha=0.5, check_hypotheses=False, **kw)
    return compiled, reference


def assert_same_run(a, b):
    assert torch.equal(a.ts, b.ts)
    assert torch.equal(a.ys, b.ys)
    assert torch.equal(a.leader_mask, b.leader_mask)
    assert torch.equal(a.leader_since, b.leader_since)
    assert torch.equal(a.leader_margin.isnan(), b.leader_margin.isnan())  # NaN: never led
    # (the torch path's margins are summed in another order: equal to rounding, not bit for bit)
    assert torch.allclose(a.leader_margin.nan_to_num(), b.leader_margin.nan_to_num(), rtol=1e-12, atol=0.0)
    assert a.stats == b.stats


@pytest.mark.parametrize("every", [None, 1, 3])
@pytest.mark.parametrize("stop", [None, StopOnConvergence(rtol=1e-3)])  # stops at 15 (not a multiple of 3, 20)
@pytest.mark.parametrize("factor", [1.0, 2.0**-400, 2.0**400])  # 2**+-400: rescaled runs (their own copy)
def test_runs_that_step_in_place_keep_every_state_they_should(every, stop, factor, monkeypatch):
    rng = np.random.default_rng(3)
    tokens = torch.from_numpy(rng.standard_normal((4, 16, 2)) * factor)
    given = tokens.clone()
    compiled, reference = run_both(tokens, monkeypatch, layers=20, save=SaveAt(every=every), stop=stop)
    assert_same_run(compiled, reference)
    assert torch.equal(tokens, given)  # the caller's tokens are never a buffer of the run
    if stop is not None:  # the runs stop early, at a layer save= did not plan for, and keep it
        assert compiled.stats.stop_reason == "converged" and compiled.stats.steps == 15


def test_a_rescaled_run_whose_tokens_need_no_scaling_leaves_them_alone(monkeypatch):
    """Tokens near 1 with a huge A: only A is rescaled, so the run's tokens are the caller's tensor itself."""
    tokens = torch.from_numpy(np.random.default_rng(4).uniform(0.5, 0.99, (3, 12, 2)))
    given = tokens.clone()
    A = torch.eye(2, dtype=torch.float64) * 2.0**300
    for every in (None, 2):
        compiled, reference = run_both(tokens, monkeypatch, layers=6, A=A, save=SaveAt(every=every))
        assert_same_run(compiled, reference)
        assert torch.equal(tokens, given)


@pytest.mark.parametrize("layers", [0, 1, 2])
def test_short_runs_and_their_last_layer(layers, monkeypatch):
    tokens = np.random.default_rng(5).standard_normal((2, 10, 2))
    compiled, reference = run_both(tokens, monkeypatch, layers=layers, save=SaveAt(follow=True))
    assert_same_run(compiled, reference)
    assert torch.equal(compiled.follow, reference.follow)


def test_a_leader_book_reads_minus_one_and_nan_until_a_token_leads():
    """since and margin start unwritten: the kernels fill a sequence's rows when they reach it, any other reader
    at once; either way a token that never led reads -1 and NaN."""
    fresh = margins.LeaderBook(3, 5, torch.float64)
    assert (fresh.since == -1).all() and fresh.margin.isnan().all()
    z, mask = batch(2, B=3, n=12)
    book = margins.LeaderBook(3, 12, torch.float64)
    arrays = book.kernel_arrays(2)
    arrays[0][...] = 7  # what an unwritten buffer may hold
    arrays[1][...] = 7.0
    certified, *_ = layer_with(book, z, mask)
    book.collect(0)
    since, margin = book.since.numpy(), book.margin.numpy()
    assert certified.any() and np.array_equal(since >= 0, certified)
    assert (since[~certified] == -1).all() and np.isnan(margin[~certified]).all() and (margin[certified] > 0).all()


def layer_with(book, z, mask):
    """One planar layer (layer 0) certified into ``book``."""
    B, n = mask.shape
    lead, moved, scale = np.empty((B, n), np.bool_), np.empty(B), np.empty(B)
    follow = np.zeros((1, 1, 1), np.bool_)
    _planar_run.hardmax_layer_2d(
        z, np.eye(2), mask, 0.5, 0.0, None, lead, follow, False, moved, scale, 0, book.kernel_arrays(2)
    )
    return lead, moved, scale

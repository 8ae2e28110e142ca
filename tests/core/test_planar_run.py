"""A planar run in one compiled call (attndyn._planar_run) against the same run layer by layer: every output bit."""

import importlib
import threading
import warnings

import numba
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import attndyn
from attndyn import _planar_run
from attndyn._budget import run_budget

from .test_leader_margins import random_instance
from .test_planar_kernel import planar_batches

hardmax_module = importlib.import_module("attndyn._hardmax")  # (attndyn.hardmax is the function)
FIELDS = ("ts", "ys", "leader_mask", "leader_since", "leader_margin", "rounding_at", "rounding_margin")


def run(z, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", attndyn.HypothesisWarning)
        return attndyn.hardmax(z, **kw)


@pytest.fixture
def calls(monkeypatch):
    """How many runs went through the one-call path, and what each returned (None: it gave up)."""
    seen = []
    real = _planar_run.hardmax_run_2d

    def spy(*args):
        seen.append(real(*args))
        return seen[-1]

    monkeypatch.setattr(_planar_run, "hardmax_run_2d", spy)
    return seen


def layer_by_layer(monkeypatch, z, **kw):
    with monkeypatch.context() as m:
        m.setattr(hardmax_module._HardmaxRecord, "_runs_whole", lambda self, run: False)
        return run(z, **kw)


def assert_same_run(a, b):
    for name in FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape, name
        assert torch.equal(x, y) or (x.is_floating_point() and torch.equal(x.nan_to_num(7.0), y.nan_to_num(7.0))), name
    assert a.stats == b.stats


@settings(max_examples=120, deadline=None)
@given(
    planar_batches(),
    st.sampled_from([0.5, 1.0, 3.0]),
    st.integers(0, 6),
    st.sampled_from([None, 1, 2]),
    st.sampled_from([0, 400, -400]),
    st.sampled_from([0.0, 0.25]),
)
def test_one_call_equals_layer_by_layer_with_ties_padding_and_scales(batch, alpha, layers, every, e, tol):
    """Dyadic tokens (ties everywhere, duplicates), padding, an A, kept layers every 1 or 2 or only the ends, tokens
    at 2^±400 (the run rescales them and scales the kept states back), a tie tolerance: the same trajectory."""
    z, mask, A = batch
    kw = dict(alpha=alpha, layers=layers, A=A, mask=mask, tol=tol, save=attndyn.SaveAt(every=every))
    with pytest.MonkeyPatch.context() as mp:
        seen = []
        real = _planar_run.hardmax_run_2d
        mp.setattr(_planar_run, "hardmax_run_2d", lambda *args: seen.append(1) or real(*args))
        whole = run(z * 2.0**e, **kw)
        assert seen == [1]
        assert_same_run(whole, layer_by_layer(mp, z * 2.0**e, **kw))


@pytest.mark.parametrize("threads", [1, 2])
def test_one_call_equals_layer_by_layer_on_gaussian_batches_and_threads(monkeypatch, calls, threads):
    """Gaussian tokens with rounding events (the phantom-leader instances of test_leader_margins) in a batch large
    enough for two threads to share it in blocks: the same trajectory, the events in the same order. One thread
    runs the blocks' function itself (no loop over blocks to compile on a first run); on two, the caller and one
    helper thread each take blocks."""
    parallel = []
    real = _planar_run._run_blocks
    monkeypatch.setattr(
        _planar_run, "_run_blocks", lambda *args: parallel.append(threading.current_thread().name) or real(*args)
    )
    seqs = [random_instance(seed, 2)[0] for seed in range(8)]
    _, A = random_instance(0, 2)
    rng = np.random.default_rng(5)
    z = rng.standard_normal((400, 40, 2))
    mask = np.ones(z.shape[:2], dtype=bool)
    for b, s in enumerate(seqs):  # every 50th sequence is an instance with events, padded
        z[50 * b, : len(s)], mask[50 * b, len(s) :] = s, False
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        kw = dict(alpha=1.0, layers=60, A=A, mask=mask, save=attndyn.SaveAt(every=7))
        whole, steps = run(z, **kw), layer_by_layer(monkeypatch, z, **kw)
        if numba.get_num_threads() > 1:
            caller, helper = sorted(parallel)  # ("MainThread", "attndyn-planar_0")
            assert caller == threading.main_thread().name and helper.startswith("attndyn-planar")
        else:
            assert parallel == []
    finally:
        numba.set_num_threads(before)
    assert len(calls) == 1 and calls[0] is not None
    assert whole.rounding_at.shape[0] > 0  # the instances hold events decided by rounding
    assert_same_run(whole, steps)


def test_too_many_events_fall_back_to_layer_by_layer_on_a_fresh_book(monkeypatch, calls):
    """When a block records more events than its log holds, the call gives up and the run goes layer by layer
    from a fresh book: the same trajectory, nothing recorded twice."""
    z0, A = random_instance(0, 2)
    z = np.stack([z0] * 3)
    monkeypatch.setattr(_planar_run, "EVENTS_PER_SEQUENCE", 0)
    kw = dict(alpha=1.0, layers=120, A=A)
    whole = run(z, **kw)
    assert calls == [None]  # it gave up
    steps = layer_by_layer(monkeypatch, z, **kw)
    assert whole.rounding_at.shape[0] > 1  # more than the one entry the log held
    assert_same_run(whole, steps)


@pytest.mark.parametrize(
    "kw",
    [
        dict(stop=attndyn.StopOnConvergence(rtol=1e-9)),
        dict(save=attndyn.SaveAt(follow=True)),
        dict(progress=True),
        dict(causal=True),
    ],
)
def test_runs_that_read_between_layers_go_layer_by_layer(calls, kw):
    """A stop test, follow sets, a progress bar or a causal mask: the run goes layer by layer (no one call)."""
    z = np.random.default_rng(1).standard_normal((2, 12, 2))
    run(z, alpha=0.5, layers=4, **kw)
    assert calls == []


def test_a_run_under_a_time_budget_goes_layer_by_layer(calls):
    z = np.random.default_rng(1).standard_normal((2, 12, 2))
    with run_budget(60.0, 1e12, owner="the test", remedy="none"):
        run(z, alpha=0.5, layers=4)
    assert calls == []
    run(z, alpha=0.5, layers=4)
    assert len(calls) == 1


@pytest.mark.parametrize("masked", [False, True])
def test_a_layer_at_a_time_and_a_whole_run_compile_one_kernel(monkeypatch, masked):
    """The whole run and a run that reads its states between layers (follow sets, a stop test) hand the kernel
    arguments of the same numba types, so that numba compiles it once for all three: each variant costs a first run
    on a machine tens of seconds of compiling."""
    seen, calls = {}, []
    real = _planar_run._run

    def spy(threads, events, *args):
        calls.append(tuple(numba.typeof(a) for a in args))
        return real(threads, events, *args)

    monkeypatch.setattr(_planar_run, "_run", spy)
    z = np.random.default_rng(0).standard_normal((4, 20, 2))
    mask = np.ones((4, 20), dtype=bool) if masked else None
    if masked:
        mask[1, 15:] = False
    for label, kw in [
        ("whole", {}),
        ("follow", {"save": attndyn.SaveAt(follow=True)}),
        ("stop", {"stop": attndyn.StopOnConvergence()}),
        ("every", {"save": attndyn.SaveAt(every=2), "stop": attndyn.StopOnConvergence()}),
    ]:
        run(z, alpha=0.5, layers=3, mask=mask, **kw)
        seen[label], calls[:] = list(calls), []
    assert len(seen["whole"]) == 1 and len(seen["follow"]) == len(seen["stop"]) == 4  # one call, a call a layer
    types = {t for calls in seen.values() for t in calls}
    assert len(types) == 1, types


def test_helper_threads_are_kept_and_made_again_in_a_forked_child(monkeypatch):
    """The helper threads are made once per process: a forked child has the parent's pool object but none of its
    threads, and would wait forever on it."""
    monkeypatch.setattr(_planar_run, "_helpers", _planar_run._helpers)  # restored afterwards
    pool = _planar_run._helper_threads()
    assert _planar_run._helper_threads() is pool
    monkeypatch.setattr(_planar_run.os, "getpid", lambda: -1)  # as in a child
    child = _planar_run._helper_threads()
    assert child is not pool and _planar_run._helper_threads() is child
    child.shutdown()

"""Metastability: the lifetime fit on exact data, a run where it grows with beta, refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest

import attndyn.sphere as sp
from attndyn import InputError
from attndyn.sphere._metastability import _fit


def test_the_fit_recovers_an_exact_exponential_and_fails_on_a_decreasing_one():
    grid = np.array([1.0, 2.0, 3.0, 4.0])
    noise = np.array([0.9, 1.1, 1.0])  # the same spread at every beta: the slope is exact
    rep = _fit(grid, np.exp(0.5 * grid)[:, None] * noise, 0.0, {})
    assert rep.slope == pytest.approx(0.5, abs=1e-12) and rep.holds
    lo, hi = rep.slope_interval
    assert lo < 0.5 < hi and hi - lo < 0.3
    falling = _fit(grid, np.exp(-0.2 * grid)[:, None] * noise, 0.0, {})
    assert falling.slope == pytest.approx(-0.2, abs=1e-12) and not falling.holds


def test_on_the_circle_the_lifetime_grows_with_beta():
    rep = sp.metastability([2.0, 4.0, 6.0, 8.0], systems=12, n=16, time=50.0)
    assert rep.holds, rep.record()
    assert np.mean(rep.lifetimes[0]) < np.mean(rep.lifetimes[-1])
    assert 0 <= rep.censored <= 1 and math.isfinite(rep.intercept)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"betas": [1.0, 2.0]}, r"betas must hold at least 3 finite numbers"),
        ({"betas": [1.0, 2.0, float("nan")]}, r"betas must hold at least 3 finite numbers"),
        ({"betas": [1.0, 2.0, 3.0], "systems": 1}, r"systems must be an integer >= 2, got 1"),
        ({"betas": [0.0, 0.0, 0.0], "time": 30.0}, r"too few systems had several clusters to fit a slope"),
        ({"betas": [1.0, 2.0, 3.0], "angle": 4.0}, r"angle must be at most pi \(radians between two tokens"),
    ],
)
def test_refusals(kwargs, match):
    with pytest.raises(InputError, match=match):
        sp.metastability(**({"systems": 2, "n": 4, "time": 1.0} | kwargs))


@pytest.mark.parametrize("last, censored", [(1, 0.0), (3, 1.0)])
def test_a_plateau_that_ended_at_the_last_time_is_not_censored(monkeypatch, last, censored):
    """Every system shows 3 clusters until the last kept time, then ``last``: a plateau followed by a change at
    the last time has ended (it was counted censored, as one still running at the horizon is)."""
    import torch

    from attndyn.sphere import _metastability

    def fake_rank(t):  # (T * B, n, n) -> counts (T * B,)
        c = torch.full((t.shape[0] // 6, 6), 3)
        c[-1] = last
        return c.reshape(-1)

    monkeypatch.setattr(_metastability, "threshold_rank", fake_rank)
    rep = _metastability.metastability([1.0, 2.0, 3.0], systems=2, n=4, d=2, time=1.0, step=0.1, every=2)
    assert rep.censored == censored

"""Large CPU buffers through numpy (huge pages): the same tensors, and the same runs, as torch's own buffers."""

import numpy as np
import pytest
import torch

import attndyn
from attndyn import _pages


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bool, torch.int64, torch.bfloat16])
@pytest.mark.parametrize("huge", [1, 1 << 40])
def test_buffers_have_the_asked_shape_dtype_and_values(monkeypatch, dtype, huge):
    monkeypatch.setattr(_pages, "HUGE", huge)  # 1: every buffer through numpy (bfloat16 cannot); 2^40: none
    e = _pages.empty((3, 4, 5), dtype)
    z = _pages.zeros((3, 4, 5), dtype)
    for t in (e, z):
        assert t.shape == (3, 4, 5) and t.dtype == dtype and t.device.type == "cpu" and t.is_contiguous()
    assert not z.any()
    e.fill_(1)
    assert e.all() and not z.any()  # writable, and not the same memory


def test_large_buffers_are_made_by_numpy_and_small_ones_by_torch(monkeypatch):
    made = []
    real_empty = np.empty

    def spy(*args, **kwargs):
        made.append(args[0])
        return real_empty(*args, **kwargs)

    monkeypatch.setattr(_pages.np, "empty", spy)
    _pages.empty((_pages.HUGE // 8,), torch.float64)  # exactly HUGE bytes
    _pages.empty((_pages.HUGE // 8 - 1,), torch.float64)
    _pages.empty((_pages.HUGE,), torch.bfloat16)  # numpy has no bfloat16
    assert made == [(_pages.HUGE // 8,)]


def test_a_hardmax_run_is_the_same_on_numpy_buffers(monkeypatch):
    Z = np.random.default_rng(3).standard_normal((5, 40, 2))
    runs = []
    for huge in (1 << 40, 1):
        monkeypatch.setattr(_pages, "HUGE", huge)
        runs.append(attndyn.hardmax(Z, alpha=0.5, layers=6, save=attndyn.SaveAt(follow=True)))
    a, b = runs
    assert torch.equal(a.ys, b.ys) and torch.equal(a.leader_mask, b.leader_mask) and torch.equal(a.follow, b.follow)
    assert torch.equal(a.leader_since, b.leader_since)

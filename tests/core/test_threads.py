"""The thread rule (attndyn.threads, attndyn._kernels.threads_for): small problems use one thread."""

import numpy as np
import torch

import attndyn
from attndyn import threads


def test_small_work_gets_one_torch_thread_and_the_setting_is_restored():
    old = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        assert threads.torch_threads_for(40 * 40 * 3) == 1
        assert threads.torch_threads_for(threads.TORCH_MIN_WORK) == 2
        with threads.limit_torch_threads(1):
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
        attndyn.softmax(np.ones((5, 2)), time=0.1)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(old)


def test_entry_points_run_small_problems_on_one_thread(monkeypatch):
    old = torch.get_num_threads()
    torch.set_num_threads(2)
    seen = []
    real_step = attndyn.hardmax_step

    def spy(*a, **kw):
        seen.append(torch.get_num_threads())
        return real_step(*a, **kw)

    import importlib

    monkeypatch.setattr(importlib.import_module("attndyn._hardmax"), "hardmax_step", spy)
    try:
        attndyn.hardmax(
            np.random.default_rng(0).standard_normal((4, 6, 2)), alpha=1.0, layers=2, check_hypotheses=False
        )
        big = torch.randn(64, 64, 64, dtype=torch.float32)  # float32: the torch path, 64^4 > TORCH_MIN_WORK
        attndyn.hardmax(big, alpha=1.0, layers=0, dtype=torch.float32, check_hypotheses=False)
    finally:
        torch.set_num_threads(old)
    assert seen[:3] == [1, 1, 1] and seen[-1] == 2

"""The thread rule (attndyn._threads, attndyn._kernels.threads_for): small problems use one thread."""

import numpy as np
import torch

import attndyn
from attndyn import _threads as threads


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
    import importlib

    record = importlib.import_module("attndyn._hardmax")._HardmaxRecord
    real_observe = record.observe

    def spy(*a, **kw):  # each layer, run one by one or all in one call (attndyn._planar_run)
        seen.append(torch.get_num_threads())
        return real_observe(*a, **kw)

    monkeypatch.setattr(record, "observe", spy)
    try:
        attndyn.hardmax(
            np.random.default_rng(0).standard_normal((4, 6, 2)), alpha=1.0, layers=2, check_hypotheses=False
        )
        big = torch.randn(64, 64, 64, dtype=torch.float32)  # float32: the torch path, 64^4 > TORCH_MIN_WORK
        attndyn.hardmax(big, alpha=1.0, layers=0, dtype=torch.float32, check_hypotheses=False)
    finally:
        torch.set_num_threads(old)
    assert seen[:3] == [1, 1, 1] and seen[-1] == 2


def test_limit_threads_caps_torch_and_blas_and_restores_both():
    from threadpoolctl import threadpool_info, threadpool_limits

    old = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with threadpool_limits(limits=2):
            before = [p["num_threads"] for p in threadpool_info()]
            with threads.limit_threads(torch_threads=1, blas_threads=1):
                assert torch.get_num_threads() == 1
                assert all(p["num_threads"] == 1 for p in threadpool_info())
            assert torch.get_num_threads() == 2
            assert [p["num_threads"] for p in threadpool_info()] == before
            with threads.limit_threads(blas_threads=1):
                assert all(p["num_threads"] == 1 for p in threadpool_info())
            assert torch.get_num_threads() == 2 and [p["num_threads"] for p in threadpool_info()] == before
            with threads.limit_threads(torch_threads=4):  # never raised
                assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(old)


def test_the_run_decides_from_its_own_tensors(monkeypatch):
    """The thread count follows the path the run takes: under no_grad, tokens that require a gradient
    still go through the compiled kernel, so its rule (one thread for small runs) applies."""
    import importlib

    hardmax_module = importlib.import_module("attndyn._hardmax")
    seen = []
    real = hardmax_module._hardmax_run

    def spy(*a, **kw):
        seen.append(torch.get_num_threads())
        return real(*a, **kw)

    monkeypatch.setattr(hardmax_module, "_hardmax_run", spy)
    old = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        x = torch.tensor(np.random.default_rng(1).standard_normal((2, 5, 2)), requires_grad=True)
        with torch.no_grad():
            attndyn.hardmax(x, alpha=1.0, layers=1, check_hypotheses=False)
        big = torch.randn(1, 600, 2, dtype=torch.float64)  # the kernel path, 1,200 coordinates: one thread
        attndyn.hardmax(big, alpha=1.0, layers=0, check_hypotheses=False)
        many = torch.randn(200, 700, 2, dtype=torch.float64)  # the kernel path however large: one thread
        attndyn.hardmax(many, alpha=1.0, layers=0, check_hypotheses=False, save=attndyn.SaveAt(every=None))
    finally:
        torch.set_num_threads(old)
    assert seen == [1, 1, 1]

"""Blocks handed out one at a time (attndyn._share.next_block): every block taken once, by whichever thread."""

import os
import subprocess
import sys

import numba
import numpy as np
import pytest
from numba import njit, prange

from attndyn._share import next_block


@njit(parallel=True, cache=False)
def _take_all(workers, blocks, taken, by):
    counter = np.zeros(1, dtype=np.int64)
    for w in prange(workers):
        j = next_block(counter)
        while j < blocks:
            taken[j] += 1
            by[j] = w
            s = 0.0
            for k in range(200 * (j % 7)):  # uneven blocks
                s += k * 1e-9
            by[j] += 0 if s >= 0.0 else 1
            j = next_block(counter)


@pytest.mark.parametrize("workers", [1, 2, 3, 8])
@pytest.mark.parametrize("blocks", [0, 1, 5, 1000])
def test_every_block_is_taken_once(workers, blocks):
    taken, by = np.zeros(blocks, dtype=np.int64), np.full(blocks, -1, dtype=np.int64)
    old = numba.get_num_threads()
    numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
    try:
        _take_all(workers, blocks, taken, by)
    finally:
        numba.set_num_threads(old)
    assert (taken == 1).all()  # none skipped, none run twice
    assert ((by >= 0) & (by < workers)).all()


def test_next_block_counts_up_from_zero():
    @njit
    def draws(n):
        c = np.zeros(1, dtype=np.int64)
        out = np.empty(n, dtype=np.int64)
        for i in range(n):
            out[i] = next_block(c)
        return out, c[0]

    out, last = draws(5)
    assert out.tolist() == [0, 1, 2, 3, 4] and last == 5


def test_next_block_takes_an_int64_counter_only():
    @njit
    def draw(c):
        return next_block(c)

    with pytest.raises(numba.core.errors.TypingError):
        draw(np.zeros(1, dtype=np.int32))


CONCURRENT = """
import sys, threading, numpy as np, torch, attndyn
rng = np.random.default_rng(0)
planar, dense = rng.standard_normal((3000, 128, 2)), rng.standard_normal((200, 64, 3))
b, i = torch.arange(200).repeat_interleave(64), torch.arange(64).repeat(200)  # 12,800 pairs: the parallel loop
z = torch.from_numpy(dense)

def work():
    return (
        attndyn.hardmax(planar, alpha=0.5, layers=3).ys,  # the hypothesis check, the extents, the planar helpers
        attndyn.hardmax(dense, alpha=0.5, layers=2, check_hypotheses=False).ys,  # the d >= 3 kernel
        torch.stack(attndyn.margins.leader_margins(z, None, None, b, i)),
    )

alone = work()
together = {}
threads = [threading.Thread(target=lambda k=k: together.setdefault(k, work())) for k in range(3)]
for t in threads:
    t.start()
for t in threads:
    t.join()
same = all(torch.equal(x, y) for k in range(3) for x, y in zip(together[k], alone))
print(len(together), same)
sys.exit(0 if len(together) == 3 and same else 1)
"""


def test_several_python_threads_may_run_attndyn_at_once():
    """numba's workqueue threading layer aborts the process when two threads are in parallel regions at once; attndyn's
    regions take turns (``PARALLEL_REGION``) and the planar kernel's helper threads are its own, so three threads of a
    program running hardmax (d = 2 and 3) and leader margins at once get what one thread alone gets. In a child
    process with two numba threads, so that a regression aborts the child, not the test run."""
    env = {**os.environ, "NUMBA_NUM_THREADS": "2"}
    done = subprocess.run([sys.executable, "-c", CONCURRENT], env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert done.stdout.split() == ["3", "True"]

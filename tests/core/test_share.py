"""Blocks handed out one at a time (attndyn._share.next_block): every block taken once, by whichever thread."""

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

r"""Whether a sequence holds a zero token or two equal tokens (Theorem 1.1's hypotheses), in one compiled pass.

Theorem 1.1 of the hardmax paper assumes nonzero, pairwise distinct tokens: equal tokens tie exactly in every score,
and a zero token scores 0 against every key. :func:`token_flags` reads each sequence once and inserts its real
tokens into a small open-addressing hash table (four times as many slots as tokens, linear probing: a probe mostly
finds its slot empty): a token whose slot chain holds an equal token, coordinate by coordinate with ``==`` (so -0.0
equals 0.0, as torch's ``==``), is a repeat. The hash only decides which tokens are compared; every verdict is an
exact comparison, so a collision costs a comparison and never a wrong answer. The sequences are shared by numba's
threads in ``blocks`` blocks (a sequence's flags do not depend on which thread reads it).

On (3000, 128, 2) Gaussian tokens a pass takes about 3-4 ms on one thread of an AVX2 host, where the earlier check
(sorting random projections and comparing neighbours, and a separate pass for zero tokens) took about 14 ms.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from . import _jit_cache  # noqa: F401  (first: the locator of each cached kernel defined below)
from ._share import PARALLEL_REGION

__all__ = ["token_flags"]

#: An odd 64-bit multiplier (2^64 over the golden ratio): multiplying by it spreads the coordinates' bits into the
#: top bits, which pick the slot (Fibonacci hashing). Unsigned, so that the products wrap by definition.
_MIX = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True, inline="always")
def _slot(bits, z, b, i, d, shift):  # pragma: no cover - compiled
    """Token (b, i)'s first slot: its coordinates' bits (``bits``: z viewed as uint64) mixed, a zero coordinate of
    either sign read as +0."""
    h = np.uint64(0)
    for k in range(d):
        w = bits[b, i, k] if z[b, i, k] != 0.0 else np.uint64(0)
        h = (h ^ w) * _MIX
    return np.int64(h >> np.uint64(shift))


@njit(cache=True, inline="always")
def _equal(z, b, i, j, d):  # pragma: no cover - compiled
    """Whether tokens i and j of sequence b are equal, coordinate by coordinate (-0.0 == 0.0)."""
    for k in range(d):
        if z[b, i, k] != z[b, j, k]:
            return False
    return True


@njit(cache=True)
def _flags_of(lo, hi, z, bits, real, zero, repeated):  # pragma: no cover - compiled
    """:func:`token_flags` for sequences lo..hi-1."""
    n, d = z.shape[1], z.shape[2]
    p = 1
    while (1 << p) < 4 * n:
        p += 1
    size = 1 << p
    table = np.empty(size, dtype=np.int64)
    for b in range(lo, hi):
        table[:] = -1
        zero[b] = False
        repeated[b] = False
        for i in range(n):
            if not real[b, i]:
                continue
            nonzero = False
            for k in range(d):
                nonzero = nonzero or z[b, i, k] != 0.0
            if not nonzero:
                zero[b] = True
            s = _slot(bits, z, b, i, d, 64 - p)
            while table[s] >= 0 and not repeated[b]:
                repeated[b] = _equal(z, b, table[s], i, d)
                s = (s + 1) & (size - 1)
            table[s] = i


@njit(parallel=True, cache=True)
def _flags_parallel(z, bits, real, zero, repeated, blocks):  # pragma: no cover - compiled
    B = z.shape[0]
    size = (B + blocks - 1) // blocks
    for j in prange(blocks):
        _flags_of(j * size, min(B, (j + 1) * size), z, bits, real, zero, repeated)


def token_flags(z: np.ndarray, real: np.ndarray, blocks: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Per sequence of ``z`` (B, n, d) float64 over its real tokens (``real`` (B, n) bool): whether one of them is
    zero and whether two of them are equal, ``(zero, repeated)``, two (B,) bool arrays. Padding is never read.
    ``blocks`` > 1 shares the sequences among numba's threads."""
    z = np.ascontiguousarray(z, dtype=np.float64)
    real = np.ascontiguousarray(real, dtype=np.bool_)
    B = z.shape[0]
    zero, repeated = np.empty(B, dtype=np.bool_), np.empty(B, dtype=np.bool_)
    if B == 0:
        return zero, repeated
    bits = z.view(np.uint64)
    if blocks > 1:
        with PARALLEL_REGION:
            _flags_parallel(z, bits, real, zero, repeated, min(blocks, B))
    else:
        _flags_of(0, B, z, bits, real, zero, repeated)
    return zero, repeated

"""Seeded random instances every study draws: SPD matrices, orthogonal matrices, the random matrix
ensembles, the instances of the softmax paper's Table 1 and token clouds.

Each sampler draws only from the generator it is given, in a fixed order, so that a study that passes
the same generator gets the same numbers.

>>> import numpy as np
>>> A = random_spd(np.random.default_rng(0), 3, cond_max=4.0)
>>> bool(np.allclose(A, A.T)), bool(np.linalg.eigvalsh(A).min() >= 1.0 - 1e-12)
(True, True)
"""

from __future__ import annotations

import math

import numpy as np

from ..analysis._spectral import is_good_triple, leading_direction

__all__ = [
    "ENSEMBLES",
    "TABLE1_REGIMES",
    "random_spd",
    "random_orthogonal",
    "random_matrix",
    "table1_instance",
    "token_cloud",
    "theorem_1_1_instance",
    "ginibre_leading_count",
]

ENSEMBLES = ("ginibre", "goe", "uniform", "positive")
TABLE1_REGIMES = ("polytope", "hyperplanes", "paranormal", "collapse")


def random_spd(rng: np.random.Generator, d: int, *, cond_max: float = 10.0) -> np.ndarray:
    """A random symmetric positive definite matrix ``Q diag(U[1, cond_max]) Q^T``: ``Q`` from the QR
    factors of a Gaussian matrix, eigenvalues uniform in [1, cond_max] (the matrix A of the hardmax
    paper's eq. (1.1))."""
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    return (q * rng.uniform(1.0, cond_max, d)) @ q.T


def random_orthogonal(rng: np.random.Generator, d: int) -> np.ndarray:
    """A Haar-distributed (d, d) orthogonal matrix: the QR factor of a Gaussian matrix with the signs of
    ``diag(R)`` moved into ``Q``."""
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))


def random_matrix(rng: np.random.Generator, d: int, ensemble: str) -> np.ndarray:
    """A (d, d) random matrix: ``ginibre`` i.i.d. N(0, 1) entries (the real Ginibre ensemble);
    ``goe`` (G + G^T)/sqrt(2) (symmetric); ``uniform`` i.i.d. U[-1, 1]; ``positive`` ``|N(0, 1)|``
    entries (Perron-Frobenius: the leading eigenvalue is real, positive and simple)."""
    G = rng.standard_normal((d, d))
    if ensemble == "ginibre":
        return G
    if ensemble == "goe":
        return (G + G.T) / np.sqrt(2.0)
    if ensemble == "uniform":
        return rng.uniform(-1.0, 1.0, (d, d))
    if ensemble == "positive":
        return np.abs(G)
    raise ValueError(f"ensemble = {ensemble!r} is not an ensemble; choose among {', '.join(ENSEMBLES)}")


def table1_instance(regime: str, rng: np.random.Generator, d: int) -> dict[str, np.ndarray]:
    """Random ``{"Q", "K", "V"}`` satisfying the hypotheses of the row ``regime`` of the softmax paper's
    Table 1: ``polytope`` V = I, Q^T K > 0 (Theorem 3.1); ``hyperplanes`` a good triple, Definition 1,
    V scaled to lambda_1 = 1 (Theorem 4.1); ``paranormal`` V = lambda Id on a subspace of dimension m >= 2
    and spectral radius < lambda on its complement, Q^T K > 0 (Theorem 5.1); ``collapse`` V = -I,
    Q^T K = I (Theorem C.5)."""
    if regime == "polytope":
        return {"Q": random_spd(rng, d, cond_max=3.0), "K": np.eye(d), "V": np.eye(d)}
    if regime == "hyperplanes":
        while True:
            V = rng.standard_normal((d, d)) / math.sqrt(d)
            Q, K = rng.standard_normal((d, d)), rng.standard_normal((d, d))
            if is_good_triple(Q, K, V):
                # lambda_1 = 1: a positive multiple of V only rescales time, and the same horizon T then
                # means the same amount of contraction along phi_1 for every instance
                return {"Q": Q, "K": K, "V": V / np.abs(np.linalg.eigvals(V)).max()}
    if regime == "paranormal":
        m = int(rng.integers(2, d)) if d > 2 else 2
        O = random_orthogonal(rng, d)
        ev = np.concatenate([np.ones(m), rng.uniform(-0.9, 0.9, d - m)])
        return {"Q": random_spd(rng, d, cond_max=3.0), "K": np.eye(d), "V": (O * ev) @ O.T}
    if regime == "collapse":
        O = random_orthogonal(rng, d)
        return {"Q": O, "K": O, "V": -np.eye(d)}
    raise ValueError(f"regime = {regime!r} is not a row of Table 1; choose among {', '.join(TABLE1_REGIMES)}")


def token_cloud(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    """n tokens uniform in the cube [-1, 1]^d, shape (n, d)."""
    return rng.uniform(-1.0, 1.0, (n, d))


def theorem_1_1_instance(
    rng: np.random.Generator, n: int, d: int, *, spd: bool = True, cond_max: float = 10.0
) -> tuple[np.ndarray, np.ndarray | None]:
    """The instances of Theorem 1.1 that reproduce and sweep measure: n tokens uniform in [-1, 1]^d
    (:func:`token_cloud`) and, with ``spd``, a random SPD matrix A (:func:`random_spd`) for eq. (1.1) of the
    hardmax paper, else None (A = I)."""
    z = token_cloud(rng, n, d)
    return z, random_spd(rng, d, cond_max=cond_max) if spd else None


def ginibre_leading_count(rng: np.random.Generator, d: int, N: int) -> int:
    """How many of N real Ginibre matrices (d x d, i.i.d. N(0, 1) entries) have a real, positive, simple
    eigenvalue of largest modulus (the spectral half of the softmax paper's Definition 1,
    :func:`attndyn.analysis.leading_direction`)."""
    return sum(leading_direction(random_matrix(rng, d, "ginibre")) is not None for _ in range(N))

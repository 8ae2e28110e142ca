r"""Spectral conditions on (Q, K, V) from the softmax paper (Definitions 1 and 2) and the
eigen-coordinates its theorems speak of."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import InputError

__all__ = [
    "is_good_triple",
    "is_paranormal",
    "is_good_triple_with_multiplicity",
    "leading_direction",
    "positive_coordinates",
    "scalar_of",
    "positive_definite",
]


def _matrix(M: Any, name: str, kind: str = "matrix") -> np.ndarray:
    """``M`` as a finite float64 matrix (a number is 1 x 1), or an InputError naming ``name`` (a ``kind``)."""
    try:
        a = np.asarray(M.detach().cpu() if hasattr(M, "detach") else M, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be a {kind} of numbers, got {type(M).__name__} ({exc})") from None
    a = a.reshape(1, 1) if a.ndim == 0 else a
    if a.ndim != 2:
        raise InputError(f"{name} must be a {kind}, got shape {a.shape}")
    if not np.isfinite(a).all():
        raise InputError(f"{name} contains NaN or inf")
    return a


def _square(M: Any, name: str) -> np.ndarray:
    """``M`` as a finite square float64 matrix (a number is 1 x 1), or an InputError naming ``name``."""
    a = _matrix(M, name, "square matrix")
    if a.shape[0] != a.shape[1]:
        raise InputError(f"{name} must be a square matrix, got shape {a.shape}")
    return a


def _triple(Q: Any, K: Any, V: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """V as a d x d matrix and Q, K as matrices of one shape (k, d), or an InputError naming the shapes."""
    Qa, Ka, Va = _matrix(Q, "Q"), _matrix(K, "K"), _square(V, "V")
    if Qa.shape != Ka.shape or Qa.shape[1] != Va.shape[0]:
        raise InputError(
            f"Q {Qa.shape}, K {Ka.shape} and V {Va.shape} do not fit together: give Q and K of one shape (k, d) "
            "and V (d, d)"
        )
    return Qa, Ka, Va


#: Eigenvalues within this relative distance of the spectral radius count as one (``is_paranormal``).
EIGEN_GROUP_RTOL = 1e-7
#: V counts as a multiple of the identity when it differs from c I by at most this fraction of its size.
SCALAR_RTOL = 1e-9


def scalar_of(V: Any) -> float | None:
    """c when V = c I (relative to V's size, :data:`SCALAR_RTOL`; c != 0), else None.

    >>> scalar_of([[2.0, 0.0], [0.0, 2.0]]), scalar_of(1e-9 * np.diag([2.0, 1.0]))
    (2.0, None)
    """
    A = _square(V, "V")
    c = float(np.trace(A)) / len(A)
    size = float(np.abs(A).max())
    if c == 0 or np.abs(A - c * np.eye(len(A))).max() > SCALAR_RTOL * size:
        return None
    return c


def positive_definite(M: Any) -> bool:
    """Whether the quadratic form of M is positive definite (its symmetric part's eigenvalues all > 0)."""
    A = _square(M, "M")
    return bool(np.linalg.eigvalsh((A + A.T) / 2).min() > 0)


def leading_direction(V: Any, *, rtol: float = 1e-9) -> tuple[float, np.ndarray, np.ndarray] | None:
    r"""``(lambda_1, phi_1, psi_1)`` if V's largest-modulus eigenvalue is real, positive and simple
    (:math:`\lambda_1 > |\lambda_2|`), else None. ``phi_1`` is the unit right eigenvector, ``psi_1``
    the left one scaled so that :math:`\psi_1\cdot\varphi_1 = 1`: the coordinate of z along
    :math:`\varphi_1` in V's eigenbasis is :math:`\psi_1\cdot z`."""
    A = _square(V, "V")
    ev, R = np.linalg.eig(A)
    order = np.argsort(-np.abs(ev))
    ev, R = ev[order], R[:, order]
    lam = ev[0]
    scale = max(abs(lam), 1e-300)
    if abs(lam.imag) > rtol * scale or lam.real <= 0:
        return None
    if len(ev) > 1 and abs(ev[1]) >= abs(lam) * (1 - 1e-9):
        return None
    phi = np.real(R[:, 0])
    phi = phi / np.linalg.norm(phi)
    evl, L = np.linalg.eig(A.T)
    j = int(np.argmin(np.abs(evl - lam)))
    psi = np.real(L[:, j])
    if not _numerically_simple(A, ev, phi, psi):
        return None
    psi = psi / (psi @ phi)
    return float(lam.real), phi, psi


#: How far the leading eigenvalue's gap must exceed its rounding error, eps ||V|| / cos(psi, phi), to count as simple.
SIMPLE_GAP_FACTOR = 1e3


def _numerically_simple(A: np.ndarray, ev: np.ndarray, phi: np.ndarray, psi: np.ndarray) -> bool:
    r"""Whether the leading eigenvalue is simple beyond rounding. A Jordan block's double eigenvalue splits under
    rounding by about :math:`\sqrt{\varepsilon}\lVert V\rVert` (1e-8, more than a fixed 1e-9 gap), and its left and
    right eigenvectors are then nearly orthogonal: the eigenvalue's condition number :math:`1/\cos(\psi, \varphi)`
    is about :math:`1/\sqrt{\varepsilon}`. So the gap to the next modulus must exceed ``SIMPLE_GAP_FACTOR``
    :math:`\varepsilon\lVert V\rVert_2/\cos(\psi, \varphi)`, the size of the eigenvalue's own rounding error; a
    simple eigenvalue of a reasonable V passes by many orders of magnitude."""
    cos = abs(float(psi @ phi)) / max(float(np.linalg.norm(psi)), 1e-300)  # phi is a unit vector
    gap = abs(ev[0]) - (abs(ev[1]) if len(ev) > 1 else 0.0)
    err = np.finfo(np.float64).eps * float(np.linalg.norm(A, 2)) / max(cos, 1e-300)
    return bool(gap > SIMPLE_GAP_FACTOR * err)


def is_good_triple(Q: Any, K: Any, V: Any) -> bool:
    r"""Definition 1: :math:`\lambda_1(V) > |\lambda_2(V)|` real positive simple, and
    :math:`\langle Q\varphi_1, K\varphi_1\rangle > 0`.

    >>> is_good_triple([[1, 0], [0, 1]], [[1, 0], [0, 1]], [[2, 0], [0, 1]])
    True
    >>> is_good_triple([[1, 0], [0, 1]], [[-1, 0], [0, 1]], [[2, 0], [0, 1]])
    False
    """
    Qa, Ka, Va = _triple(Q, K, V)
    lead = leading_direction(Va)
    if lead is None:
        return False
    _, phi, _ = lead
    return bool((Qa @ phi) @ (Ka @ phi) > 0)


def is_paranormal(V: Any, *, rtol: float = 1e-8) -> bool:
    r"""Definition 2 (ii): :math:`\mathbb{R}^d = F\oplus G`, both V-invariant, :math:`V|_F = \lambda I`
    with :math:`\lambda>0` and :math:`\rho(V|_G) < \lambda`.

    Equivalently: the spectral radius :math:`\lambda` is itself an eigenvalue, every other
    eigenvalue has modulus below it, and :math:`\lambda` is semisimple.

    >>> is_paranormal([[1, 0, 0], [0, 1, 0], [0, 0, -0.5]])
    True
    >>> is_paranormal([[1, 1], [0, 1]])  # a Jordan block is not
    False
    """
    A = _square(V, "V")
    ev = np.linalg.eigvals(A)
    rho = float(np.abs(ev).max())
    if rho == 0:
        return False
    # One tolerance decides both which eigenvalues count as lambda and which directions A - lambda I kills, so that
    # an eigenvalue between the two is never counted in the kernel but not in the multiplicity.
    top = np.abs(ev) >= rho * (1 - EIGEN_GROUP_RTOL)
    if not np.all(np.abs(ev[top] - rho) <= rtol * rho * 1e3):
        return False
    m = int(top.sum())
    rank = np.linalg.matrix_rank(A - rho * np.eye(len(A)), tol=EIGEN_GROUP_RTOL * rho)
    return bool(rank == len(A) - m)


def is_good_triple_with_multiplicity(Q: Any, K: Any, V: Any) -> bool:
    r"""Definition 2: :math:`Q^\top K` positive definite (as a quadratic form) and V paranormal."""
    Qa, Ka, Va = _triple(Q, K, V)
    return positive_definite(Qa.T @ Ka) and is_paranormal(Va)


def positive_coordinates(V: Any, z: np.ndarray) -> tuple[int, np.ndarray]:
    """``(k, c)``: k eigenvalues of V have positive real part; c (m, k) are the real coordinates
    of the points z (m, d) in that invariant subspace (along the complementary one)."""
    A = _square(V, "V")
    ev, R = np.linalg.eig(A)
    pos = ev.real > 0
    k = int(pos.sum())
    coords = np.linalg.solve(R, np.asarray(z, dtype=complex).T).T  # (m, d) eigen-coordinates
    c = coords[:, pos]
    # complex-conjugate pairs: keep real and imaginary parts of one of each pair
    cols, seen = [], set()
    for j, lam in zip(np.nonzero(pos)[0], ev[pos]):
        if abs(lam.imag) < 1e-12:
            cols.append(np.real(coords[:, j]))
        elif j not in seen:
            partner = int(np.argmin(np.abs(ev - lam.conjugate())))
            seen.add(partner)
            cols += [np.real(coords[:, j]), np.imag(coords[:, j])]
    del c
    return k, (np.stack(cols, axis=1) if cols else np.zeros((len(z), 0)))

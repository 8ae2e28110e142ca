r"""Constraints for every layer at once: the "everyone follows only its leader" invariant.

Suppose each token i follows only its assigned leader :math:`l(i)` at every layer (leaders are
assigned to themselves). Then leaders never move and eq. (1.1) gives the positions in closed form,
independent of A:

.. math::

    z_i^k = z_{l(i)} + c^k\,(z_i - z_{l(i)}),\qquad c = \frac{1}{1+\alpha}.

So "i follows only l(i) at layer k" (:func:`~attndyn.control._constraints.follows_only` at the
positions :math:`Z^k`) is a set of inequalities **linear in A** for every k, and if they all hold
for k = 0..K then, by induction on k, the engine's follow sets are exactly the assignment at every
layer: the leaders are exactly the assigned leaders and every token ends with its own. The rows
for large k approach those of the limit :math:`c^k \to 0`; :func:`layer_schedule` keeps a
geometric subset of the layers, and the verification run catches (and the rounds repair) any
layer in between.
"""

from __future__ import annotations

import numpy as np

from ._constraints import Preference
from ._reduce import follow_only_pairs
from ._solve import MAX_CONSTRAINTS, check_size

__all__ = ["positions", "layer_schedule", "invariant_preferences"]


def positions(Z: np.ndarray, owner: tuple[int, ...], alpha: float, k: int) -> np.ndarray:
    """:math:`Z^k` (n, d) when every token has followed only ``owner[i]`` for k layers.

    >>> positions(np.array([[1.0, 0.0], [0.0, 0.0]]), (0, 0), 1.0, 2).tolist()
    [[1.0, 0.0], [0.75, 0.0]]
    """
    L = Z[list(owner)]  # (n, d) each token's leader
    return L + (1.0 / (1.0 + alpha)) ** k * (Z - L)


def layer_schedule(layers: int, alpha: float, *, dense: int = 8, floor: float = 1e-9) -> list[int]:
    """Layers 0..``dense``, then doubling steps, then the last layer; layers whose factor
    :math:`c^k` is below ``floor`` add nothing new and are skipped (the last one is kept).

    >>> layer_schedule(60, 0.5)
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 60]
    """
    c = 1.0 / (1.0 + alpha)
    ks = list(range(min(dense, layers) + 1))
    k = 2 * dense
    while k < layers:
        ks.append(k)
        k *= 2
    ks = [k for k in ks if c**k >= floor]
    if layers not in ks:
        ks.append(layers)
    return ks


def invariant_preferences(
    Z: np.ndarray,
    owner: tuple[int, ...],
    alpha: float,
    ks: list[int],
    *,
    spd: bool = False,
    max_constraints: int = MAX_CONSTRAINTS,
) -> list[Preference]:
    """Every token follows only ``owner[i]`` at each layer of ``ks`` (positions of :func:`positions`), reduced to
    extreme followers and hull-vertex keys (:func:`~attndyn.control._reduce.follow_only_rows`: same optimum).
    Counted before the rows are built: more than ``max_constraints`` is refused (:func:`~attndyn.control._solve.check_size`)."""
    plan = []
    for k in ks:
        Zk = positions(Z, owner, alpha, k)
        for l in sorted(set(owner)):
            queries, keys = follow_only_pairs(Zk, [i for i in range(len(Z)) if owner[i] == l], l)
            plan.append((Zk, queries, keys, l, k))
    # The total, once every layer is planned (index lists only): a check inside the loop named a partial count.
    check_size(sum(len(q) * len(m) for _, q, m, _, _ in plan), Z.shape[1], spd=spd, max_constraints=max_constraints)
    return [Preference(i, l, m, k, Zk) for Zk, queries, keys, l, k in plan for i in queries for m in keys]


def first_deviations(follow: np.ndarray, owner: tuple[int, ...], tokens: list[int]) -> list[tuple[int, int]]:
    """For each token in ``tokens``, the first layer whose follow set (``follow`` (K+1, n, n)) is not
    exactly ``{owner[i]}``, as (token, layer) pairs; tokens that never deviate are left out."""
    out = []
    for i in tokens:
        want = np.zeros(follow.shape[-1], dtype=bool)
        want[owner[i]] = True
        bad = np.flatnonzero((follow[:, i] != want).any(axis=-1))
        if bad.size:
            out.append((i, int(bad[0])))
    return out

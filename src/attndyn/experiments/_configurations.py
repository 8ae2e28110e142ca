"""The papers' fixed configurations: the tokens and matrices of the figures, written once.

``attndyn reproduce`` redraws the figures from them and ``attndyn explore`` offers them as presets.
Hardmax paper: Alcalde, Fantuzzi & Zuazua 2024; softmax paper: Geshkovski, Letrouit, Polyanskiy & Rigollet 2023.
"""

from __future__ import annotations

import numpy as np

from .._validation import InputError

__all__ = [
    "FIG1_TOKENS",
    "FIG1_A",
    "FIG2_CONFIGS",
    "FIG2_LAYERS",
    "EXPECTED_VERTICES",
    "FIG7_TOKENS",
    "fig6_value_matrix",
    "fig7_value_matrix",
    "PARANORMAL_V",
    "TABLE1_HORIZONS",
    "table1_value_matrix",
]

# Fig. 1: z_1 = (1, 0); with A = I, z_2 and z_3 tie for the largest projection; with A = [[2,1],[1,1]], z_4 wins.
FIG1_TOKENS = [[1.0, 0.0], [2.0, 1.0], [2.0, -1.0], [1.5, 2.5], [-1.0, 0.5]]
FIG1_A = [[2.0, 1.0], [1.0, 1.0]]

# Fig. 2: four initial configurations, alpha = 0.5, A = I.
FIG2_CONFIGS: dict[str, list[list[float]]] = {
    # z_1 follows z_2 at layer 0; z_2 moves towards z_3 and z_1 becomes a leader at layer 1 (Example 5.2)
    "emerging leader": [[1, 0], [1.2, 0.5], [0, 4], [-1.5, -1], [-0.3, 0.6], [0.4, -0.8], [-0.6, -0.2]],
    "triangle polytope": [
        [0, 1.2],
        [-1, -0.6],
        [1.1, -0.5],
        [0.1, 0.1],
        [-0.2, -0.1],
        [0.3, -0.2],
        [0.0, 0.5],
        [-0.4, 0.3],
    ],
    "square polytope": [[1, 1], [-1, 1], [-1, -1], [1, -1], [0.3, 0.1], [-0.2, 0.5], [0.1, -0.6], [-0.5, -0.2]],
    # tokens on the diagonal follow both (1.5, 0) and (0, 1.5) and meet at their midpoint: a cluster without a leader
    "non-leader clusters": [[1.5, 0], [0, 1.5], [-1, -1], [0.3, 0.3], [0.2, 0.2], [0.5, 0.5], [-0.2, 0.4], [0.6, -0.3]],
}
FIG2_LAYERS = (0, 1, 2, 5, 30)
#: Vertices of K the hardmax paper's Fig. 2 shows for its polytope configurations.
EXPECTED_VERTICES = {"triangle polytope": 3, "square polytope": 4}

# Hardmax Fig. 7 / Example 5.2: z_1 follows z_2 at layer 0 and leads from layer 1 on (alpha = 0.5, A = I).
FIG7_TOKENS = [[1.0, 0.0], [1.2, 0.5], [0.0, 4.0]]


def fig6_value_matrix() -> np.ndarray:
    """Symmetric V with eigenvalues {1.35, -0.07} and leading eigenvector phi_1 ∝ (0.76, 0.65) (Fig. 6)."""
    phi = np.array([0.76, 0.65])
    phi /= np.linalg.norm(phi)
    psi = np.array([-phi[1], phi[0]])
    return 1.35 * np.outer(phi, phi) - 0.07 * np.outer(psi, psi)


def fig7_value_matrix(rng: np.random.Generator) -> np.ndarray:
    """A random (non-symmetric) V with eigenvalues {1.96, -0.22, 0.25} (Fig. 7a): S diag S^-1."""
    while True:
        S = rng.standard_normal((3, 3))
        if np.linalg.cond(S) < 20:
            return S @ np.diag([1.96, -0.22, 0.25]) @ np.linalg.inv(S)


#: Theorem 5.1's figure: V = diag(1, 1, -1/2), paranormal (the first two coordinates reach the boundary of a
#: convex polytope, the third goes to a hyperplane).
PARANORMAL_V = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, -0.5))

#: The final time of each Table 1 row's figure, (quick, full): ``attndyn reproduce --quick`` and the full run;
#: ``attndyn explore``'s presets run the quick one. Rows are the regimes of
#: :func:`attndyn.analysis.regime_of`. The rows whose sections gate their verdict on settling (polytope,
#: hyperplanes, paranormal, codimension) run as long in ``--quick`` as in the full run: shorter, the tokens still
#: move at the horizon and the library calls their verdicts undecided (quick's coarser step costs nothing there).
TABLE1_HORIZONS: dict[str, tuple[float, float]] = {
    "boolean": (10.0, 12.0),  # Thm 2.1 / Fig. 3: d = 1, V = 1
    "polytope": (15.0, 15.0),  # Thm 3.1 / Fig. 5: V = I
    "hyperplanes": (10.0, 10.0),  # Thm 4.1 / Fig. 6: a good triple
    "paranormal": (12.0, 12.0),  # Thm 5.1: V = PARANORMAL_V
    "collapse": (20.0, 50.0),  # Thm C.5: V = -I; the collapse is slow (algebraic) near the origin
    "codimension": (40.0, 40.0),  # Conj. 4.2 / Fig. 7a: the coordinate of eigenvalue 0.25 contracts like e^(-t/4)
}


def table1_value_matrix(regime: str, rng: np.random.Generator | None = None) -> np.ndarray:
    """V of the figure of Table 1 row ``regime`` (a key of :data:`TABLE1_HORIZONS`); ``codimension`` draws its V
    from ``rng`` (:func:`fig7_value_matrix`).

    >>> table1_value_matrix("collapse")
    array([[-1., -0.],
           [-0., -1.]])
    """
    if regime == "codimension":
        if rng is None:
            raise InputError("regime = 'codimension' draws V at random; give rng (a numpy Generator)")
        return fig7_value_matrix(rng)
    fixed = {
        "boolean": lambda: np.eye(1),
        "polytope": lambda: np.eye(2),
        "hyperplanes": fig6_value_matrix,
        "paranormal": lambda: np.array(PARANORMAL_V),
        "collapse": lambda: -np.eye(2),
    }
    if regime not in fixed:
        raise InputError(f"regime = {regime!r} is not a row of Table 1; choose among {', '.join(TABLE1_HORIZONS)}")
    return fixed[regime]()

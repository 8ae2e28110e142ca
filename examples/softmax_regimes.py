"""The limit geometry of softmax attention depends on the spectrum of V (softmax paper, Table 1).

python examples/softmax_regimes.py
"""

import numpy as np

import attndyn

rng = np.random.default_rng(1)
x = rng.standard_normal((40, 3))
regimes = {
    "V = I (Thm 3.1)": (np.eye(3), True),
    "good triple (Thm 4.1)": (np.array([[1.3, 0.2, 0.0], [0.2, 0.1, 0.1], [0.0, 0.1, -0.2]]), True),
    "paranormal (Thm 5.1)": (np.diag([1.0, 1.0, -0.5]), True),
    "V = -I (Thm C.5)": (-np.eye(3), False),
}
for name, (V, rescaled) in regimes.items():
    traj = attndyn.softmax(
        x, time=12.0, V=V, rescaled=rescaled, method="rk4", step=0.1, save=attndyn.SaveAt(every=None)
    )
    rep = attndyn.softmax_geometry(traj)
    print(f"{name:24s} regime={rep.regime:12s} holds={rep.holds}  {rep.measured}")

"""Leaders, clusters and the limit polytope of a hardmax run (hardmax paper, Theorem 1.1).

python examples/leaders_and_polytope.py
"""

import numpy as np

import attndyn

rng = np.random.default_rng(0)
tokens = rng.standard_normal((40, 2))
M = rng.standard_normal((2, 2))
A = M @ M.T + 0.5 * np.eye(2)  # symmetric positive definite, as Theorem 1.1 assumes

traj = attndyn.hardmax(tokens, alpha=0.5, layers=200, A=A, stop=attndyn.StopOnConvergence(rtol=1e-12))
report = attndyn.hardmax_theorem(traj)

print(f"stopped after {traj.stats.steps} layers ({traj.stats.stop_reason})")
print("leaders (index, first layer):", [(r["index"], r["since_layer"]) for r in report.leaders.records()])
print("polytope vertices (leaders):", report.vertex_leaders)
print(f"{len(report.clusters)} clusters; Theorem 1.1 holds: {report.holds}")

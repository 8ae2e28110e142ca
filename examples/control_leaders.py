"""Choose the matrix A so that the tokens you name are the leaders, and check it with the engine.

python examples/control_leaders.py [--out DIR]     # DIR/control_leaders.png: A = I vs the chosen A
"""

import argparse

import numpy as np

import attndyn
from attndyn.control import choose_A, choose_A_for_clusters, leadable

tokens = np.random.default_rng(1).standard_normal((14, 2))
print("leaders under A = I:", attndyn.leaders(attndyn.hardmax(tokens, alpha=0.5, layers=30)).indices)
print("tokens an SPD A can make lead at layer 0:", leadable(tokens, spd=True))

res = choose_A(tokens, [1, 7], spd=False, layers=30)  # general A: a linear program (scipy)
print(f"general A: {res.verdict}, margin {res.margin:.3f}, leaders found {res.leaders_found}")
try:
    res = choose_A(tokens, [1, 7], spd=True, layers=30)  # SPD A: a semidefinite program (cvxpy)
    print(
        f"SPD A: {res.verdict}, margin {res.margin:.3f}, leaders found {res.leaders_found}, "
        f"eigenvalues {np.linalg.eigvalsh(res.A).round(3).tolist()}"
    )
except attndyn.InputError as exc:  # cvxpy is an optional extra
    print(f"SPD A skipped: {exc}")

again = attndyn.hardmax(tokens, alpha=res.alpha, layers=res.layers, A=res.A, check_hypotheses=False)
print("re-simulated independently:", attndyn.leaders(again).indices)

inside = choose_A(tokens, [1, 5], spd=False)
print("asking for token 5:", inside.reason)

sides = [1 if z @ tokens[1] > z @ tokens[7] else 7 for z in tokens]  # each token with the leader it "faces"
part = choose_A_for_clusters(tokens, sides, spd=False, layers=30)
print(f"clusters {sides}: {part.verdict}; each token ends with {list(part.clusters_found)}")

ap = argparse.ArgumentParser()
ap.add_argument("--out", default=None)
args, _ = ap.parse_known_args()  # known only: the examples test runs this under pytest's argv
if args.out:
    from attndyn.plotting import control_comparison, save_figure

    print("wrote", *save_figure(control_comparison(res), f"{args.out}/control_leaders", formats=("png",)))

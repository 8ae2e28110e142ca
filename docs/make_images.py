"""Regenerate the README's pictures: python docs/make_images.py (a few seconds)."""

from pathlib import Path

import numpy as np

import attndyn
from attndyn import plotting

out = Path(__file__).parent / "images"
rng = np.random.default_rng(0)

square = [[1, 1], [-1, 1], [-1, -1], [1, -1], [0.3, 0.1], [-0.2, 0.5], [0.1, -0.6], [-0.5, -0.2], [0.6, 0.55]]
triangle = [[0, 1.2], [-1, -0.6], [1.1, -0.5], [0.1, 0.1], [-0.2, -0.1], [0.3, -0.2], [0.0, 0.5]]
runs = {
    name: attndyn.hardmax(z, alpha=0.5, layers=30, save=attndyn.SaveAt(follow=True))
    for name, z in {"square": square, "triangle": triangle}.items()
}
plotting.save_figure(plotting.hardmax_grid(runs, layers=(0, 1, 2, 5, 30)), out / "hardmax_fig2", formats=("png",))

x = rng.standard_normal((40, 3))
traj = attndyn.softmax(x, time=10.0, rescaled=True, method="rk4", step=0.1, save=attndyn.SaveAt(every=5))
plotting.save_figure(
    plotting.plot_trajectory(traj, title="softmax, V = I, n = 40, d = 3 (Thm 3.1)"),
    out / "softmax_polytope",
    formats=("png",),
)

x1 = np.sort(rng.standard_normal((40, 1)), axis=0)
traj1 = attndyn.softmax(x1, time=12.0, method="rk4", step=0.05, save=attndyn.SaveAt(every=20, attention=True))
plotting.save_figure(plotting.attention_matrices(traj1), out / "attention_boolean", formats=("png",))
print("wrote", sorted(p.name for p in out.glob("*.png")))

"""A trajectory prints as one short line; notebooks get the rich HTML view."""

import torch

import attndyn


def test_repr_is_short_and_names_the_run():
    x = torch.randn(4, 50, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    traj = attndyn.hardmax(x, alpha=0.5, layers=20)
    r = repr(traj)
    assert r == ("HardmaxTrajectory(21 states of (4, 50, 3) tokens (batch, n, d), 20 steps, "
                 f"stop_reason='completed', converged={traj.stats.converged})")
    assert "tensor" not in r and "\n" not in r
    soft = attndyn.softmax(x[0], time=1.0, method="euler", step=0.5)
    assert repr(soft).startswith("SoftmaxTrajectory(3 states of (50, 3) tokens, 2 steps, ")
    html = traj._repr_html_()
    assert html.startswith("<div><strong>HardmaxTrajectory</strong><table>") and "stop reason" in html

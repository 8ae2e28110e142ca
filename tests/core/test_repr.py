"""A trajectory prints as one short line; notebooks get the rich HTML view."""

import torch

import attndyn


def test_repr_is_short_and_names_the_run():
    x = torch.randn(4, 50, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    traj = attndyn.hardmax(x, alpha=0.5, layers=20)
    r = repr(traj)
    assert r == (
        "HardmaxTrajectory(21 states of (4, 50, 3) tokens (batch, n, d), 20 steps, "
        f"stop_reason='completed', converged={traj.stats.converged})"
    )
    assert "tensor" not in r and "\n" not in r
    soft = attndyn.softmax(x[0], time=1.0, method="euler", step=0.5)
    assert repr(soft).startswith("SoftmaxTrajectory(3 states of (50, 3) tokens, 2 steps, ")
    html = traj._repr_html_()
    assert html.startswith("<div><strong>HardmaxTrajectory</strong><table>") and "stop reason" in html


def test_hardmax_and_cli_share_the_alpha_default(tmp_path, capsys):
    import inspect
    import json

    import numpy as np

    from attndyn.cli import load_command, main

    default = inspect.signature(attndyn.hardmax).parameters["alpha"].default
    cmd = load_command("hardmax")
    assert default == 0.5 == next(p.default for p in cmd.params if p.name == "alpha")
    z = np.array([[1.0, 1.0], [-1.0, 1.0], [0.2, 0.1]])
    np.save(tmp_path / "z.npy", z)
    assert main(["hardmax", str(tmp_path / "z.npy"), "--layers", "10", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    api = attndyn.hardmax(z, layers=10)
    assert np.allclose(np.asarray(cli["final_tokens"]), api.final_tokens.numpy())
    assert torch.equal(api.final_tokens, attndyn.hardmax(z, alpha=0.5, layers=10).final_tokens)


def test_softmax_human_output_states_the_json_verdict_and_rescaling(tmp_path, capsys):
    import json

    import numpy as np

    from attndyn.cli import main

    x = np.random.default_rng(0).normal(size=(6, 2))
    np.save(tmp_path / "x.npy", x)
    for extra in ([], ["--rescaled"]):
        assert main(["softmax", str(tmp_path / "x.npy"), "--time", "2", "--json", *extra]) == 0
        rec = json.loads(capsys.readouterr().out)
        assert rec["rescaled"] is bool(extra)
        assert main(["softmax", str(tmp_path / "x.npy"), "--time", "2", *extra]) == 0
        out = capsys.readouterr().out
        th = rec["theorem"]
        if th.get("undecided"):  # the tokens still move at t = 2
            assert f"{th['regime']}: undecided: " + th["undecided"][:30] in " ".join(out.split())
        elif th["holds"] is None:
            assert "no theorem verdict: " + th["note"][:30] in " ".join(out.split())
        else:
            assert f"{th['regime']}: {'holds' if th['holds'] else 'does NOT hold'}" in out
        assert ("rescaled run: the tokens shown are z(t)" in out) is bool(extra)

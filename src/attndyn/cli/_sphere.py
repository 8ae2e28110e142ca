"""``attndyn sphere TOKENS ...`` (a run on the sphere, its clusters and energy) and ``attndyn sphere phase ...``
(a phase diagram over (t, beta)).

``sphere`` is a group of two commands, ``run`` and ``phase``; a first argument that names no command is a
tokens file, run by ``run`` (``attndyn sphere TOKENS ...`` is ``attndyn sphere run TOKENS ...``).
"""

from __future__ import annotations

import json
import math
import os
import sys
import time as time_module  # the command's --time option is called time
from pathlib import Path
from typing import Any

import typer

from .._errors import InputError
from ._groups import run_by_default

__all__ = ["app", "run_cmd", "phase_cmd", "register", "sphere_summary"]


app = run_by_default(
    "sphere",
    "TOKENS --beta B --time T [OPTIONS] | phase --out DIR [OPTIONS]",
    "Tokens on the unit sphere (arXiv 2312.10794): attndyn sphere TOKENS --beta B --time T runs SA or USA "
    "(or normalised layers) and reports clusters, energy and the theorems' verdicts; attndyn sphere phase --out DIR "
    "draws a phase diagram over (t, beta).",
)


def sphere_summary(traj: Any, b: int, angle: float) -> dict[str, Any]:
    """The JSON record of one sequence of a sphere run (the CLI's ``--json`` contract)."""
    from .. import sphere as sp

    x = traj.ys[-1, b]
    beta = float(traj.params.beta[b])
    e = float(sp.energy(x, beta))
    rep = sp.cluster_report(traj, b, angle=angle)
    clusters = []
    for members in rep.clusters:
        c = x[members].mean(dim=0)
        clusters.append({"center": (c / c.norm()).tolist(), "members": members})
    theorems = {"clusters": rep.record(), "energy": sp.energy_report(traj, b).record()}
    if traj.n_tokens >= 2:
        theorems["orthogonal_start"] = sp.orthogonal_start_report(traj, b).record()
    return {
        "final_tokens": x.tolist(),
        "clusters": clusters,
        "energy": e if math.isfinite(e) else None,
        "beta": beta,
        "order_parameter": rep.order_parameter,
        "clustered_fraction": rep.clustered_fraction,
        "steps": int(traj.stats.steps),
        "theorems": theorems,
        "stats": {
            "function_evals": traj.stats.function_evals,
            "stop_reason": traj.stats.stop_reason,
            "message": traj.stats.message,
        },
    }


def _text(rec: dict[str, Any], head: str) -> None:
    typer.echo(f"{head}: {len(rec['final_tokens'])} tokens, {rec['steps']} steps, beta = {rec['beta']:g}")
    energy = "overflows float64" if rec["energy"] is None else f"{rec['energy']:.6g}"
    typer.echo(f"  energy E_beta = {energy}; order parameter {rec['order_parameter']:.4f}")
    for k, c in enumerate(rec["clusters"]):
        centre = ", ".join(f"{v:.4g}" for v in c["center"])
        typer.echo(f"  cluster {k}: ({centre})  members {' '.join(map(str, c['members']))}")
    for name, th in rec["theorems"].items():
        verdict = "holds" if th["holds"] else "does NOT hold"
        if not th["applies"]:  # as the hardmax command says it: no claim, and what is seen
            seen = "is seen" if th["holds"] else "is not seen" if th["holds"] is False else "is not measured"
            typer.echo(f"  {name}: makes no claim (its hypotheses do not all hold here); its conclusion {seen}")
            continue
        if th["holds"] is None:
            verdict = f"undecided: {th['undecided']}"
        elif not th["holds"] and th["applies"] and name == "clusters":  # a statement about t -> infinity
            verdict = (
                f"not yet ({th['clusters']} clusters at the end of the run; the theorem speaks of t -> infinity: "
                "run longer, a larger --time)"
            )
        elif not th["holds"] and th["applies"] and name == "orthogonal_start":
            verdict += (
                f" (largest error {th['error']:.2g} against tol {th['tol']:g}; the solver's own error counts in it: "
                "a smaller --step shows whether it is the step's)"
            )
        typer.echo(f"  {name}: {verdict}")


def _beta_grid(beta_min: float, beta_max: float | None, betas: int) -> list[float]:
    """The evenly spaced betas of ``attndyn sphere phase`` (``beta_max`` None: 9, or ``beta_min`` for one beta)."""
    if not (isinstance(betas, int) and betas >= 1):
        raise InputError(f"--betas must be an integer >= 1, got {betas!r}")
    if betas == 1 and beta_max not in (None, beta_min):
        raise InputError(f"--betas 1 runs one beta, --beta-min {beta_min:g}: drop --beta-max or set more --betas")
    beta_max = (9.0 if betas > 1 else beta_min) if beta_max is None else beta_max
    for name, bound in (("--beta-min", beta_min), ("--beta-max", beta_max)):
        if not math.isfinite(bound):
            raise InputError(f"{name} must be a finite number, got {bound!r}")
    if beta_max < beta_min:
        raise InputError(f"--beta-max {beta_max:g} is below --beta-min {beta_min:g}; swap them")
    return [beta_min + (beta_max - beta_min) * k / max(1, betas - 1) for k in range(betas)]


def _check_figure(figure: Path | None, z: Any, tokens: Path) -> None:
    """A --figure of run refused before the run: a .png or .gif name that can be written
    (:func:`attndyn._io.check_output_file`), for tokens of dimension 2 or 3."""
    from .._io import check_output_file

    if figure is None:
        return
    if figure.suffix.lower() not in (".png", ".gif"):
        raise InputError(f"--figure {str(figure)!r}: give a .png or .gif file name")
    if z.ndim in (2, 3) and z.shape[-1] not in (2, 3):
        raise InputError(f"--figure draws tokens of dimension 2 or 3, these have dimension {z.shape[-1]}")
    check_output_file(figure, "--figure", inputs=(tokens,))


_METHOD_HELP = "discrete, euler, midpoint, heun, rk4, dopri5, dopri8, ... (default: rk4; discrete with --norm)."


@app.command("run")
def run_cmd(
    tokens: Path = typer.Argument(
        ..., metavar="TOKENS", help="Unit tokens: .npy, .csv or .json, shape (n, d) or (B, n, d)."
    ),
    beta: float = typer.Option(1.0, "--beta", help="Inverse temperature beta."),
    time: float = typer.Option(10.0, "--time", help="Final time T."),
    attention: str = typer.Option("sa", "--attention", help="sa (softmax weights) or usa (e^(beta s)/n)."),
    method: str | None = typer.Option(None, "--method", help=_METHOD_HELP),
    step: float = typer.Option(0.1, "--step", help="Step / output grid spacing."),
    norm: str | None = typer.Option(None, "--norm", help="post, pre, peri or ngpt (implies --method discrete)."),
    causal: bool = typer.Option(False, "--causal", help="Token i attends to tokens j <= i only."),
    noise: float = typer.Option(0.0, "--noise", help="Noise level sigma >= 0 (needs --seed)."),
    seed: int | None = typer.Option(None, "--seed", help="Seed of the noise."),
    normalize: bool = typer.Option(False, "--normalize", help="Divide each token by its norm (else refused)."),
    angle: float = typer.Option(1e-3, "--angle", help="Clusters: tokens within this angle (radians) are linked."),
    figure: Path | None = typer.Option(
        None,
        "--figure",
        help="Write the run as RUN.png (d = 2: angles against t; d = 3: paths on the sphere) or RUN.gif (the tokens "
        "moving; on S^2 the view turns once around).",
    ),
    as_json: bool = typer.Option(False, "--json", help="One JSON object on stdout."),
) -> None:
    """Run tokens on the sphere (arXiv 2312.10794); report clusters, the energy and the theorems' verdicts."""
    from .. import sphere as sp
    from .._io import load_array
    from ._dynamics import solver_failed
    from ._flags import SPHERE_RUN_FLAGS, worded_by

    z = load_array(tokens, "TOKENS")
    _check_figure(figure, z, tokens)
    method = method or ("rk4" if norm is None else "discrete")  # --norm names layers: the discrete method's
    if not (isinstance(angle, float) and 0 < angle < math.pi):
        raise InputError(f"--angle must be in (0, pi) radians, got {angle!r}")
    with worded_by(SPHERE_RUN_FLAGS):  # no --max-steps here: the step budget is worded as what the flags change
        traj = sp.evolve(
            z, beta=beta, time=time, attention=attention, method=method, step=step, norm=norm, causal=causal,
            noise=noise, seed=seed, normalize=normalize, progress=sys.stderr.isatty(),
        )  # fmt: skip
        if traj.stats.stop_reason == "solver_failed":
            raise solver_failed(traj.stats.message)
    recs = [sphere_summary(traj, b, angle) for b in range(traj.batch_size)]
    if figure is not None:
        from ..plotting._animation import animate
        from ..plotting._save import save_figure
        from ..plotting._sphere import sphere_frames, sphere_tokens_figure

        if figure.suffix.lower() == ".gif":
            animate(None, figure, frames=sphere_frames(traj), fps=6)
        else:
            save_figure(sphere_tokens_figure(traj), figure.with_suffix(""), formats=("png",))
    if as_json:
        from ._dynamics import strict_json

        print(json.dumps(strict_json({"sequences": recs} if traj.batched else recs[0]), allow_nan=False))
        return
    for b, rec in enumerate(recs):
        _text(rec, f"sphere ({attention}, {method})" + (f" — sequence {b}" if traj.batched else ""))


@app.command("phase")
def phase_cmd(
    out: Path | None = typer.Option(None, "--out", help="Folder for phase.json and phase.png (created)."),
    systems: int = typer.Option(256, "--systems", help="Systems per beta (the authors: 2048)."),
    n: int = typer.Option(32, "--n", help="Tokens per system."),
    d: int = typer.Option(2, "--d", help="Dimension of the tokens."),
    beta_min: float = typer.Option(0.1, "--beta-min", help="Smallest beta."),
    beta_max: float | None = typer.Option(None, "--beta-max", help="Largest beta (9; with --betas 1, --beta-min)."),
    betas: int = typer.Option(30, "--betas", help="Betas, evenly spaced (the authors: 90)."),
    time: float = typer.Option(30.0, "--time", help="Horizon T."),
    step: float = typer.Option(0.1, "--step", help="Step."),
    checkpoints: int = typer.Option(200, "--checkpoints", help="Times read, evenly spaced in [0, T]."),
    delta: float = typer.Option(1e-3, "--delta", help="A pair is clustered when <x_i, x_j> > 1 - delta."),
    attention: str = typer.Option("sa", "--attention", help="sa or usa."),
    method: str = typer.Option("discrete", "--method", help="discrete (layers) or a fixed-step scheme."),
    norm: str | None = typer.Option(None, "--norm", help="post (default), pre, peri or ngpt (--method discrete)."),
    kq: str = typer.Option("identity", "--kq", help="Ensemble of K^T Q per system: identity, gaussian or goe."),
    v: str = typer.Option("identity", "--v", help="Ensemble of V per system: identity, gaussian, plus or minus."),
    seed: int = typer.Option(0, "--seed", help="Seed of the initial tokens (and of the parameters)."),
    as_json: bool = typer.Option(False, "--json", help="Print the diagram as JSON on stdout too."),
) -> None:
    """Phase diagram over (t, beta): fraction of clustered pairs and cluster count, every beta in one batch;
    writes OUT/phase.json and OUT/phase.png (heatmaps with the orthogonal-start curve)."""
    from .. import sphere as sp
    from ._dynamics import check_out_folder, strict_json

    if out is None:
        raise InputError("give the output folder: attndyn sphere phase --out DIR")
    check_out_folder(out, "--out")
    grid = _beta_grid(beta_min, beta_max, betas)
    beta_max = grid[-1] if beta_max is None else beta_max  # as given: the grid's last point may differ by an ulp
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None  # not on every platform
    t0 = time_module.perf_counter()
    pd = sp.phase_diagram(
        systems=systems, n=n, d=d, betas=grid, time=time, step=step, checkpoints=checkpoints, delta=delta,
        attention=attention, method=method, norm=norm, kq=kq, v=v, seed=seed, progress=sys.stderr.isatty(),
    )  # fmt: skip
    from .._io import write_json
    from ..plotting._save import save_figure
    from ..plotting._sphere import phase_diagram_figure

    path = pd.save(out / "phase.json")
    pngs = save_figure(phase_diagram_figure(pd), out / "phase", formats=("png",))
    command = (
        f"attndyn sphere phase --out {out} --systems {systems} --n {n} --d {d} --beta-min {beta_min!r} "
        f"--beta-max {beta_max!r} --betas {betas} --time {time!r} --step {step!r} --checkpoints {checkpoints} "
        f"--delta {delta!r} --attention {attention} --method {method}"
        + (f" --norm {pd.settings['norm']}" if pd.settings.get("norm") else "")
        + f" --kq {kq} --v {v} --seed {seed}"
    )  # the resolved configuration, every option spelled out (floats by repr: :g kept 6 digits)
    run = {"seconds": time_module.perf_counter() - t0, "load_1min_before": load, "cpus": os.cpu_count()}
    config = write_json(out / "config.json", {"command": command, **pd.settings, "run": run})
    if as_json:
        print(json.dumps(strict_json(pd.record()), allow_nan=False))
    else:
        typer.echo(f"written: {path}, {pngs[0]}, {config}")


def register(parent: typer.Typer) -> None:
    """Add the ``sphere`` commands to the ``attndyn`` app."""
    parent.add_typer(app, name="sphere")

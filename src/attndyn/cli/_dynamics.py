"""``attndyn hardmax``, ``attndyn softmax`` and ``attndyn demo``: thin wrappers over the API.

The engines (torch, numpy, the analysis) are imported when a command runs, not when it parses its options or
shows its help (which then take a fraction of a second).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.table import Table

from .._errors import InputError, param

if TYPE_CHECKING:
    import torch

    from .._trajectory import HardmaxTrajectory, SoftmaxTrajectory

#: The softmax methods, named in the help without importing the engine (a test checks them against it).
METHODS = ("discrete", "euler", "midpoint", "heun", "rk4", "dopri5", "dopri8", "bosh3", "adaptive_heun")

console = Console(stderr=False)

#: The clusters of a softmax run's final tokens: linked within this fraction of the tokens' largest coordinate
#: (relative only: tokens of size 1e-4 are not one cluster at the origin).
CLUSTER_RTOL = 1e-3


def _floats(t: torch.Tensor) -> Any:
    return t.detach().cpu().tolist()


def hardmax_summary(traj: HardmaxTrajectory, b: int) -> dict[str, Any]:
    """The JSON record of one sequence of a hardmax run (the CLI's ``--json`` contract)."""
    from .. import analysis

    rep = analysis.hardmax_theorem(traj, b)
    real = traj.real_tokens(b)
    return {
        "final_tokens": _floats(traj.ys[-1, b][real]),
        "leaders": rep.leaders.records(),
        "rounding_events": rep.leaders.rounding_records(),
        "clusters": [c.record() for c in rep.clusters],
        "converged": rep.converged,
        "settled": rep.settled,
        "settled_rtol": rep.settled_rtol,
        "layers": int(traj.stats.steps),
        "theorem": rep.record(),
    }


# The final attention matrix goes into the JSON only up to this many tokens (it is n x n).
ATTENTION_JSON_MAX_TOKENS = 1000


def softmax_summary(traj: SoftmaxTrajectory, b: int) -> dict[str, Any]:
    import numpy as np

    from .. import analysis
    from ..analysis._theorems import SOFTMAX_SETTLED_RTOL, sequence_converged, sequence_settled

    real = traj.real_tokens(b)
    pts = traj.ys[-1, b][real].detach().cpu().numpy()
    tol = analysis.cluster_tolerance(pts, CLUSTER_RTOL, floor=np.finfo(np.float64).tiny)  # relative to the tokens
    settled = sequence_settled(traj, b, SOFTMAX_SETTLED_RTOL)
    try:
        theorem = analysis.softmax_geometry(traj, b).record()  # holds None while undecided (the library decides)
    except InputError as exc:
        from ._flags import FLAGS

        theorem = {"regime": None, "holds": None, "note": exc.worded(FLAGS)}
    P = traj.attention_final[b] if traj.attention_final is not None else None
    return {
        "final_tokens": pts.tolist(),
        "leaders": analysis.leaders(traj, b).records(),
        "clusters": [c.record() for c in analysis.clusters(pts, members=real.numpy(), tol=tol)],
        "cluster_tol": tol,
        "converged": sequence_converged(traj, b),
        "settled": settled,
        "settled_rtol": SOFTMAX_SETTLED_RTOL,
        "layers": int(traj.stats.steps),
        "rescaled": traj.params.rescaled,
        "theorem": theorem,
        "attention_final": None if P is None else _floats(P),
        "stats": {
            "function_evals": traj.stats.function_evals,
            "stop_reason": traj.stats.stop_reason,
            "message": traj.stats.message,
        },
    }


# What the two words mean beside each verdict (the CLI runs without a stopping test).
_CONVERGED = {True: "a step left the tokens exactly unchanged", False: "no step left the tokens exactly unchanged"}
_NOT_NEEDED = "; not needed: the verdicts read the settled tokens"  # said of settled tokens only
_SETTLED = {
    True: "the final tokens show the limits the theorem speaks of",
    False: "the tokens still move: a verdict on them is undecided; run longer",
}
_RATE = "the tokens still move; what the theorem's check reads has settled, or is a rate measured along the run"


def _zero_below(rec: dict[str, Any]) -> float:
    """Coordinates of a cluster center at most this size print as 0: the tolerance the clusters were found with
    (the theorem's ``cluster_tol`` of a hardmax run; the record's own of :func:`softmax_summary`), at most 1e-6 of
    the largest center coordinate (a run far from settled has a tolerance of the tokens' own size, under which
    every center would print as 0)."""
    tol = (rec.get("theorem") or {}).get("cluster_tol")
    tol = rec.get("cluster_tol", 0.0) if tol is None else tol
    size = max((abs(v) for c in rec.get("clusters") or [] for v in c["center"] if v is not None), default=0.0)
    return min(float("inf") if tol is None else float(tol), 1e-6 * size)


def strict_json(obj: Any) -> Any:
    """``obj`` with every non-finite float as None (:func:`attndyn._io.finite_json`), so that ``--json`` prints JSON
    that every parser reads (a leader's margin is +inf when no other key competes)."""
    from .._io import finite_json  # numpy behind it: not imported for --help

    return finite_json(obj)


def _emit(records: list[dict[str, Any]], batched: bool, as_json: bool, title: str) -> None:
    from ..analysis._verdict import verdict_of

    if as_json:
        print(json.dumps(strict_json({"sequences": records} if batched else records[0]), allow_nan=False))
        return
    for b, rec in enumerate(records):
        head = f"{title}" + (f" — sequence {b}" if batched else "")
        console.print(
            f"[bold]{head}[/bold]: {len(rec['final_tokens'])} tokens, {rec['layers']} steps, "
            f"converged: {rec['converged']} ({_CONVERGED[rec['converged']]}"
            f"{_NOT_NEEDED if rec['settled'] and not rec['converged'] else ''})"
        )
        th = rec["theorem"]
        # a softmax verdict on tokens that still move measures their approach (Thm C.5), not their end
        rate = not rec["settled"] and th.get("regime") is not None and th.get("holds") is not None
        console.print(
            f"  settled (relative change of the last step <= {rec['settled_rtol']:g}): {rec['settled']} "
            f"({_RATE if rate else _SETTLED[rec['settled']]})"
        )
        if rec.get("rescaled"):
            console.print(
                "  rescaled run: the tokens shown are z(t) = exp(-tV) x(t) (softmax paper, eq. (4)), not x(t)"
            )
        lead = ", ".join(f"{r['index']} (since {r['since_layer']})" for r in rec["leaders"]) or "none"
        console.print(f"  leaders: {lead}")
        rounded = rec.get("rounding_events") or []
        if rounded:
            who = sorted({r["index"] for r in rounded})
            console.print(
                f"  decided by rounding, not leaders: token(s) {', '.join(map(str, who))} at "
                f"{len(rounded)} layer(s) (margin within the rounding bound; see attndyn.margins)"
            )
        table = Table("cluster", "center", "members", show_edge=False)
        zero = _zero_below(rec)
        for k, c in enumerate(rec["clusters"]):
            table.add_row(
                str(k),
                "(" + ", ".join(f"{0.0 if abs(v) <= zero else v:.4g}" for v in c["center"]) + ")",
                " ".join(map(str, c["members"])),
            )
        console.print(table)
        name = th.get("regime") or ("Theorem 1.1" if title == "hardmax" else "theorem")
        verdict = verdict_of(th)
        if verdict is not None:
            console.print(f"  {name}: {verdict}", markup=False)
        else:  # the JSON's verdict is null: say why
            console.print(f"  no theorem verdict: {th.get('note', 'no theorem applies to this run')}")


def check_out_folder(out: Path, option: str) -> None:
    """Refuse an output folder that is empty, a file, or below a file, before any work is done."""
    if str(out).strip() in ("", "."):
        raise InputError(f"{option} needs a folder name, got {str(out)!r}")
    for p in (out, *out.parents):
        if p.exists() and not p.is_dir():
            raise InputError(f"{option} {str(out)!r}: {str(p)!r} is a file, not a folder; choose another {option}")


def _interactive() -> bool:
    """Progress bars (on standard error) only when a person is watching."""
    return sys.stderr.isatty()


def _matrix(path: Path | None, name: str) -> Any:
    from .._io import load_array

    return None if path is None else load_array(path, name)


def hardmax_cmd(
    tokens: Path = typer.Argument(..., help="Tokens: .npy, .csv or .json, shape (n, d) or (B, n, d)."),
    alpha: float = typer.Option(0.5, help="Step size alpha > 0."),
    layers: int = typer.Option(30, help="Number of layers."),
    matrix: Path | None = typer.Option(
        None, "--matrix", help="The (d, d) matrix A (.npy/.csv/.json); identity if absent."
    ),
    tol: float = typer.Option(0.0, help="Tie tolerance (0: exact ties)."),
    causal: bool = typer.Option(False, "--causal", help="Token i attends to tokens j <= i only."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object on stdout."),
) -> None:
    """Run the hardmax dynamics (hardmax paper eq. 1.1); report leaders, clusters and Theorem 1.1."""
    from .._io import load_array

    z = load_array(tokens, "TOKENS")  # a bad file is refused before the engine (torch) is imported
    from .._hardmax import hardmax

    A = _matrix(matrix, "--matrix")
    traj = hardmax(z, alpha=alpha, layers=layers, A=A, tol=tol, causal=causal, progress=_interactive())
    recs = [hardmax_summary(traj, b) for b in range(traj.batch_size)]
    _emit(recs, traj.batched, as_json, "hardmax")


def softmax_cmd(
    tokens: Path = typer.Argument(..., help="Tokens: .npy, .csv or .json, shape (n, d) or (B, n, d)."),
    Q: Path | None = typer.Option(None, "--Q", help="Query matrix file; identity if absent."),
    K: Path | None = typer.Option(None, "--K", help="Key matrix file; identity if absent."),
    V: Path | None = typer.Option(None, "--V", help="Value matrix file; identity if absent."),
    beta: float = typer.Option(1.0, help="Inverse temperature."),
    time: float = typer.Option(10.0, "--time", help="Final time T."),
    method: str = typer.Option("rk4", help=f"One of: {', '.join(METHODS)}."),
    step: float = typer.Option(0.1, help="Step / output grid spacing."),
    rescaled: bool = typer.Option(False, "--rescaled", help="Evolve z = exp(-tV) x (eq. 4)."),
    causal: bool = typer.Option(False, "--causal", help="Token i attends to tokens j <= i only."),
    max_steps: int = typer.Option(
        100_000, "--max-steps", help="Step budget of the whole run (refused or stopped beyond)."
    ),
    as_json: bool = typer.Option(False, "--json", help="One JSON object on stdout."),
) -> None:
    """Run the softmax self-attention dynamics (softmax paper eqs. 1-4); report the limit geometry."""
    from .._io import load_array

    z = load_array(tokens, "TOKENS")  # a bad file is refused before the engine (torch) is imported
    from .._options import SaveAt
    from .._softmax import softmax

    steps = time / step if time > 0 and step > 0 else 0  # nonsense values are refused by softmax()
    keep = max(1, int(min(steps, 1e18)) // 50) if math.isfinite(steps) else 1
    small = z.ndim >= 2 and z.shape[-2] <= ATTENTION_JSON_MAX_TOKENS
    traj = softmax(
        z,
        Q=_matrix(Q, "--Q"),
        K=_matrix(K, "--K"),
        V=_matrix(V, "--V"),
        beta=beta,
        time=time,
        method=method,
        step=step,
        rescaled=rescaled,
        causal=causal,
        max_steps=max_steps,
        save=SaveAt(every=keep, final_attention=small),
        progress=_interactive(),
    )
    recs = [softmax_summary(traj, b) for b in range(traj.batch_size)]
    _emit(recs, traj.batched, as_json, f"softmax ({method})")
    if traj.stats.stop_reason == "solver_failed":
        raise solver_failed(traj.stats.message)


def solver_failed(message: str) -> InputError:
    """The refusal of a run whose solver failed: its message (``stats.message``, worded for a Python caller), the
    advice to raise the step budget in it marked as the parameter ``max_steps`` (:func:`attndyn._errors.param`),
    which the command line words as its flag."""
    from .._adaptive import RAISE_BUDGET

    return InputError(message.replace(RAISE_BUDGET, param("max_steps.spent", RAISE_BUDGET)))


# Built-in configurations of the hardmax paper's Figure 2 (alpha = 0.5, A = I).
DEMO_CONFIGS: dict[str, list[list[float]]] = {
    "square polytope": [[1, 1], [-1, 1], [-1, -1], [1, -1], [0.3, 0.1], [-0.2, 0.5], [0.1, -0.6], [-0.5, -0.2]],
    "triangle polytope": [[0, 1.2], [-1, -0.6], [1.1, -0.5], [0.1, 0.1], [-0.2, -0.1], [0.3, -0.2], [0.0, 0.5]],
}


def demo_cmd(
    out: Path = typer.Option(Path("attndyn-demo"), "--out", help="Folder for the JSON results and figures."),
    seed: int = typer.Option(0, help="Seed of the random configurations."),
) -> None:
    """The main job on built-in defaults: the papers' configurations, their leaders and clusters."""
    import numpy as np

    from .._hardmax import hardmax
    from .._io import check_writable, write_json
    from .._options import SaveAt
    from .._softmax import softmax

    check_out_folder(out, "--out")
    if seed < 0:
        raise InputError(f"--seed must be a non-negative integer, got {seed}")
    check_writable(out, "--out")  # before the runs, not after them
    rng = np.random.default_rng(seed)
    results: dict[str, Any] = {}
    runs: dict[str, Any] = {}
    for name, z in DEMO_CONFIGS.items():
        traj = hardmax(np.array(z), alpha=0.5, layers=30)
        runs[f"hardmax: {name}"] = traj
        results[f"hardmax: {name}"] = hardmax_summary(traj, 0)
    z_random = rng.standard_normal((32, 2))
    traj = hardmax(z_random, alpha=0.5, layers=60)
    runs["hardmax: 32 random tokens"] = traj
    results["hardmax: 32 random tokens"] = hardmax_summary(traj, 0)
    x = rng.standard_normal((40, 3))
    straj = softmax(x, time=10.0, rescaled=True, method="rk4", step=0.1, save=SaveAt(every=10))
    runs["softmax: V = I, n = 40, d = 3 (Thm 3.1)"] = straj
    results["softmax: V = I, n = 40, d = 3 (Thm 3.1)"] = softmax_summary(straj, 0)
    for title, rec in results.items():
        _emit([rec], False, False, title)
    out.mkdir(parents=True, exist_ok=True)
    write_json(
        out / "results.json",
        {k: {kk: vv for kk, vv in v.items() if kk != "attention_final"} for k, v in results.items()},
    )
    write_json(
        out / "config.json",
        {
            "seed": seed,
            "hardmax": {"alpha": 0.5, "layers": 30},
            "softmax": {"time": 10.0, "method": "rk4", "step": 0.1, "rescaled": True},
        },
    )
    figures = _demo_figures(runs, out)
    console.print(f"wrote {out / 'results.json'}" + (f" and {len(figures)} figures" if figures else ""))


def _demo_figures(runs: dict[str, Any], out: Path) -> list[Path]:
    try:
        from ..plotting import plot_trajectory, save_figure  # provided by the plotting package
    except ImportError:
        return []
    paths = []
    for k, (name, traj) in enumerate(runs.items()):
        fig = plot_trajectory(traj, title=name)
        paths += save_figure(fig, out / f"demo_{k}", formats=("png",))
    return paths


def register(app: typer.Typer) -> None:
    """Add the ``hardmax``, ``softmax`` and ``demo`` commands to the ``attndyn`` app."""
    app.command("hardmax")(hardmax_cmd)
    app.command("softmax")(softmax_cmd)
    app.command("demo")(demo_cmd)

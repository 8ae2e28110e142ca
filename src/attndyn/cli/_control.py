"""``attndyn control``: choose the matrix A so that the tokens you name lead, and verify it."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from .._errors import InputError

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ..control import ControlResult

__all__ = ["control_cmd", "register"]


def control_cmd(
    tokens: Path = typer.Argument(..., help="Tokens: .npy, .csv or .json, one sequence (n, d)."),
    leaders: str | None = typer.Option(None, "--leaders", help="Tokens that should lead, e.g. 0,2,5."),
    clusters: str | None = typer.Option(
        None,
        "--clusters",
        help="Instead of --leaders: the leader each token should end with, one index per token, e.g. 0,1,0,1.",
    ),
    spd: bool = typer.Option(
        False,
        "--spd",
        help="Symmetric positive definite A (an SDP; needs the \\[control] extra). "
        "Default: any A with |A_ab| <= 1 (an LP).",
    ),
    alpha: float = typer.Option(0.5, help="Step size alpha > 0 of the verification run."),
    layers: int = typer.Option(60, help="Layers of the verification run."),
    rounds: int = typer.Option(5, help="At most this many solve-and-simulate rounds."),
    margin: float = typer.Option(0.0, help="Accept only an A whose normalised margin exceeds this (0: any positive)."),
    max_constraints: int = typer.Option(
        200_000,  # attndyn.control._solve.MAX_CONSTRAINTS (not imported: scipy loads only when the command runs)
        "--max-constraints",
        help="Refuse a margin problem with more constraints (with its estimate).",
    ),
    as_json: bool = typer.Option(False, "--json", help="One JSON object on stdout."),
    figure: Path | None = typer.Option(
        None, "--figure", help="Write the tokens under A = I and under the chosen A side by side (.png, .svg or .pdf)."
    ),
    save_matrix: Path | None = typer.Option(
        None, "--save-matrix", help="Write the chosen A as .npy (for `attndyn hardmax --matrix`)."
    ),
) -> None:
    """Choose A so that exactly the named tokens lead (hardmax paper eq. 1.1), then verify with the exact engine.

    Exit status 0: reached; 1: only layer 0 reached (other leaders emerge later), or undecided (another token
    followed only itself by a margin within rounding); 2: bad input, or no A
    (a token inside the hull of the others, or no positive margin), with one line on standard error."""
    from .._io import load_array

    _check_options(leaders, clusters, figure, save_matrix, tokens)
    z = load_array(tokens, "TOKENS")  # a bad file is refused before the engine (torch) is imported
    from .._validation import parse_indices
    from ..control import choose_A, choose_A_for_clusters

    if z.ndim == 3 and z.shape[0] == 1:
        z = z[0]
    settings: dict[str, Any] = dict(
        spd=spd, alpha=alpha, layers=layers, rounds=rounds, margin=margin, max_constraints=max_constraints
    )
    # the library checks the indices against the tokens; its errors name parameters that attndyn's handler words
    # as this command's flags (cli._flags.FLAGS)
    if leaders is not None:
        res = choose_A(z, parse_indices(leaders, "--leaders"), **settings)
    else:
        assert clusters is not None  # exactly one of --leaders and --clusters (checked above)
        res = choose_A_for_clusters(z, parse_indices(clusters, "--clusters"), **settings)
    if as_json:
        print(json.dumps(res.record()))
    else:
        _print(res)
    if res.verdict == "not_reached":  # a refusal: nothing is written, existing files stay as they are
        raise InputError(f"target not reached: {res.reason or 'no verified A'}")
    _write_outputs(res, tokens.name, save_matrix, figure)
    if res.verdict in ("layer0_only", "undecided"):
        raise typer.Exit(1)


def _check_options(
    leaders: str | None, clusters: str | None, figure: Path | None, save_matrix: Path | None, tokens: Path
) -> None:
    """Exactly one of --leaders and --clusters; a --figure name with a format matplotlib writes, a --save-matrix
    name ending in .npy; output names that can be written (:func:`attndyn._io.check_output_file`: not a folder,
    not under a file, not TOKENS) and not the same file."""
    from .._io import check_output_file

    if (leaders is None) == (clusters is None):
        raise InputError(
            "give exactly one of --leaders (e.g. --leaders 0,2) and --clusters (one leader index per token)"
        )
    if figure is not None and figure.suffix.lower().lstrip(".") not in ("png", "svg", "pdf"):
        raise InputError(f"--figure {str(figure)!r}: the name must end in .png, .svg or .pdf")
    if save_matrix is not None and save_matrix.suffix.lower() != ".npy":
        raise InputError(
            f"--save-matrix {str(save_matrix)!r}: the matrix is written as .npy (what `attndyn hardmax --matrix` "
            "reads); end the name with .npy"
        )
    for flag, path in (("--figure", figure), ("--save-matrix", save_matrix)):
        if path is not None:
            check_output_file(path, flag, inputs=(tokens,))
    if figure is not None and save_matrix is not None and figure.resolve() == save_matrix.resolve():
        raise InputError("--figure and --save-matrix name the same file; give two names")


def _write_outputs(res: ControlResult, name: str, save_matrix: Path | None, figure: Path | None) -> None:
    """The chosen A as .npy and the A = I / chosen A comparison figure, where asked for: the figure is
    rendered first (into a temporary folder beside it), then each file is moved into place atomically,
    so a failed render changes neither file."""
    from .._io import atomic_write

    if figure is None:
        if save_matrix is not None:
            atomic_write(save_matrix, lambda p: _save_npy(p, res.A))
        return
    from ..plotting import control_comparison, save_figure

    fig = control_comparison(res, title=f"attndyn control {name}")
    figure.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=figure.parent, prefix=f".{figure.name}.") as tmp:
        [rendered] = save_figure(fig, Path(tmp) / "figure", formats=(figure.suffix.lower().lstrip("."),))
        if save_matrix is not None:
            atomic_write(save_matrix, lambda p: _save_npy(p, res.A))
        os.replace(rendered, figure)


def _save_npy(path: Path, A: ArrayLike) -> None:
    import numpy as np

    with open(path, "wb") as f:  # np.save on a path would append .npy to the temporary name
        np.save(f, np.asarray(A, dtype=np.float64))


def _print(res: ControlResult) -> None:
    if res.trajectory is None:  # no A: the reason (certificate or margin) is all there is
        typer.echo(f"leaders requested: {list(res.leaders_requested)}")
        typer.echo(f"verdict: {res.verdict} — {res.reason}")
        return
    import numpy as np

    A = np.asarray(res.A)
    typer.echo(f"A ({'SPD' if res.spd else 'general'}, {res.solver}):")
    for row in A:
        typer.echo("  [" + "  ".join(f"{v: .6f}" for v in row) + "]")
    typer.echo(f"margin: {res.margin:.4g}")
    typer.echo(f"leaders requested: {list(res.leaders_requested)}")
    found = ", ".join(f"{i} (since {k})" for i, k in zip(res.leaders_found, res.since)) or "none"
    typer.echo(f"leaders found by simulation (alpha={res.alpha:g}, {res.layers} layers): {found}")
    if res.clusters_requested is not None:
        typer.echo(f"clusters requested: {list(res.clusters_requested)}; found: {list(res.clusters_found or ())}")
    for r in res.rounds:
        typer.echo(
            f"  round {r.index} ({r.method}): margin {r.margin:.4g}, leaders {list(r.leaders_found)}"
            + (f", added {', '.join(f'token {i} @ layer {k}' for i, k in r.added)}" if r.added else "")
        )
    typer.echo(f"verdict: {res.verdict} — {res.reason}")


def register(app: typer.Typer) -> None:
    """Add the ``control`` command to the ``attndyn`` app."""
    app.command("control")(control_cmd)

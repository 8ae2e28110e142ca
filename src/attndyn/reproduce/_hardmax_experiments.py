"""Experiments of the hardmax paper (Alcalde, Fantuzzi & Zuazua 2024): Figs. 1, 2, 7 and Theorem 1.1."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import analysis
from .._hardmax import hardmax
from .._options import SaveAt
from ..experiments._cells import theorem_1_1_run
from ..experiments._configurations import EXPECTED_VERTICES, FIG1_A, FIG1_TOKENS, FIG2_CONFIGS, FIG2_LAYERS, FIG7_TOKENS
from ..experiments._samplers import theorem_1_1_instance
from ..plotting import hardmax_grid, plot_trajectory, step_geometry
from ..plotting._geometry import draw_step_geometry
from ..plotting._save import png_bytes
from ..plotting._style import new_figure, square_limits
from ..plotting._trajectories import draw_state, drawn_states, label_plane
from ._evidence import Sample, every_instance_decided
from ._registry import Check, Context, SectionResult, Slider, cell_inputs, fmt, monte_carlo, section

if TYPE_CHECKING:
    from matplotlib.figure import Figure

SOURCE = "Alcalde, Fantuzzi & Zuazua 2024 (hardmax paper)"

#: Random configurations of Theorem 1.1's Monte Carlo claim: (quick, full).
THEOREM_RUNS = (12, 400)


@section("hardmax-fig1", title="Hardmax Fig. 1: the geometry of one step", source=SOURCE + ", Fig. 1")
def fig1(ctx: Context, res: SectionResult) -> None:
    """Token z_1 is attracted by the tokens with the largest projection on A z_1; they lie in the
    half-space H_1 = {z : <A z_1, z - z_1> >= 0}. Left A = I, right A = [[2,1],[1,1]]."""
    mats = {"A = I": None, "A = [[2,1],[1,1]]": FIG1_A}
    fig = step_geometry(FIG1_TOKENS, 0, matrices=mats)
    res.figures.append(
        ctx.figure(
            fig,
            "hardmax_fig1",
            "Direction A z_1 (arrow), half-space H_1 (blue), level of the "
            "largest projection (dashed); attracting tokens ringed in black.",
        )
    )
    import torch

    from .. import attention

    z = torch.tensor([FIG1_TOKENS], dtype=torch.float64)
    for name, A, paper in (
        ("A = I", None, {2, 3}),
        ("A = [[2,1],[1,1]]", torch.tensor(FIG1_A, dtype=torch.float64), {4}),
    ):
        C = {
            int(j) + 1 for j in torch.nonzero(attention.follow_sets(attention.scores(z, A, exact=True))[0, 0]).flatten()
        }
        res.checks.append(
            Check(
                f"{name}: tokens attracting z_1, C_1(Z)",
                "{" + ", ".join(map(str, sorted(paper))) + "}",
                "{" + ", ".join(map(str, sorted(C))) + "}",
                C == paper,
            )
        )
        Am = np.eye(2) if A is None else A.numpy()
        a = Am @ np.array(FIG1_TOKENS[0])
        inside = all(a @ (np.array(FIG1_TOKENS[j - 1]) - FIG1_TOKENS[0]) >= 0 for j in C)
        res.checks.append(  # shown: z_1 scores <A z_1, z_1> itself, so every arg-max lies in H_1 by definition
            Check(
                f"{name}: attracting tokens lie in H_1",
                "yes (by the definition of C_1: z_1 itself scores <A z_1, z_1>)",
                "yes" if inside else "no",
                None,
            )
        )
    res.params = {"tokens": FIG1_TOKENS, "i": 1, "A": {"left": "I", "right": FIG1_A}}


def _fig2_runs(ctx: Context) -> dict:
    layers = ctx.pick(60, 120)
    return {
        name: hardmax(np.array(z, dtype=float), alpha=0.5, layers=layers, save=SaveAt(follow=True))
        for name, z in FIG2_CONFIGS.items()
    }


@section(
    "hardmax-fig2",
    title="Hardmax Fig. 2: four configurations, layers 0, 1, 2, 5, 30",
    source=SOURCE + ", Fig. 2 and Theorem 1.1",
)
def fig2(ctx: Context, res: SectionResult) -> None:
    """Stars: tokens with C_i(Z^k) = {i} (leaders at that layer); circles: the others, painted with the
    colour of the token they follow (two halves: two tokens), edged with their own colour when
    followed. The last column shades the convex hull of the leaders."""
    runs = _fig2_runs(ctx)
    fig = hardmax_grid(runs, FIG2_LAYERS)
    res.figures.append(ctx.figure(fig, "hardmax_fig2", "Simulations of eq. (1.1) with alpha = 0.5, A = I."))
    for name, traj in runs.items():
        rep = analysis.hardmax_theorem(traj)
        res.checks.append(
            Check(
                f"{name}: Theorem 1.1 (leaders exist; limits on the boundary of K = conv(leaders' "
                f"limits); the vertices of the hull of all limits are leaders' limits)",
                "holds",
                rep.verdict if rep.holds is not False else f"fails: {rep.record()}",
                rep.holds is True,
            )
        )
        lead = analysis.leaders(traj)
        if name == "emerging leader":
            late = [(i + 1, k) for i, k in zip(lead.indices, lead.since) if k > 0]
            res.checks.append(
                Check(
                    "emerging leader: a token becomes a leader only after layer 0",
                    "z_1, at layer 1",
                    ", ".join(f"z_{i} at layer {k}" for i, k in late) or "none",
                    late == [(1, 1)],
                )
            )
        if name in EXPECTED_VERTICES:
            nv = 0 if rep.polytope is None else len(rep.polytope.vertices)
            res.checks.append(
                Check(f"{name}: vertices of K", str(EXPECTED_VERTICES[name]), str(nv), nv == EXPECTED_VERTICES[name])
            )
        if name == "non-leader clusters":
            leader_set = set(lead.indices)
            free = [c for c in rep.clusters if not leader_set & set(c.members)]
            where = "; ".join("(" + ", ".join(f"{v:.3g}" for v in c.center) + ")" for c in free)
            res.checks.append(
                Check(
                    "non-leader clusters: a cluster without a leader, at a convex combination of "
                    "leaders' limits on the boundary of K",
                    ">= 1",
                    f"{len(free)} at {where}",
                    len(free) >= 1
                    and rep.polytope is not None
                    and all(rep.polytope.on_boundary(c.center) for c in free),
                )
            )
    res.params = {
        "alpha": 0.5,
        "A": "I",
        "layers_run": int(next(iter(runs.values())).stats.steps),
        "layers_shown": list(FIG2_LAYERS),
        "configurations": FIG2_CONFIGS,
    }
    res.sliders.append(_fig2_slider(ctx, runs))
    traj = runs["emerging leader"]
    if ctx.animations:
        ctx.slider(
            traj, "emerging leader", title="emerging leader", gif_stem="hardmax_fig2_emerging_leader", result=res
        )


def _fig2_slider(ctx: Context, runs: dict) -> Slider:
    """The four configurations side by side, one frame per layer 0..30 (quick: the layers of Fig. 2)."""

    layers = FIG2_LAYERS if ctx.quick else tuple(range(0, 31))
    frames = [png_bytes(_fig2_frame(runs, k, hull=k == layers[-1]), dpi=80) for k in layers]
    return Slider(
        caption="Fig. 2, layer by layer (trails: the paths so far)",
        frames=tuple(frames),
        labels=tuple(f"layer {k}" for k in layers),
    )


def _fig2_frame(runs: dict, k: int, *, hull: bool) -> Figure:
    """One frame of the Fig. 2 slider: the four configurations at layer ``k`` with their trails, axes labelled."""
    fig = new_figure(8.0, 8.0)
    axes = fig.subplots(2, 2).ravel()
    for ax, (name, traj) in zip(axes, runs.items()):
        states = traj.tokens.numpy()
        draw_state(ax, traj, k, trail=True, hull=hull, limits=square_limits(states[0]), title=f"{name} — layer {k}")
        label_plane(ax, drawn_states(traj, None, eigenbasis=False)[2])
    return fig


@section(
    "hardmax-emerging-leader",
    title="Hardmax Fig. 7 / Example 5.2: a leader that emerges at layer 1",
    source=SOURCE + ", Example 5.2 and Fig. 7",
)
def emerging_leader(ctx: Context, res: SectionResult) -> None:
    """At layer 0, z_1 follows z_2 (z_2 has the larger projection on z_1). One layer later z_2 has moved
    towards z_3 and fallen below the hyperplane through z_1 orthogonal to z_1, so z_1 follows only
    itself: it is a leader from layer 1 on."""
    z0 = np.array(FIG7_TOKENS)
    traj = hardmax(z0, alpha=0.5, layers=ctx.pick(40, 80), save=SaveAt(follow=True))
    states = traj.tokens.numpy()
    lim = square_limits(np.vstack([states[0], states[1], np.zeros((1, 2))]), 0.2)
    fig = new_figure(8.4, 4.3)
    axes = fig.subplots(1, 2)
    for ax, k in zip(axes, (0, 1)):
        C = draw_step_geometry(ax, states[k], 0, limits=lim)
        ax.set_title(f"layer {k}:  $C_1(Z^{k})$ = {{{', '.join(str(j + 1) for j in C)}}}", fontsize=10)
    res.figures.append(
        ctx.figure(
            fig,
            "hardmax_emerging_leader",
            "Token values at layer 0 (left) and layer 1 (right); "
            "the blue line is the hyperplane through z_1 orthogonal to z_1.",
        )
    )
    lead = analysis.leaders(traj)
    since = dict(zip(lead.indices, lead.since))
    assert traj.follow is not None  # SaveAt(follow=True)
    C1 = [tuple(int(j) for j in np.nonzero(traj.follow[k, 0, 0].numpy())[0]) for k in (0, 1)]  # layers 0 and 1
    shown = ", ".join(f"C_1(Z^{k}) = {{{', '.join(str(j + 1) for j in c)}}}" for k, c in enumerate(C1))
    res.checks.append(
        Check(
            "z_1 follows z_2 at layer 0 and only itself from layer 1 on",
            "C_1(Z^0) = {2}, C_1(Z^1) = {1}",
            f"{shown}; first leader layer of z_1: {since.get(0, 'never')}",
            C1 == [(1,), (0,)] and since.get(0) == 1,
        )
    )
    rep = analysis.hardmax_theorem(traj)
    res.checks.append(
        Check("Theorem 1.1 on this run", "holds", rep.verdict if rep.holds is not False else "fails", rep.holds is True)
    )
    res.params = {"tokens": z0.tolist(), "alpha": 0.5, "A": "I", "layers": int(traj.stats.steps)}


@section(
    "hardmax-theorem-1.1",
    title="Hardmax Theorem 1.1: measured over random tokens and random SPD A",
    source=SOURCE + ", Theorem 1.1",
)
@monte_carlo("theorem-1.1")
def theorem_1_1(ctx: Context, res: SectionResult) -> None:
    """For N seeded random configurations (n tokens uniform in [-1, 1]^d) and random SPD matrices A, run the
    dynamics until the tokens stop moving and check every conclusion of Theorem 1.1: the leader
    set is not empty, the limits lie on the boundary of K = conv(leaders' limits), and the vertices
    of K are leaders' limits. Each configuration is one cell of the registered experiment ``theorem-1.1``
    (its seed and parameters are in ``params.cells``: ``attndyn sweep`` recomputes any of them)."""
    N = ctx.pick(*THEOREM_RUNS)
    n_choices, d_choices = ctx.pick(((8, 16), (2, 3)), ((8, 16, 32), (2, 3, 4)))
    layers = ctx.pick(300, 2000)
    rng = ctx.rng(11, res)
    cells = [
        (
            int(rng.integers(2**32)),
            {
                "n": int(rng.choice(n_choices)),
                "d": int(rng.choice(d_choices)),
                "alpha": float(rng.uniform(0.2, 2.0)),
                "layers": layers,
            },
        )
        for _ in range(N)
    ]
    rows = ctx.cells("theorem-1.1", cells)
    holds = sum(r["holds"] is True for r in rows)  # an undecided run is a failed cell: it does not confirm
    failed = [r for r in rows if r["holds"] is not True][:5]
    rows = [r for r in rows if r["status"] == "ok"]  # the shown statistics: the runs that answered
    res.checks.extend(
        _theorem_checks(
            holds,
            N,
            ctx.sample(N, full=THEOREM_RUNS[1], decided=every_instance_decided(holds, N)),
            [r["leaders"] for r in rows],
            [r["vertices"] for r in rows],
            sum(r["late_leaders"] for r in rows),
            [r["layers_used"] for r in rows],
        )
    )
    example = next((r for r in rows if r["d"] == 2), None)
    if example is not None:
        z, A = _instance(example)
        traj = hardmax(z, alpha=example["alpha"], A=A, layers=40, save=SaveAt(follow=True))
        res.figures.append(
            ctx.figure(
                plot_trajectory(traj, title="one of the random instances (d = 2, random SPD A)"),
                "hardmax_theorem_1_1_example",
                "A random instance: trails, leaders (stars), hull of the leaders' limits (shaded).",
            )
        )
    res.params = {
        "N": N,
        "n": list(n_choices),
        "d": list(d_choices),
        "tokens": "uniform in [-1, 1]^d",
        "A": "Q diag(U[1, 10]) Q^T, Q random orthogonal",
        "alpha": "uniform in [0.2, 2]",
        "max_layers": layers,
        "experiment": "theorem-1.1",
        "cells": cell_inputs("theorem-1.1", rows),
        "failures": [{"seed": r["seed"], "n": r["n"], "d": r["d"], "report": _report(r).record()} for r in failed],
    }


def _instance(row: dict) -> tuple[np.ndarray, np.ndarray | None]:
    """The tokens and A of a ``theorem-1.1`` cell's row (the cell draws them from its seed)."""
    rng = np.random.default_rng(row["seed"])
    return theorem_1_1_instance(rng, row["n"], row["d"], spd=row["A"] == "spd", cond_max=row["cond_max"])


def _report(row: dict) -> analysis.HardmaxTheoremReport:
    """Theorem 1.1's report on a ``theorem-1.1`` cell, recomputed from its row (for the failures' record)."""
    z, A = _instance(row)
    return theorem_1_1_run(z, A, alpha=row["alpha"], layers=row["layers"], rtol=row["rtol"])[1]


def _theorem_checks(
    holds: int,
    N: int,
    sample: Sample | None,
    nlead: list[int],
    nverts: list[int],
    late: int,
    layers_used: list[int],
) -> list[Check]:
    """Theorem 1.1 over N runs: the fraction whose limits match it (must be 1; ``sample``: beside its verdict in
    a quick run), and what it does not state: mean leaders and vertices of K, leaders emerging after layer 0,
    layers until the tokens stop moving."""
    frac = holds / N
    verdict = Check(
        "fraction of runs whose limits match Theorem 1.1",
        "1 (every run)",
        f"{fmt(frac)} ({holds}/{N}" + (f"; {N - len(nlead)} undecided or failed)" if len(nlead) < N else ")"),
        frac == 1.0,
        sample,
    )
    if not nlead:  # no run answered: nothing to describe
        return [verdict]
    return [
        verdict,
        Check(
            "mean number of leaders / mean vertices of K",
            "(not stated)",
            f"{np.mean(nlead):.2f} / {np.mean(nverts):.2f}",
            None,
        ),
        Check("leaders that emerge after layer 0 (total over runs)", "(possible, Example 5.2)", str(late), None),
        Check(
            "layers until the tokens stop moving (relative change <= 1e-13): median / max",
            "(finite, not stated)",
            f"{int(np.median(layers_used))} / {max(layers_used)}",
            None,
        ),
    ]

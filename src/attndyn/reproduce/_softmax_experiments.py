"""Experiments of the softmax paper (Geshkovski, Letrouit, Polyanskiy & Rigollet 2023).

Theorems 2.1, 3.1, 4.1, 5.1, C.5 and Conjecture 4.2 on the paper's settings (Figs. 3-8), each
measured with :func:`attndyn.softmax_geometry`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .. import analysis
from .._options import SaveAt
from .._softmax import softmax
from .._trajectory import SoftmaxTrajectory
from ..analysis import RadiusDecay, attention_rank, boolean_distance, is_good_triple, is_paranormal
from ..analysis._collapse import COLLAPSE_EXPONENT, COLLAPSE_EXPONENT_ATOL, COLLAPSE_FIT_FROM
from ..analysis._geometry import BOOLEAN_MAX_DISTANCE
from ..experiments._configurations import TABLE1_HORIZONS, table1_value_matrix
from ..plotting import attention_matrices, coordinates, plot_trajectory, query_key_clouds
from ..plotting._style import color, new_figure
from ..plotting._trajectories import state_index
from ._evidence import every_instance_decided
from ._registry import Check, Context, SectionResult, fmt, section, yes_no

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..analysis import GeometryReport

# V = I: K's vertex count is "significantly smaller than n" when it is at most this fraction of the
# vertex count of conv(z_i(0)). The rescaled V = I dynamics keep every token in conv(z_i(0)); without
# clustering (tokens frozen, or all contracting alike) K would be that hull, ratio 1.
VERTEX_REDUCTION_MAX = 0.75

SOURCE = "Geshkovski, Letrouit, Polyanskiy & Rigollet 2023 (softmax paper)"

#: Random 1-D sequences of Theorem 2.1's statistics: (quick, full).
BOOLEAN_SEQUENCES = (16, 500)


def _grid(ctx: Context, T: float) -> dict:
    step = ctx.pick(0.1, 0.05)
    keep = max(1, int(round(T / step / ctx.pick(40, 100))))
    return {"time": T, "step": step, "method": "rk4", "keep_every": keep}


def _run(x: Any, grid: dict, **kw: Any) -> SoftmaxTrajectory:
    return softmax(
        x,
        time=grid["time"],
        step=grid["step"],
        method=grid["method"],
        save=SaveAt(every=grid["keep_every"], attention=kw.pop("attention", False)),
        **kw,
    )


def _table1_figure(
    ctx: Context, res: SectionResult, regime: str, *, seed_offset: int, d: int, **check: Any
) -> tuple[np.ndarray, dict, SoftmaxTrajectory, GeometryReport]:
    """The figure run of Table 1's row ``regime``: its V (:func:`~attndyn.experiments._configurations.
    table1_value_matrix`, drawn first from the section's generator when random), n = 40 standard normal tokens
    in R^d, Q = K = I, the rescaled dynamics (4) up to the row's horizon; returns V, the grid, the run and the
    row's :func:`attndyn.softmax_geometry` report (``check``: its tolerances)."""
    rng = ctx.rng(seed_offset, res)
    V = table1_value_matrix(regime, rng)
    x = rng.standard_normal((40, d))
    grid = _grid(ctx, ctx.pick(*TABLE1_HORIZONS[regime]))
    traj = _run(x, grid, V=V, rescaled=True)
    rep = analysis.softmax_geometry(traj, regime=regime, **check)
    _settling(res, rep)
    return V, grid, traj, rep


def _settling(res: SectionResult, rep: GeometryReport) -> None:
    """A row shown, not judged: whether what the theorem's check reads has settled by the horizon (the library's
    gate, :attr:`~attndyn.analysis.GeometryReport.undecided`). The theorems are limits; the section's checks read
    the tokens at the horizon, and where they still move the library's own verdict is "undecided"."""
    res.checks.append(
        Check(
            "what the check reads has settled by the horizon (a limit verdict needs it)",
            "the theorems speak of t -> infinity; the checks of this section read the tokens at the horizon",
            "yes" if rep.undecided is None else f"no: {rep.verdict}",
            None,
        )
    )


def _time_slider(ctx: Context, res: SectionResult, traj: SoftmaxTrajectory, *, title: str, stem: str) -> None:
    """The slider of z(t) over time, with its GIF ``stem`` when animations are on."""
    res.sliders.append(ctx.slider(traj, "z(t), time slider", title=title, gif_stem=stem, result=res))


def _matrix_text(M: Any) -> str:
    return np.array2string(np.asarray(M), precision=3, suppress_small=True).replace("\n", "")


@section(
    "softmax-thm2.1",
    title="Softmax Thm 2.1 / Fig. 3: in 1-D the attention matrix becomes Boolean and low-rank",
    source=SOURCE + ", Theorem 2.1, Figs. 2-3",
)
def thm2_1(ctx: Context, res: SectionResult) -> None:
    """d = 1, Q = K = V = 1, n = 40 tokens: P(t) converges to a matrix of the class of Fig. 2 (Boolean rows
    e_1 or e_n except at most one row), typically of rank 1 or 2. Rows and columns are sorted by
    the initial tokens, so the limit shows as two blocks."""
    rng = ctx.rng(21, res)
    n = 40
    x = rng.standard_normal((n, 1))
    grid = _grid(ctx, ctx.pick(*TABLE1_HORIZONS["boolean"]))
    traj = _run(x, grid, attention=True)
    assert traj.attention_final is not None  # kept with the attention
    P = traj.attention_final[0].numpy()
    res.figures.append(
        ctx.figure(
            attention_matrices(traj, title="P(t), n = 40, Q = K = V = 1"),
            "softmax_fig3",
            "Self-attention matrix P(t) at five times (rows/columns sorted by x_i(0)).",
        )
    )
    res.figures.append(
        ctx.figure(
            coordinates(traj, title="tokens x_i(t)"),
            "softmax_fig3_tokens",
            "The tokens themselves: the extreme ones run off to ±infinity and lead.",
        )
    )
    dist, rank = boolean_distance(P, free_rows=1), attention_rank(P)
    res.checks.append(
        Check(
            f"distance of P(T) to a Boolean matrix, one free row allowed (T = {grid['time']:g})",
            f"-> 0 (doubly exponentially); pass: <= {BOOLEAN_MAX_DISTANCE:g}",
            f"{dist:.2e}",
            dist <= BOOLEAN_MAX_DISTANCE,
        )
    )
    res.checks.append(Check("rank of the limit P*", "<= 3 (generically 1 or 2)", str(rank), rank <= 3))
    N = ctx.pick(*BOOLEAN_SEQUENCES)
    res.checks.extend(_boolean_statistics(ctx, rng, N, grid))
    res.checks.append(_large_n_check(rng, grid))
    res.params = {
        "n": n,
        "d": 1,
        "Q": 1,
        "K": 1,
        "V": 1,
        "tokens": "standard normal",
        **grid,
        "statistics": {"N": N, "n": 20},
        "large_n": 200,
    }


def _boolean_statistics(ctx: Context, rng: np.random.Generator, N: int, grid: dict) -> list[Check]:
    """Theorem 2.1 over N random sequences of 20 tokens in 1-D (Q = K = V = 1): the fraction whose limit P*
    has rank 1 or 2, and the fraction whose P(T) is Boolean but for one row (Fig. 2's class); a quick run says
    beside each verdict how many sequences it rests on (:meth:`~attndyn.reproduce._registry.Context.sample`)."""
    xs = rng.standard_normal((N, 20, 1))
    batch = softmax(xs, time=grid["time"], step=grid["step"], save=SaveAt(every=None, final_attention=True))
    P_final = batch.attention_final
    assert P_final is not None  # SaveAt(final_attention=True)
    ranks = [attention_rank(P_final[b].numpy()) for b in range(N)]
    booleans = [boolean_distance(P_final[b].numpy(), free_rows=1) <= BOOLEAN_MAX_DISTANCE for b in range(N)]
    frac12 = float(np.mean([r <= 2 for r in ranks]))
    low_rank = sum(r <= 2 for r in ranks)
    full = BOOLEAN_SEQUENCES[1]
    return [
        Check(
            f"over {N} random sequences (n = 20): fraction with rank(P*) in {{1, 2}}",
            "1 (almost all initial sequences)",
            f"{fmt(frac12)}",
            frac12 == 1.0,
            ctx.sample(N, full=full, decided=every_instance_decided(low_rank, N)),
        ),
        Check(
            f"over {N} random sequences: fraction whose P(T) is Boolean but for one row",
            f"1 (Theorem 2.1); pass: every distance <= {BOOLEAN_MAX_DISTANCE:g}",
            fmt(float(np.mean(booleans))),
            all(booleans),
            ctx.sample(N, full=full, decided=every_instance_decided(sum(booleans), N)),
        ),
    ]


def _large_n_check(rng: np.random.Generator, grid: dict) -> Check:
    """Fig. 11: n = 200 tokens instead of 40 changes nothing: P(T) Boolean but for one row, rank <= 2."""
    big = softmax(
        rng.standard_normal((200, 1)),
        time=grid["time"],
        step=grid["step"],
        save=SaveAt(every=None, final_attention=True),
    )
    assert big.attention_final is not None  # SaveAt(final_attention=True)
    Pb = big.attention_final[0].numpy()
    db, rb = boolean_distance(Pb, free_rows=1), attention_rank(Pb)
    return Check(
        "n = 200 instead of 40: P(T) Boolean but for one row, rank <= 2",
        f"increasing n has no effect (Fig. 11); pass: distance <= {BOOLEAN_MAX_DISTANCE:g}, rank <= 2",
        f"distance {db:.1e}, rank {rb}",
        db <= BOOLEAN_MAX_DISTANCE and rb <= 2,
    )


@section("softmax-fig4", title="Softmax Fig. 4: query and key clouds joined by attention", source=SOURCE + ", Fig. 4")
def fig4(ctx: Context, res: SectionResult) -> None:
    """d = 2, n = 20, K = I, V and Q random with positive entries: keys K x_j (green) and queries Q x_i
    (purple), each pair joined by a line of width P_ij(t). Clusters form and P(t) reaches rank <= 2."""
    rng = ctx.rng(41, res)
    Q, V = rng.uniform(0.1, 1.0, (2, 2)), rng.uniform(0.1, 1.0, (2, 2))
    x = rng.standard_normal((20, 2))
    grid = _grid(ctx, 3.0)
    traj = _run(x, grid, Q=Q, V=V, attention=True)
    res.figures.append(
        ctx.figure(
            query_key_clouds(traj, title="keys (green), queries (purple), lines of width P_ij(t)"),
            "softmax_fig4",
            "Query/key clouds at four times.",
        )
    )
    assert traj.attention_final is not None  # kept with the attention
    P = traj.attention_final[0].numpy()
    rank = attention_rank(P, rtol=1e-3)
    res.checks.append(
        Check("numerical rank of P(T) (singular values > 1e-3 of the largest)", "<= 2", str(rank), rank <= 2)
    )
    res.checks.append(  # a low rank alone does not tell clusters from uniform attention (rank 1): shown beside it
        Check(
            "distance of P(T) to a Boolean matrix, the worst row left out",
            f"near 0 when the tokens cluster; uniform attention: 2(1 - 1/n) = {2 * (1 - 1 / len(P)):.2f}",
            fmt(boolean_distance(P, free_rows=1)),
            None,
        )
    )
    res.params = {"n": 20, "d": 2, "Q": Q.round(4).tolist(), "K": "I", "V": V.round(4).tolist(), **grid}


@section(
    "softmax-thm3.1",
    title="Softmax Thm 3.1 / Figs. 1, 5: V = I, tokens go to the vertices of a polytope",
    source=SOURCE + ", Theorem 3.1, Figs. 1 and 5",
)
def thm3_1(ctx: Context, res: SectionResult) -> None:
    """n = 40 tokens in R^3, Q = K = V = I, rescaled dynamics (4): each token converges to 0 or to the
    boundary of a convex polytope K, for almost all initial sequences to a vertex (a leader), and K
    has far fewer vertices than there are tokens."""
    rng = ctx.rng(31, res)
    n = ctx.pick(40, 40)
    x = rng.standard_normal((n, 3))
    grid = _grid(ctx, ctx.pick(*TABLE1_HORIZONS["polytope"]))
    traj = _run(x, grid, rescaled=True)
    rep = analysis.softmax_geometry(traj)
    _settling(res, rep)
    m = rep.measured
    hull0 = len(analysis.Polytope.from_points(x).vertices)
    res.figures.append(
        ctx.figure(
            plot_trajectory(traj, title="V = I, n = 40, d = 3"),
            "softmax_fig5",
            "Trajectories of z_i(t) (eq. 4); stars: tokens attending to themselves at the end; "
            "shaded: their convex hull.",
        )
    )
    res.checks.append(
        Check(
            "every token tends to 0 or to the boundary of K",
            "yes (Theorem 3.1); pass: no cluster of the final tokens (tolerance 1e-3 of their spread) strictly "
            "inside the hull of the others",
            "yes" if rep.measured_holds else "no",
            rep.measured_holds,
        )
    )
    res.checks.append(
        Check(
            "fraction of tokens at a vertex of K",
            "1 for almost all initial sequences",
            fmt(m["fraction_at_vertices"]),
            m["fraction_at_vertices"] == 1.0,
        )
    )
    res.checks.append(
        Check(
            "vertices of K vs tokens",
            f"significantly smaller than n; pass: at most {VERTEX_REDUCTION_MAX:g} x the {hull0} vertices of "
            "conv(z_i(0)) (what K would have without clustering)",
            f"{m['vertices']} vs n = {n}",
            m["vertices"] <= VERTEX_REDUCTION_MAX * hull0,
        )
    )
    _time_slider(ctx, res, traj, title="V = I", stem="softmax_fig5")
    res.params = {
        "n": n,
        "d": 3,
        "Q": "I",
        "K": "I",
        "V": "I",
        "rescaled": True,
        "tokens": "standard normal",
        **grid,
        "vertices_of_initial_hull": hull0,
    }


@section(
    "softmax-thm4.1",
    title="Softmax Thm 4.1 / Fig. 6: good triple, at most three hyperplanes",
    source=SOURCE + ", Theorem 4.1, Fig. 6",
)
def thm4_1(ctx: Context, res: SectionResult) -> None:
    """n = 40 tokens in R^2, Q = K = I, V symmetric with eigenvalues {1.35, -0.07} and phi_1 = (0.76, 0.65):
    the coordinates along phi_1 cluster, so the tokens approach at most three lines perpendicular to
    phi_1 (typically two)."""
    V, grid, traj, rep = _table1_figure(ctx, res, "hyperplanes", seed_offset=61, d=2)
    fig = plot_trajectory(traj, title="V eigenvalues {1.35, -0.07}", hull=False)
    ax = fig.axes[0]
    phi = np.array(rep.measured["phi_1"])
    ax.annotate(
        "", xy=(phi[0], phi[1]), xytext=(0, 0), arrowprops=dict(arrowstyle="-|>", color="#ff7f0e", lw=2.2), zorder=6
    )
    ax.text(1.1 * phi[0], 1.1 * phi[1], r"$\varphi_1$", color="#ff7f0e", fontsize=11)
    res.figures.append(ctx.figure(fig, "softmax_fig6", "Trajectories of z_i(t); orange: phi_1."))
    res.figures.append(
        ctx.figure(
            coordinates(traj, title="coordinates in V's eigenbasis"),
            "softmax_fig6_coordinates",
            "Coordinate along phi_1 (left) clusters; the other (eigenvalue -0.07) does not.",
        )
    )
    res.checks.append(
        Check(
            "(Q, K, V) is a good triple",
            "yes",
            yes_no(is_good_triple(np.eye(2), np.eye(2), V)),
            is_good_triple(np.eye(2), np.eye(2), V),
        )
    )
    res.checks.append(
        Check(
            "phi_1",
            "(0.76, 0.65)",
            "(" + ", ".join(f"{abs(v):.2f}" for v in phi) + ")",
            bool(np.allclose(np.abs(phi), np.array([0.76, 0.65]) / np.linalg.norm([0.76, 0.65]), atol=0.01)),
        )
    )
    h = rep.measured["hyperplanes"]
    res.checks.append(Check("parallel hyperplanes the tokens approach", "<= 3 (typically 2)", str(h), h <= 3))
    _time_slider(ctx, res, traj, title="good triple", stem="softmax_fig6")
    res.params = {"n": 40, "d": 2, "Q": "I", "K": "I", "V": _matrix_text(V), "rescaled": True, **grid}


@section(
    "softmax-conj4.2",
    title="Softmax Conjecture 4.2 / Fig. 7a: codimension-k subspaces",
    source=SOURCE + ", Conjecture 4.2, Fig. 7",
)
def conj4_2(ctx: Context, res: SectionResult) -> None:
    """n = 40, d = 3, Q = K = I, V random with eigenvalues {1.96, -0.22, 0.25}: the k = 2 coordinates of
    positive eigenvalues converge to at most three values (codimension-2 subspaces: lines), the
    coordinate of the negative eigenvalue spreads out."""
    V, grid, traj, rep = _table1_figure(ctx, res, "codimension", seed_offset=71, d=3, rtol=1e-3)
    res.figures.append(
        ctx.figure(
            coordinates(traj, title="coordinates in V's eigenbasis"),
            "softmax_fig7_coordinates",
            "Positive eigenvalues 1.96 and 0.25: coordinates cluster; eigenvalue -0.22: they spread.",
        )
    )
    k, groups = rep.measured["k"], rep.measured["subspaces"]
    res.figures.append(
        ctx.figure(
            plot_trajectory(traj, title="V eigenvalues {1.96, -0.22, 0.25}", hull=False, eigenbasis=True),
            "softmax_fig7",
            f"Trajectories of z_i(t) in V's eigenbasis (c = R^-1 z): the coordinates of the k = {k} positive "
            f"eigenvalues reach {groups} value(s), so the tokens approach {groups} line(s) parallel to the third "
            "axis, along which they diverge (eigenvalue -0.22); each axis has its own scale (see the title).",
        )
    )
    res.checks.append(Check("eigenvalues of V with positive real part, k", "2", str(k), k == 2))
    res.checks.append(
        Check(
            "parallel codimension-k subspaces the tokens approach (values of the positive coordinates)",
            "<= 3 (conjecture)",
            str(groups),
            groups <= 3,
        )
    )
    res.params = {
        "n": 40,
        "d": 3,
        "Q": "I",
        "K": "I",
        "V": _matrix_text(V),
        "rescaled": True,
        **grid,
        "cluster_rtol": 1e-3,
    }


@section(
    "softmax-thm5.1",
    title="Softmax Thm 5.1 / Fig. 8: paranormal V, polytope x subspace",
    source=SOURCE + ", Theorem 5.1, Fig. 8",
)
def thm5_1(ctx: Context, res: SectionResult) -> None:
    """n = 40, d = 3, Q = K = I, V = diag(1, 1, -1/2): the first two coordinates converge to the boundary of
    a polytope K (which emerges before t = 5 and persists), the third diverges."""
    V, grid, traj, rep = _table1_figure(ctx, res, "paranormal", seed_offset=81, d=3)
    res.figures.append(
        ctx.figure(
            plot_trajectory(traj, title="V = diag(1, 1, -1/2)", hull=False),
            "softmax_fig8",
            "Trajectories of z_i(t): a polygon in (x_1, x_2), divergence along x_3.",
        )
    )
    res.figures.append(
        ctx.figure(coordinates(traj, title="coordinates"), "softmax_fig8_coordinates", "x_1, x_2 cluster; x_3 spreads.")
    )
    res.checks.append(Check("V is paranormal", "yes", yes_no(is_paranormal(V)), is_paranormal(V)))
    res.checks.append(
        Check(
            "F-coordinates tend to the boundary of a polytope K in F (or 0)",
            "yes (Theorem 5.1); pass: no cluster of the F-coordinates (tolerance 1e-3 of their spread) strictly "
            "inside the hull of the others",
            "yes" if rep.measured_holds else "no",
            rep.measured_holds,
        )
    )
    # emergence before t = 5: the partition of the tokens by their F-coordinates is already the final one
    ys = traj.tokens.numpy()
    k5 = state_index(traj, 5.0)
    final = ys[-1, :, :2]
    tol = 1e-2 * np.abs(final).max()
    part = lambda p: sorted(c.members for c in analysis.clusters(p, tol=tol))  # noqa: E731
    same = part(ys[k5, :, :2]) == part(final)
    res.checks.append(
        Check(
            f"K emerges before t = 5 (clusters of (x_1, x_2) at t = {traj.ts[k5]:.3g} equal the final ones, "
            "tolerance 1% of the spread)",
            "yes",
            "yes" if same else "no",
            same,
        )
    )
    res.checks.append(
        Check(
            "clusters in F / vertices of K",
            "(not stated)",
            f"{rep.measured['clusters_in_F']} / {rep.measured['vertices']}",
            None,
        )
    )
    _time_slider(ctx, res, traj, title="paranormal V", stem="softmax_fig8")
    res.params = {"n": 40, "d": 3, "Q": "I", "K": "I", "V": "diag(1, 1, -1/2)", "rescaled": True, **grid}


@section(
    "softmax-thmC.5",
    title="Softmax Thm C.5: V = -I, all tokens collapse to the origin",
    source=SOURCE + ", Theorem C.5",
)
def thm_c5(ctx: Context, res: SectionResult) -> None:
    """n = 40, d = 2, Q = K = I, V = -I, original dynamics (1): every token tends to 0 (a single cluster at
    the origin); the radius of the cloud shrinks monotonically, and near the origin like t^(-1/2)
    (derived in :mod:`attndyn.analysis._collapse`), which the fitted exponent tests."""
    rng = ctx.rng(91, res)
    x = rng.standard_normal((40, 2))
    grid = _grid(ctx, ctx.pick(*TABLE1_HORIZONS["collapse"]))
    traj = _run(x, grid, V=table1_value_matrix("collapse"))
    rep = analysis.softmax_geometry(traj, regime="collapse")
    res.figures.append(
        ctx.figure(
            plot_trajectory(traj, title="V = -I", hull=False),
            "softmax_thmC5",
            "Trajectories x_i(t) of eq. (1): all run into the origin. No token leads: the attention rows "
            "are nearly uniform (P_ij -> 1/n), so no stars and no follow colours.",
        )
    )
    m = rep.measured
    decay = analysis.collapse_decay(traj)
    res.figures.append(
        ctx.figure(
            _radius_figure(decay),
            "softmax_thmC5_radius",
            "Radius of the cloud against time (log-log): the fit over the late window and the predicted "
            "slope -1/2; an exponential collapse would bend downwards.",
        )
    )
    res.checks.extend(_collapse_checks(m, decay, grid["time"]))
    res.params = {
        "n": 40,
        "d": 2,
        "Q": "I",
        "K": "I",
        "V": "-I",
        "rescaled": False,
        **grid,
        "decay_fit": {"from": COLLAPSE_FIT_FROM, "exponent": decay.exponent, "log_prefactor": decay.log_prefactor},
    }


def _collapse_checks(m: dict[str, Any], decay: RadiusDecay, T: float) -> list[Check]:
    """Theorem C.5's checks on the measurements ``m`` of the collapse report and the fitted decay: the radius
    never grows, its final over initial value and its values at a few times (reported), and the decay exponent
    p of r(t) ~ t^p against the predicted -1/2 (:mod:`attndyn.analysis._collapse`)."""
    lo, hi = decay.fit_window
    p = decay.exponent
    return [
        Check("the radius of the cloud never grows", "yes", yes_no(m["monotone"]), m["monotone"]),
        Check(
            f"radius at T = {T:g} over initial radius",
            "-> 0 (one time shows no limit: see the fitted decay)",
            f"{m['final_over_initial_radius']:.3g}",
            None,
        ),
        Check(
            "radius r(t) = max_i |x_i(t)|_inf at t = " + ", ".join(m["radius_at"]),
            "decreasing to 0",
            ", ".join(f"{r:.3g}" for r in m["radius_at"].values()),
            None,
        ),
        Check(
            f"decay exponent p of r(t) ~ t^p (least squares of log r on log t, t in [{lo:g}, {hi:g}])",
            f"r -> 0; near the origin p = {COLLAPSE_EXPONENT:g} (module attndyn.analysis._collapse); "
            f"pass: |p - ({COLLAPSE_EXPONENT:g})| <= {COLLAPSE_EXPONENT_ATOL:g}",
            "-" if p is None else f"{p:.3f} (rms residual {decay.fit_rms:.1e})",
            decay.matches,
        ),
    ]


def _radius_figure(decay: RadiusDecay) -> Figure:
    """Radius against time on log-log axes, the fitted power law and the slope -1/2 through its last point."""
    fig = new_figure(5.0, 3.4)
    ax = fig.add_subplot()
    t, r = np.array(decay.times), np.array(decay.radius)
    keep = t > 0
    ax.loglog(t[keep], r[keep], "o", ms=3.5, color=color(0), label="radius $r(t)$")
    lo, hi = decay.fit_window
    tt = np.geomspace(lo, hi, 50)
    if decay.exponent is not None:
        ax.loglog(tt, decay.fitted(tt), color="#d62728", lw=2, label=f"fit $t^{{{decay.exponent:.3f}}}$")
    ax.loglog(tt, r[-1] * (tt / t[-1]) ** COLLAPSE_EXPONENT, "k--", lw=1, label="slope $-1/2$ (predicted)")
    ax.axvspan(lo, hi, color="#999999", alpha=0.12, lw=0, label="fit window")
    ax.set_xlabel("t")
    ax.set_ylabel(r"radius $r(t) = \max_i \|x_i(t)\|_\infty$")
    ax.grid(alpha=0.3, which="both", lw=0.5)
    ax.legend(fontsize=8)
    return fig

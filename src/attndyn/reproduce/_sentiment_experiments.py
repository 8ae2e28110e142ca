"""Hardmax paper Figs. 8-10 from a trained sentiment run folder (``--sentiment-run DIR``), and the
faithfulness table of its word explanations (docs/attributions.md).

Nothing is trained here: the figures are drawn by :mod:`attndyn.plotting._sentiment` from what the
run folder holds (``metrics.json``, ``evaluation.json`` from ``attndyn sentiment evaluate``, and
the fitted model for Fig. 9). Missing pieces are skipped with a message.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from .._errors import InputError
from ..sentiment._layout import CONFIG, EVALUATION, METRICS
from ._registry import Check, Context, FigureRef, SectionResult, section

SOURCE = "Alcalde, Fantuzzi & Zuazua 2024 (hardmax paper)"

# Reported best test accuracy per encoder dimension d (hardmax paper Section 6, restated in sentiment-setup.md).
PAPER_BEST_ACCURACY = {2: 0.791, 4: 0.823, 8: 0.851, 16: 0.882}

EXAMPLE_REVIEWS = {
    "positive": "a wonderful film with brilliant acting and a moving story i loved every minute of it",
    "negative": "a boring waste of time the plot was terrible and the acting was awful i hated it",
}


def _load_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _save_with(ctx: Context, draw: Callable[[Path], object], stem: str, caption: str) -> FigureRef:
    """Draw with a sentiment plot function (which writes one file per call) in every format asked."""
    files = []
    for fmt in ctx.formats:
        p = ctx.out / "figures" / f"{stem}.{fmt}"
        p.parent.mkdir(parents=True, exist_ok=True)
        draw(p)
        files.append(str(p.relative_to(ctx.out)))
    return FigureRef(caption=caption, files=tuple(files))


def _run_dimension(config: dict, evaluation: dict | None) -> int | None:
    """The run's d: from config.json's model, its estimator, its top level, or else evaluation.json (None: unknown)."""
    return (
        (config.get("model") or {}).get("d")
        or (config.get("estimator") or {}).get("d")
        or config.get("d")
        or (evaluation or {}).get("d")
    )


def _figure8(ctx: Context, plots: ModuleType, evaluation: dict | None, metrics: dict | None) -> FigureRef | None:
    """Fig. 8 from evaluation.json's ``figure8``, or else from metrics.json's history; None when neither has epochs."""
    fig8 = (evaluation or {}).get("figure8")
    if not fig8 and metrics and metrics.get("history"):
        from ..sentiment._evaluate import figure8_data

        fig8 = figure8_data(metrics["history"])
    if not (fig8 and fig8.get("epoch")):
        return None
    return _save_with(
        ctx,
        lambda p: plots.write(plots.draw_figure8(fig8), p),
        "sentiment_fig8",
        "Fig. 8: loss per epoch, softmax training model vs hardmax inference (same weights).",
    )


def _evaluation_checks(evaluation: dict, d: int | None) -> list[Check]:
    """What evaluation.json measured, beside the paper: the hardmax test accuracy (for the d the paper reports),
    the softmax/hardmax agreement and the leader statistics (each when recorded)."""
    checks = []
    acc = evaluation.get("hardmax_acc")
    if acc is not None and d in PAPER_BEST_ACCURACY:
        checks.append(
            Check(
                f"hardmax test accuracy, d = {d}",
                f"{PAPER_BEST_ACCURACY[d]} (best epoch)",
                f"{acc:.3f} on {evaluation.get('n', '?')} reviews",
                None,
            )
        )
    if "agreement" in evaluation:
        checks.append(
            Check(
                "softmax and hardmax predictions agree (same weights)",
                "the loss curves coincide",
                f"{evaluation['agreement']:.3f}",
                None,
            )
        )
    if "leaders_mean" in evaluation:
        checks.append(
            Check(
                "leaders per test review at the last layer: mean (std, min-max); fraction already leaders at layer 0",
                "(table printed by the paper's code)",
                f"{evaluation['leaders_mean']:.2f} ({evaluation.get('leaders_std', 0):.2f}, "
                f"{evaluation.get('leaders_min')}-{evaluation.get('leaders_max')}); "
                + ("-" if (at0 := evaluation.get("leaders_at_layer0_fraction")) is None else f"{at0:.2f}"),
                None,
            )
        )
    return checks


def _figure10(ctx: Context, res: SectionResult, plots: ModuleType, rows: list[dict]) -> None:
    """Fig. 10 from evaluation.json's leader-word rows, and the top ten words as a check (nothing when no rows)."""
    if not rows:
        return
    res.figures.append(
        _save_with(
            ctx,
            lambda p: plots.write(plots.draw_figure10(rows), p),
            "sentiment_fig10",
            "Fig. 10: most frequent leaders with |H(z)| >= 2 in confident, correct reviews.",
        )
    )
    res.checks.append(
        Check(
            "top leader words (Fig. 10)",
            "meaningful sentiment words",
            ", ".join(str(r["word"]) for r in rows[:10]),
            None,
        )
    )


def _figure9(ctx: Context, res: SectionResult, plots: ModuleType, run: Path) -> None:
    """Fig. 9 for each of :data:`EXAMPLE_REVIEWS` from the fitted d = 2 model of ``run``, each added to ``res`` once
    drawn (an error stops at the review it happened in)."""
    from ..sentiment import HardmaxSentimentClassifier, figure9_data

    est = HardmaxSentimentClassifier.load(run)
    for side, text in EXAMPLE_REVIEWS.items():
        data = figure9_data(est, text)

        def draw(p: Path, data: dict = data) -> Path:
            return plots.write(plots.draw_figure9(data), p)

        res.figures.append(
            _save_with(
                ctx,
                draw,
                f"sentiment_fig9_{side}",
                f"Fig. 9: the words of a {side} review, layer by layer: \u201c{text}\u201d.",
            )
        )


def _faithfulness_result(ctx: Context, run: Path) -> tuple[dict | None, str]:
    """The run's faithfulness table: ``RUN/faithfulness.json`` when ``attndyn sentiment faithfulness --out RUN``
    wrote one, else measured now on a small seeded sample of the run's test reviews (20 quick, 200 full; the
    captum methods only when captum is installed). None and why when the run's data cannot be read."""
    from ..sentiment import HardmaxSentimentClassifier
    from ..sentiment._baselines import CAPTUM_METHODS, METHODS
    from ..sentiment._faithfulness import StudySettings, faithfulness, sample_texts
    from ..sentiment._runfolder import RunFolder

    saved = _load_json(run / "faithfulness.json")
    if saved and saved.get("methods"):
        return saved, "from faithfulness.json"
    try:
        info = RunFolder(run).data()
    except InputError:  # damaged: read as missing
        info = None
    if not info or not Path(info["data"]).exists():
        return None, "no data.json naming a readable data file (train with `attndyn sentiment train`)"
    n = ctx.pick(20, 200)
    texts, _, pool = sample_texts(info["data"], n, ctx.seed, split=info["split"], split_seed=info["seed"])
    est = HardmaxSentimentClassifier.load(run)
    texts = [t for t, w in zip(texts, est.known_words(texts)) if w]
    methods = METHODS if importlib.util.find_spec("captum") else tuple(m for m in METHODS if m not in CAPTUM_METHODS)
    settings = StudySettings(methods=methods, sanity_reviews=ctx.pick(10, 50), bootstrap_resamples=1000)
    return faithfulness(est, texts, settings), f"measured now on {len(texts)} of {pool}"


def _faithfulness(ctx: Context, res: SectionResult, run: Path) -> None:
    """The faithfulness table of the run's word explanations (docs/attributions.md) as checks, and the
    deletion curves."""
    from ..plotting._attribution import draw_deletion_curves
    from ..sentiment._faithfulness import stat_text

    result, where = _faithfulness_result(ctx, run)
    if result is None:
        res.checks.append(Check("faithfulness of the word explanations", "-", f"skipped: {where}", None))
        return
    for m, r in result["methods"].items():
        c, s, san = r["comprehensiveness"], r["sufficiency"], r["sanity_spearman"]
        res.checks.append(
            Check(
                f"faithfulness of {m}: comprehensiveness / sufficiency AOPC [95% CI]; sanity Spearman",
                "(not in the paper; issue 23)",
                f"{c['mean']:.3f} [{c['ci'][0]:.3f}, {c['ci'][1]:.3f}] / {s['mean']:.3f} [{s['ci'][0]:.3f}, "
                f"{s['ci'][1]:.3f}]; {stat_text(san, '.2f')}",
                None,
            )
        )
    ex = result["exactness"]
    res.checks.append(
        Check(
            f"exact attributions add up to H ({result['reviews']['n']} reviews, {where})",
            f"relative residual <= {ex['tolerance']:g}",
            f"max {ex['max_relative_residual']:.1e}",
            ex["reviews_over_tolerance"] == 0,
        )
    )
    res.figures.append(
        ctx.figure(
            draw_deletion_curves(result),
            "sentiment_faithfulness",
            "Deletion curves and AOPC of the word explanations (exact attribution, captum, attention, random).",
        )
    )


@section(
    "sentiment-figs",
    title="Hardmax Figs. 8-10: the sentiment model",
    source=SOURCE + ", Section 6, Figs. 8-10",
    needs="sentiment_run",
)
def sentiment_figs(ctx: Context, res: SectionResult) -> None:
    """Fig. 8: loss per epoch of the softmax training model and of the hardmax model with the same weights.
    Fig. 9: the words of a positive and a negative review, layer by layer (d = 2 models). Fig. 10: the most
    frequent far-from-the-line leader words of confidently, correctly classified test reviews."""
    run = ctx.sentiment_run
    if run is None:
        res.skipped = (
            "no trained run given: pass sentiment_run=DIR (command line: --sentiment-run DIR), a folder written by "
            "`attndyn sentiment train`"
        )
        return
    try:
        from ..plotting import _sentiment as plots
    except ImportError as exc:  # the sentiment package is optional for reproduce
        res.skipped = f"attndyn.plotting._sentiment is not available ({exc})"
        return
    notes = []
    evaluation = _load_json(run / EVALUATION)
    config = _load_json(run / CONFIG) or {}
    d = _run_dimension(config, evaluation)
    res.params = {"run": str(run), "d": d}
    fig8 = _figure8(ctx, plots, evaluation, _load_json(run / METRICS))
    if fig8 is not None:
        res.figures.append(fig8)
    else:
        notes.append("no training history (metrics.json) for Fig. 8")
    if evaluation:
        res.checks.extend(_evaluation_checks(evaluation, d))
        _figure10(ctx, res, plots, evaluation.get("figure10") or [])
    else:
        notes.append("no evaluation.json (run `attndyn sentiment evaluate --run DIR`) for Fig. 10 and the accuracy")
    try:
        _faithfulness(ctx, res, run)
    except Exception as exc:  # a broken or foreign run folder must not stop the other experiments
        notes.append(f"faithfulness skipped: {type(exc).__name__}: {exc}")
    if d == 2:
        try:
            _figure9(ctx, res, plots, run)
        except Exception as exc:  # a broken or foreign run folder must not stop the other experiments
            notes.append(f"Fig. 9 skipped: {type(exc).__name__}: {exc}")
    elif d is not None:
        notes.append(f"Fig. 9 is drawn in the plane and needs a d = 2 model; this run has d = {d}")
    if notes:
        res.checks.append(Check("missing pieces", "-", "; ".join(notes), None))
    if not res.figures:
        res.skipped = "the run folder holds nothing to draw: " + "; ".join(notes)

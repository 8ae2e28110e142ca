"""``attndyn sentiment train | evaluate | predict | explain | seal | faithfulness`` and ``attndyn data imdb``."""

from __future__ import annotations

import csv
import json
import sys
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from .._errors import InputError
from ..sentiment._defaults import DEFAULT_DATA, IMDB_SHA256, RECIPE_MIN_D, RECIPE_VALUES
from ._interrupt import on_interrupt

if TYPE_CHECKING:
    from ..sentiment import HardmaxSentimentClassifier

app = typer.Typer(help="Interpretable IMDb sentiment analysis with a hardmax transformer.", no_args_is_help=True)
data_app = typer.Typer(help="Datasets: fetch them when you have a network.", no_args_is_help=True)

# Review files (--file) larger than this are refused before they are read whole.

_DEVICE_HELP = "Where to run: cpu, cuda or auto (CUDA when present); a CUDA run rounds differently from the CPU."


def _estimator(run: Path, device: str = "cpu") -> HardmaxSentimentClassifier:
    from ..sentiment import HardmaxSentimentClassifier

    return HardmaxSentimentClassifier.load(run, device=device)


def _reading(run: Path) -> AbstractContextManager[object]:
    """A shared lock on a run folder while predict, evaluate or explain read it (:meth:`RunFolder.reading`)."""
    from ..sentiment._runfolder import RunFolder

    return RunFolder(run).reading()


#: What --file of predict holds.
_TEXTS_FILE = "one text per line, or a CSV with a 'text' or 'review' column"


def _texts_from(text: str | list[str] | None, file: Path | None, encoding: str = "utf-8") -> list[str]:
    if (text is None) == (file is None):
        raise InputError(f"give either a TEXT argument or --file PATH ({_TEXTS_FILE})")
    if text is not None:
        return [text] if isinstance(text, str) else list(text)
    assert file is not None  # exactly one of TEXT and --file (checked above)
    from ..sentiment._data import read_texts

    return read_texts(file, encoding)


def _check_figure_path(path: Path | None, option: str, formats: tuple[str, ...] | None = None) -> None:
    """Refuse, before any work, a figure path whose suffix no writer supports, or that cannot be written
    (:func:`attndyn._io.check_output_file`)."""
    if path is None:
        return
    if formats is None:
        from matplotlib.figure import Figure

        formats = tuple(sorted(Figure().canvas.get_supported_filetypes()))
    suffix = path.suffix.lower().lstrip(".")
    if suffix not in formats:
        raise InputError(
            f"{option} {str(path)!r}: unknown image type {('.' + suffix) if suffix else '(no suffix)'}; "
            f"end the name with one of {', '.join('.' + f for f in formats)}"
        )
    from .._io import check_output_file

    check_output_file(path, option)


def _by_d(name: str) -> str:
    """' Default: the recipe for --d, X for d < 16; Y for d >= 16.' for a setting, read from the recipe table."""
    values = list(zip(RECIPE_MIN_D, RECIPE_VALUES[name]))  # the recipes' table without torch: help parses fast
    if len({repr(v) for _, v in values}) == 1:
        return f" Default: {_show(values[0][1])}."
    bounds = list(RECIPE_MIN_D[1:])
    parts = []
    for i, (min_d, v) in enumerate(values):
        rng = (
            f"d < {bounds[0]}" if i == 0 else f"d >= {min_d}" if i == len(values) - 1 else f"{min_d} <= d < {bounds[i]}"
        )
        parts.append(f"{_show(v)} for {rng}")
    return f" Default: the recipe for --d, {'; '.join(parts)}."


def _show(v: object) -> str:
    return (
        "none" if v is None else str(v).lower() if isinstance(v, bool) else f"{v:g}" if isinstance(v, float) else str(v)
    )


def _stop_words(value: str | None) -> str | list[str] | None:
    """--stop-words: 'english', 'none' or comma-separated words."""
    if value is None or value in ("english", "none"):
        return value
    return [w.strip() for w in value.split(",") if w.strip()]


#: The help of each train option that sets a recipe setting (its recipe values are appended by :func:`_by_d`).
_SETTING_HELP = {
    "layers": "Number of layers K.",
    "epochs": "Most passes over the training reviews (early stopping may end sooner).",
    "batch_size": "Reviews per training batch.",
    "max_len": "Tokens kept per review (the paper: 128).",
    "min_freq": "Minimum training-split frequency of a vocabulary word.",
    "max_vocab": "Most vocabulary words (none: no cap).",
    "min_log_odds": "Drop words whose training log-odds between the classes is below this (0: keep all).",
    "stop_words": "'english', 'none' or comma-separated stop words.",
    "keep_negations": "Negations are never stop words.",
    "negation_scope": "Mark this many words after a negation (not_good); 0: off.",
    "merge_negations": "Drop a negation once it marked a word (not good -> not_good alone).",
    "bigrams": "k > 0: pairs of neighbouring words seen in >= k training reviews are tokens too; 0: off.",
    "lexicon": "Never drop the built-in sentiment lexicon's words (good, bad, ...) and their not_ forms by the log-odds filter.",
    "lexicon_examples": "Train also on each lexicon word alone and negated (good: positive, not bad: positive), this many times each; 0: off.",
    "lr": "AdamW learning rate of alpha and the decoder.",
    "embed_lr": "AdamW learning rate of the word vectors.",
    "lr_decay": "Multiply both learning rates by this once per epoch (1: constant).",
    "word_dropout": "Fraction of a review's words hidden at random in each training batch, in [0, 1).",
    "tau": "Softmax temperature while training (inference is the hardmax, the limit tau -> 0).",
    "tau_start": "Anneal the temperature geometrically from this to --tau over --anneal-epochs (none: no annealing).",
    "anneal_epochs": "Epochs over which the temperature is annealed.",
    "alpha_min": "Lower bound of the learned attention step alpha (alpha = alpha_min + softplus).",
    "alpha_init": "Initial alpha (greater than alpha_min).",
    "embed_init_std": "Std of the initial word vectors (none: sqrt(2/d)).",
    "registers": "R > 0: R register tokens of graded value in every review, placed after the words are trained as the layers=0 control; 0: none.",
    "register_shift": "Registers: how far every word is moved beside the decision's direction.",
    "register_length": "Registers: their norm.",
    "patience": "Stop after this many epochs without a better validation hardmax accuracy.",
    "val_fraction": "Fraction of the training reviews held out for early stopping.",
    "weight_decay": "Decoupled weight decay of the word vectors.",
    "aux_weight": "Deep supervision: weight of the decoder's loss at layers 0..K-1.",
    "prior_weight": "Sign prior: weight of the hinge that makes each lexicon word, alone and negated, read with its sign; 0: off.",
    "prior_margin": "Sign prior: the logit margin each lexicon word alone must reach (2: probability 0.88).",
    "train_eval_size": "Training reviews scored each epoch for the softmax/hardmax curves.",
}


def _train_estimator(options: dict[str, Any]) -> HardmaxSentimentClassifier:
    """The estimator the train options describe (every setting of :data:`~attndyn.sentiment._recipes.SETTINGS`, None
    taking the recipe for d; --seed as random_state, --run as run_dir, --progress as verbose), its parameters checked."""
    from ..sentiment import HardmaxSentimentClassifier
    from ..sentiment._recipes import SETTINGS
    from ._flags import FLAGS, check_annealing, settings_as_flags

    settings = {name: options[name] for name in SETTINGS}
    settings["stop_words"] = _stop_words(settings["stop_words"])
    est = HardmaxSentimentClassifier(
        d=options["d"],
        **settings,
        random_state=options["seed"],
        run_dir=str(options["run"]),
        verbose=options["progress"],
        device=options["device"],
    )
    try:
        est.check_params()
    except InputError as exc:  # the settings' checks name them as Python does: say the train flags
        raise InputError(settings_as_flags(exc.worded(FLAGS), ["d", *SETTINGS])) from None
    check_annealing(est.resolved_params(), options["d"])
    return est


def _recipe_option(name: str, *flags: str) -> Any:
    """The train option of the setting ``name``: default None (the recipe for --d), help from :data:`_SETTING_HELP`
    followed by the recipe's values (:func:`_by_d`)."""
    return typer.Option(None, *flags, help=_SETTING_HELP[name] + _by_d(name))


@app.command()
def train(
    run: Path = typer.Option(..., "--run", help="Run folder (created; an interrupted run there is resumed)."),
    data: Path = typer.Option(Path(DEFAULT_DATA), "--data", help="imdb.csv(.gz) or an aclImdb folder."),
    split: str = typer.Option("random", help="'random' (seeded 70/30, the paper's protocol) or 'official' (25k/25k)."),
    d: int = typer.Option(2, help="Token dimension; every option below left out takes the recipe for d."),
    layers: int | None = _recipe_option("layers"),
    epochs: int | None = _recipe_option("epochs"),
    batch_size: int | None = _recipe_option("batch_size"),
    max_len: int | None = _recipe_option("max_len"),
    min_freq: int | None = _recipe_option("min_freq"),
    max_vocab: int | None = _recipe_option("max_vocab"),
    min_log_odds: float | None = _recipe_option("min_log_odds"),
    stop_words: str | None = _recipe_option("stop_words"),
    keep_negations: bool | None = _recipe_option("keep_negations", "--keep-negations/--no-keep-negations"),
    negation_scope: int | None = _recipe_option("negation_scope"),
    merge_negations: bool | None = _recipe_option("merge_negations", "--merge-negations/--no-merge-negations"),
    bigrams: int | None = _recipe_option("bigrams"),
    lexicon: bool | None = _recipe_option("lexicon", "--lexicon/--no-lexicon"),
    lexicon_examples: int | None = _recipe_option("lexicon_examples"),
    lr: float | None = _recipe_option("lr"),
    embed_lr: float | None = _recipe_option("embed_lr"),
    lr_decay: float | None = _recipe_option("lr_decay"),
    word_dropout: float | None = _recipe_option("word_dropout"),
    tau: float | None = _recipe_option("tau"),
    tau_start: float | None = _recipe_option("tau_start"),
    anneal_epochs: int | None = _recipe_option("anneal_epochs"),
    alpha_min: float | None = _recipe_option("alpha_min"),
    alpha_init: float | None = _recipe_option("alpha_init"),
    embed_init_std: float | None = _recipe_option("embed_init_std"),
    registers: int | None = _recipe_option("registers"),
    register_shift: float | None = _recipe_option("register_shift"),
    register_length: float | None = _recipe_option("register_length"),
    patience: int | None = _recipe_option("patience"),
    val_fraction: float | None = _recipe_option("val_fraction"),
    weight_decay: float | None = _recipe_option("weight_decay"),
    aux_weight: float | None = _recipe_option("aux_weight"),
    prior_weight: float | None = _recipe_option("prior_weight"),
    prior_margin: float | None = _recipe_option("prior_margin"),
    train_eval_size: int | None = _recipe_option("train_eval_size"),
    seed: int = typer.Option(0, help="Seeds the split, the weights, the batches and the dropout."),
    threads: int = typer.Option(2, help="CPU threads for torch."),
    device: str = typer.Option("cpu", help=_DEVICE_HELP),
    progress: bool = typer.Option(True, help="Show progress bars and per-epoch metrics."),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Discard the run already in --run (trained with other settings) and start again."
    ),
) -> None:
    """Train on the training part of the split, then score the test part; writes the run folder
    (settings.json, config.json, vocab.json, weights.safetensors, metrics.json, checkpoint, data.json, test.json).

    Every setting is checked, the data read and its sha256 taken before the folder is touched; an
    existing run there is resumed only when its settings are equal (else exit 2, folder unchanged).
    One training per folder at a time (an OS lock)."""
    options = dict(locals())  # the options by name (the first statement: nothing else is local yet)
    from ..sentiment._runs import check_threads, interrupted_line, train_run

    check_threads(threads)
    est = _train_estimator(options)
    with on_interrupt(lambda: interrupted_line(run)):
        rep, complete = train_run(est, run, data=data, split=split, threads=threads, overwrite=overwrite)
    _print_trained(run, rep, complete)


def _print_trained(run: Path, rep: dict, complete: bool) -> None:
    """The test report of a training; first, for a folder that was complete already, that nothing changed."""
    if complete:
        typer.echo(
            f"run folder {str(run)!r} is complete; nothing was changed (its test report is printed as recorded). "
            "Add --overwrite to train it again, or give another folder with --run NEW",
            err=True,
        )
    typer.echo(json.dumps(rep, indent=2))


def _evaluated_run(run_arg: Path | None, run_opt: Path | None, out: Path | None) -> Path:
    """The run folder, given once (RUN or --run), after checking that --out is not a file."""
    if (run_arg is None) == (run_opt is None):
        raise InputError("give the run folder once: attndyn sentiment evaluate RUN (or --run RUN)")
    run = run_arg or run_opt
    assert run is not None  # exactly one of RUN and --run (checked above)
    if out is not None:  # empty, a file, or below a file: refused before the evaluation runs
        from ._dynamics import check_out_folder

        check_out_folder(out, "--out")
    return run


def _draw_evaluation_figures(rep: dict, dest: Path) -> None:
    """Figure 8, the accuracy curves and Figure 10 of an evaluation report, into ``dest``."""
    from ..plotting import _sentiment as figs

    figs.write(figs.draw_figure8(rep["figure8"]), dest / "figure8.png")
    figs.write(figs.draw_accuracy_curves(rep["figure8"]), dest / "accuracy.png")
    figs.write(figs.draw_figure10(rep["figure10"]), dest / "figure10.png")


def _echo_evaluation(rep: dict, dest: Path) -> None:
    """The evaluation report as text: accuracies, clusters, leaders, the behavioural suite, Figure 10's words."""
    from ..sentiment._checklist import summary

    typer.echo(
        f"d={rep['d']} alpha={rep['alpha']:.3f} test n={rep['n']} ({rep['split']}): softmax acc {rep['softmax_acc']:.4f}, "
        f"hardmax acc {rep['hardmax_acc']:.4f}, agreement {rep['agreement']:.4f}, "
        f"hardmax inference {rep['hardmax_seconds']:.1f}s"
    )
    typer.echo(
        f"clusters per real token (last layer, rtol {rep['cluster_rtol']:g}): mean {rep['clusters_per_token_mean']:.3f}"
    )
    typer.echo(
        f"leaders per review: mean {rep['leaders_mean']:.2f} std {rep['leaders_std']:.2f} min {rep['leaders_min']} "
        f"max {rep['leaders_max']}; already leaders at layer 0: "
        + ("-" if rep["leaders_at_layer0_fraction"] is None else f"{rep['leaders_at_layer0_fraction']:.3f}")
    )
    typer.echo("behavioural suite (pass rate, items): " + summary(rep["checklist"]))
    if "checklist_heldout" in rep:
        typer.echo("held-out behavioural suite: " + summary(rep["checklist_heldout"]))
    typer.echo("figure 10 words: " + ", ".join(f"{r['word']} ({r['count']})" for r in rep["figure10"]))
    typer.echo(f"written to {dest}")


@app.command()
def evaluate(
    run_arg: Path | None = typer.Argument(
        None, metavar="RUN", help="A run folder written by `attndyn sentiment train`."
    ),
    run_opt: Path | None = typer.Option(None, "--run", help="The run folder (same as the RUN argument)."),
    data: Path | None = typer.Option(
        None,
        help="Data to evaluate on: the run's own data (its test split is scored; the default) "
        "or any other CSV with text,label (or review,sentiment) columns, scored whole.",
    ),
    out: Path | None = typer.Option(None, help="Output folder for evaluation.json and figures (default: RUN)."),
    figures: bool = typer.Option(True, help="Draw Figures 8 and 10 and the accuracy curves."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    device: str = typer.Option("cpu", help=_DEVICE_HELP),
) -> None:
    """Softmax vs hardmax test accuracy and agreement, the leader table, clustering, Figures 8 and 10."""
    from .._io import write_json
    from ..sentiment._evaluate import evaluate_model
    from ..sentiment._layout import EVALUATION
    from ..sentiment._runs import evaluation_data

    run = _evaluated_run(run_arg, run_opt, out)
    with _reading(run):
        est = _estimator(run, device)
        test, split = evaluation_data(est, run, data)
        rep = evaluate_model(est, test)
        rep["split"] = split
        dest = out or run
        write_json(dest / EVALUATION, rep)
        if figures:
            _draw_evaluation_figures(rep, dest)
        if as_json:
            typer.echo(json.dumps({k: v for k, v in rep.items() if k != "figure8"}, indent=2))
        else:
            _echo_evaluation(rep, dest)


@app.command()
def predict(
    texts: list[str] | None = typer.Argument(None, metavar="TEXT...", help="One or more reviews (or use --file)."),
    model: Path = typer.Option(..., "--model", help="Run or model folder."),
    file: Path | None = typer.Option(None, "--file", help=_TEXTS_FILE[0].upper() + _TEXTS_FILE[1:] + "."),
    as_json: bool = typer.Option(
        False, "--json", help="Print JSON lines (text, label, probability_positive, known_words)."
    ),
    encoding: str = typer.Option("utf-8", "--encoding", help="Text encoding of --file (e.g. latin-1, utf-16)."),
    device: str = typer.Option("cpu", help=_DEVICE_HELP),
) -> None:
    """Label and probability of positive sentiment for each text, and how many of its words the model knows
    (a text with no known word gets the model's prior, and says so)."""
    if texts and file is not None:
        raise InputError(f"give either TEXT arguments or --file PATH ({_TEXTS_FILE}), not both")
    texts = _texts_from(None if not texts else texts, file, encoding)
    from ..sentiment._inference import load_model  # torch, not scikit-learn: predict answers sooner

    with _reading(model):
        fitted = load_model(model, device=device)
        proba = fitted.predict_proba(texts)[:, 1]
        known = fitted.known_words(texts)
        for t, p, k in zip(texts, proba, known):
            name = _label_name(fitted.classes[int(p > 0.5)])
            if as_json:
                typer.echo(
                    json.dumps({"text": t, "label": name, "probability_positive": float(p), "known_words": len(k)})
                )
            else:
                note = "" if k else "\t(no known word: the model read nothing of this text; this is its prior)"
                typer.echo(f"{name}\t{p:.4f}\t{t[:70]}{note}")


@app.command()
def seal(
    model: Path = typer.Argument(..., metavar="FOLDER", help="A model or run folder that records no sha256."),
) -> None:
    """Seal a model folder saved before folders were sealed, so that it loads: record the sha256 of its
    weights, vocabulary and config.json (every other check of loading applies first). Seal only a folder you
    trust: what it holds now becomes what loads, and later edits are refused."""
    from ..sentiment._inference import seal_model_folder

    typer.echo(f"sealed {seal_model_folder(model)}")


_WORDS_FIGURE_HELP = (
    "Draw the review's words coloured by their exact contribution to the decision "
    "(below Figure 9's panels for a d = 2 model) to this image."
)


@app.command()
def explain(
    text: str | None = typer.Argument(None, help="A review (or use --file)."),
    model: Path = typer.Option(..., "--model", help="Run or model folder."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    figure: Path | None = typer.Option(None, help="Draw Figure 9 (d = 2) to this PNG."),
    gif: Path | None = typer.Option(None, help="Draw the animated Figure 9 (d = 2) to this GIF."),
    file: Path | None = typer.Option(
        None, "--file", help="Read the review from this text file (its whole text is one review)."
    ),
    encoding: str = typer.Option("utf-8", "--encoding", help="Text encoding of --file (e.g. latin-1, utf-16)."),
    device: str = typer.Option("cpu", help=_DEVICE_HELP),
    words_figure: Path | None = typer.Option(None, "--words-figure", help=_WORDS_FIGURE_HELP),
) -> None:
    """Label, probability, last-layer leaders with the words clustered around each, each cluster's share of the
    decision, and each word's exact contribution (the contributions and the bias add up to the decision value H)."""
    from ..sentiment import explain as run_explain
    from ..sentiment._data import read_text_file

    if (text is None) == (file is None):
        raise InputError("give either a TEXT argument or --file PATH (a text file holding one review)")
    if file is not None:
        text = read_text_file(file, encoding).strip()
        if not text:
            raise InputError(f"--file {str(file)!r} holds no text")
    assert text is not None  # exactly one of TEXT and --file, checked above
    _check_figure_path(figure, "--figure")
    _check_figure_path(gif, "--gif", ("gif",))
    _check_figure_path(words_figure, "--words-figure")
    named = [(f, p.resolve()) for f, p in (("--figure", figure), ("--words-figure", words_figure)) if p is not None]
    if len(named) == 2 and named[0][1] == named[1][1]:  # the second figure would overwrite the first
        raise InputError("--figure and --words-figure name the same file; give two names")
    with _reading(model):
        est = _estimator(model, device)
        if (figure or gif) and est.model_.config.d != 2:
            raise InputError(
                f"--figure/--gif draw the plane and need a d = 2 model; this one has d = {est.model_.config.d}"
            )
        e = run_explain(est, text)
        att = _word_attributions(est, text, words_figure)
        if figure or gif:
            from ..plotting import _sentiment as figs
            from ..sentiment import figure9_data

            data = figure9_data(est, text)
            if figure:
                figs.write(figs.draw_figure9(data), figure)
            if gif:
                figs.figure9_gif(data, gif)
    if as_json:
        record = {**e.to_dict(), "label": _label_name(e.label), "attributions": att.to_dict()}
        typer.echo(json.dumps(record, indent=2))  # the label named as `predict --json` names it
        return
    _echo_explanation(e, att)


def _label_name(label: Any) -> Any:
    """A class as the command line prints it: 1 / 0 as "positive" / "negative", a string as it is."""
    label = label.item() if hasattr(label, "item") else label
    return {1: "positive", 0: "negative"}.get(label, label) if not isinstance(label, str) else label


def _echo_explanation(e: Any, att: Any) -> None:
    """The explanation as text: the decision, each cluster with its share, each word's exact contribution."""
    side = "positive" if e.decision_value > 0 else "negative"
    if not e.known_words:
        typer.echo(
            f"no known word: the model read nothing of this text; {side} (p positive = {e.probability:.3f}) is its prior "
            "for any such text, no leader or cluster explains it"
        )
        return
    typer.echo(
        f"{side} (p positive = {e.probability:.3f}; H = {e.decision_value:+.3f}, bias {e.bias:+.3f}, alpha {e.alpha:.3f})"
    )
    for c in e.clusters:
        typer.echo(
            f"  {', '.join(c.leaders):<20} share {c.share:+.2f}  ({c.size} {'word' if c.size == 1 else 'words'}: {', '.join(c.words[:12])}{' …' if len(c.words) > 12 else ''})"
        )
    _echo_attributions(att)


@data_app.command("imdb")
def data_imdb(
    download: Path = typer.Option(..., "--download", help="Folder to download and extract aclImdb into."),
    url: str = typer.Option("https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz", help="Archive URL."),
    sha256: str | None = typer.Option(
        None,
        "--sha256",
        help="Expected sha256 of the archive (default: the published one of aclImdb_v1.tar.gz; 'none' skips the check).",
    ),
) -> None:
    """Fetch the official IMDb archive (needs a network), verify its length and sha256, and extract it."""
    from ..sentiment._data import download_imdb

    expected = IMDB_SHA256 if sha256 is None else None if sha256.strip().lower() == "none" else sha256.strip().lower()
    root = download_imdb(download, url=url, sha256=expected, progress=sys.stderr.isatty())
    typer.echo(str(root))


# ---- word attributions and their faithfulness -------------------------------------------------
def _word_attributions(est: HardmaxSentimentClassifier, text: str, words_figure: Path | None) -> Any:
    """The exact word attributions of ``text`` (:func:`attndyn.sentiment._attribution.attribute`), drawn to
    ``words_figure`` when given (below Figure 9's panels for a d = 2 model)."""
    from ..sentiment._attribution import attribute

    att = attribute(est, text)
    if words_figure is not None:
        from ..plotting import _attribution as afig
        from ..plotting._sentiment import write

        if est.model_.config.d == 2:
            from ..sentiment import figure9_data

            fig = afig.draw_explanation(att.to_dict(), figure9_data(est, text))
        else:
            fig = afig.draw_attribution(att.to_dict())
        write(fig, words_figure)
    return att


def _echo_attributions(att: Any, most: int = 12) -> None:
    """Each word type's exact contribution to H, largest first (copies of a word share it equally)."""
    typer.echo(
        f"words (exact: bias {att.bias:+.3f} + the contributions = H; a word type's total over its copies, largest first):"
    )
    for r in att.by_word[:most]:
        count = f" x{r.count}" if r.count > 1 else ""
        typer.echo(f"  {r.word + count:<24} {r.contribution:+.4f}")
    if len(att.by_word) > most:
        rest = sum(r.contribution for r in att.by_word[most:])
        typer.echo(f"  ({len(att.by_word) - most} more word types: {rest:+.4f} together)")


def _faithfulness_methods(methods: list[str] | None) -> tuple[str, ...]:
    """--methods: repeated or comma-separated names (default: all), checked."""
    from ..sentiment._baselines import METHODS, check_methods

    if not methods:
        return METHODS
    names = [m.strip() for item in methods for m in item.split(",") if m.strip()]
    try:
        return check_methods(names)
    except InputError as exc:
        raise InputError(f"--methods: {exc}") from None


def _faithfulness_settings(opts: dict[str, Any]) -> Any:
    """The study's settings from the command's options, each range checked under its option's name."""
    from ..sentiment._baselines import MAX_IG_STEPS, MAX_KERNELSHAP_SAMPLES, MethodSettings, require_captum
    from ..sentiment._faithfulness import MAX_BOOTSTRAP, StudySettings

    ranges = {
        "reviews": (1, None),
        "seed": (0, None),
        "ig_steps": (2, MAX_IG_STEPS),
        "kernelshap_samples": (2, MAX_KERNELSHAP_SAMPLES),
        "sanity_reviews": (0, None),
        "bootstrap": (10, MAX_BOOTSTRAP),
    }
    for name, (low, high) in ranges.items():
        if opts[name] < low or (high is not None and opts[name] > high):
            want = f">= {low}" if high is None else f"from {low} to {high}"
            raise InputError(f"--{name.replace('_', '-')} must be an integer {want}, got {opts[name]}")
    methods = _faithfulness_methods(opts["methods"])
    require_captum(methods)
    base = MethodSettings(seed=opts["seed"], ig_steps=opts["ig_steps"], kernelshap_samples=opts["kernelshap_samples"])
    return StudySettings(
        methods=methods, baselines=base, sanity_reviews=opts["sanity_reviews"], bootstrap_resamples=opts["bootstrap"]
    )


def _faithfulness_outputs(result: dict, out: Path) -> None:
    """faithfulness.json, faithfulness.csv, deletion_curves.png and report.txt in ``out``, each written atomically
    (the figure is drawn first: a drawing error writes nothing)."""
    import io as _io

    from .._io import write_bytes, write_json, write_text
    from ..plotting._attribution import draw_deletion_curves
    from ..plotting._save import png_bytes
    from ..sentiment._faithfulness import report, table_rows

    png = png_bytes(draw_deletion_curves(result))
    rows = table_rows(result)
    buf = _io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), restval="", lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "faithfulness.json", result)
    write_text(out / "faithfulness.csv", buf.getvalue())
    write_bytes(out / "deletion_curves.png", png)
    write_text(out / "report.txt", report(result))


@app.command("faithfulness")
def faithfulness_command(
    model: Path = typer.Option(..., "--model", help="Run or model folder."),
    out: Path = typer.Option(
        ..., "--out", help="Folder for faithfulness.json, faithfulness.csv, deletion_curves.png and report.txt."
    ),
    data: Path | None = typer.Option(
        None,
        help="Reviews to explain: the run's own data (a sample of its test split; the default) "
        "or any other CSV with text,label (or review,sentiment) columns (a sample of all its rows).",
    ),
    reviews: int = typer.Option(1000, "--reviews", help="How many reviews, drawn with --seed."),
    methods: list[str] | None = typer.Option(
        None,
        "--methods",
        help="Methods, comma-separated or repeated: exact, ig, ig-mean, gradxinput, kernelshap, occlusion (leave one "
        "position out), occlusion-word (leave every copy of a word out), followers, rollout, random (default: all; ig, "
        'ig-mean, gradxinput and kernelshap need captum: pip install -e ".\\[explain]").',
    ),
    seed: int = typer.Option(
        0, help="Seeds the sample, random, KernelShap, the tie-breaks, the bootstrap and the re-initialized model."
    ),
    ig_steps: int = typer.Option(32, "--ig-steps", help="Integrated Gradients' path points (2-1024)."),
    kernelshap_samples: int = typer.Option(
        200, "--kernelshap-samples", help="KernelShap's coalitions per review (2-10000)."
    ),
    sanity_reviews: int = typer.Option(
        200, "--sanity-reviews", help="Reviews of the model-randomization check (0: off)."
    ),
    bootstrap: int = typer.Option(
        2000, "--bootstrap", help="Bootstrap resamples of each confidence interval (10-20000)."
    ),
    threads: int = typer.Option(1, help="CPU threads for torch."),
    progress: bool = typer.Option(True, help="Show a progress bar."),
    as_json: bool = typer.Option(False, "--json", help="Print the result's JSON instead of the report."),
) -> None:
    """Faithfulness of the word explanations (exact attributions, captum's, leave-one-out occlusion, attention-based,
    random) and of the cluster explanation: comprehensiveness and sufficiency (AOPC, and at each deletion level),
    where the exact attribution wins, deletion curves, rank agreement and the model-randomization check, with
    bootstrap intervals over reviews. Nothing is written unless it all succeeds."""
    from .._threads import limit_threads
    from ..sentiment._faithfulness import faithfulness, report
    from ..sentiment._runs import check_threads, sample_run_texts

    settings = _faithfulness_settings(dict(locals()))
    check_threads(threads)
    from ._dynamics import check_out_folder

    check_out_folder(out, "--out")  # empty, a file, or below a file: refused before the study runs
    with _reading(model):
        est = _estimator(model)
        texts, rows, pool, path = sample_run_texts(est, model, reviews, seed, data)
        with limit_threads(torch_threads=threads):
            result = faithfulness(est, texts, settings, progress=progress)
    result["data"] = {"path": str(path), "pool": pool, "sample_seed": seed, "rows": rows.tolist()}
    _faithfulness_outputs(result, out)
    typer.echo(json.dumps(result, indent=2) if as_json else report(result) + f"written to {out}")


def register(root: typer.Typer) -> None:
    """Add the ``sentiment`` and ``data`` command groups to the ``attndyn`` app."""
    root.add_typer(app, name="sentiment")
    root.add_typer(data_app, name="data")

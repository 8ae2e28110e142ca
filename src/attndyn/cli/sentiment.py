"""``attndyn sentiment train | evaluate | predict | explain`` and ``attndyn data imdb``."""

from __future__ import annotations

import csv
import json
import sys
import time
from pathlib import Path
from typing import Optional

import typer

from .._validation import InputError

app = typer.Typer(help="Interpretable IMDb sentiment analysis with a hardmax transformer.", no_args_is_help=True)
data_app = typer.Typer(help="Datasets: fetch them when you have a network.", no_args_is_help=True)

DEFAULT_DATA = "../shared/data/imdb/imdb.csv.gz"


_DEVICE_HELP = "Where to run: cpu, cuda or auto (CUDA when present); the same results on each."


def _estimator(run: Path, device: str = "cpu"):
    from ..sentiment import HardmaxSentimentClassifier

    return HardmaxSentimentClassifier.load(run, device=device)


def _texts_from(text: Optional[str], file: Optional[Path]) -> list[str]:
    if (text is None) == (file is None):
        raise InputError("give either a TEXT argument or --file PATH (one text per line, or a CSV with a 'text' column)")
    if text is not None:
        return [text]
    if not file.is_file():
        raise InputError(f"--file {str(file)!r} does not exist")
    raw = file.read_text(encoding="utf-8")
    if file.suffix.lower() == ".csv":
        rows = list(csv.DictReader(raw.splitlines()))
        if not rows or "text" not in rows[0]:
            raise InputError(f"CSV {str(file)!r} has no 'text' column; add a header line with a 'text' column")
        texts = [r["text"] or "" for r in rows]
    else:
        texts = [line for line in raw.splitlines() if line.strip()]
    if not texts:
        raise InputError(f"{str(file)!r} holds no texts")
    return texts


@app.command()
def train(
    run: Path = typer.Option(..., "--run", help="Run folder (created; an interrupted run there is resumed)."),
    data: Path = typer.Option(Path(DEFAULT_DATA), "--data", help="imdb.csv(.gz) or an aclImdb folder."),
    split: str = typer.Option("random", help="'random' (seeded 70/30, the paper's protocol) or 'official' (25k/25k)."),
    d: int = typer.Option(2, help="Token dimension."),
    layers: int = typer.Option(8, help="Number of layers K."),
    epochs: int = typer.Option(8),
    max_len: int = typer.Option(256, help="Tokens kept per review (the paper: 128)."),
    min_freq: int = typer.Option(5, help="Minimum training-split frequency of a vocabulary word."),
    min_log_odds: float = typer.Option(0.3, help="Drop words whose training log-odds between the classes is below this (0: keep all)."),
    negation_scope: int = typer.Option(1, help="Mark this many words after a negation (not_good); 0: off."),
    bigrams: int = typer.Option(0, help="k > 0: pairs of neighbouring words seen in >= k training reviews are tokens too; 0: off."),
    lr: float = typer.Option(3e-3),
    embed_lr: float = typer.Option(3e-2),
    lr_decay: float = typer.Option(1.0, help="Multiply both learning rates by this once per epoch (1: constant)."),
    word_dropout: float = typer.Option(0.1),
    tau: float = typer.Option(1e-3),
    alpha_min: float = typer.Option(0.5),
    alpha_init: float = typer.Option(1.0),
    embed_init_std: Optional[float] = typer.Option(None, help="Std of the initial word vectors (default sqrt(2/d); the clustered d=16 model: 0.12)."),
    patience: int = typer.Option(2),
    weight_decay: float = typer.Option(0.0, help="Decoupled weight decay of the word vectors."),
    aux_weight: float = typer.Option(1.0, help="Deep supervision: weight of the decoder's loss at layers 0..K-1."),
    seed: int = typer.Option(0, help="Seeds the split, the weights, the batches and the dropout."),
    threads: int = typer.Option(2, help="CPU threads for torch."),
    device: str = typer.Option("cpu", help=_DEVICE_HELP),
    progress: bool = typer.Option(True, help="Show progress bars and per-epoch metrics."),
) -> None:
    """Train on the training part of the split, then score the test part; writes the run folder
    (config.json, vocab.json, weights.safetensors, metrics.json, checkpoint, test.json)."""
    import torch

    from ..io import write_json
    from ..sentiment import HardmaxSentimentClassifier
    from ..sentiment.corpus import load_corpus
    from ..sentiment.evaluate import accuracy_report

    torch.set_num_threads(threads)
    est = HardmaxSentimentClassifier(
        d=d, layers=layers, epochs=epochs, max_len=max_len, min_freq=min_freq, min_log_odds=min_log_odds, lr=lr, embed_lr=embed_lr, lr_decay=lr_decay,
        word_dropout=word_dropout, weight_decay=weight_decay, tau=tau, alpha_min=alpha_min, alpha_init=alpha_init, embed_init_std=embed_init_std, patience=patience,
        aux_weight=aux_weight, negation_scope=negation_scope, bigrams=bigrams, random_state=seed, run_dir=str(run), verbose=progress,
        device=device,
    )
    est._check_params()
    corpus = load_corpus(data, split=split, seed=seed, tokenizer=est.tokenizer, cache_dir=run / "cache")
    write_json(run / "data.json", {"data": str(data), "split": split, "seed": seed,
                                   "n_train": len(corpus.train_idx), "n_test": len(corpus.test_idx)})
    tr = corpus.train_idx
    t0 = time.perf_counter()
    est.fit([corpus.reviews.texts[i] for i in tr], corpus.reviews.labels[tr], tokens=[corpus.tokens[i] for i in tr])
    seconds = time.perf_counter() - t0
    est.save(run)
    te = corpus.test_idx
    test = est._encode_tokens([corpus.tokens[i] for i in te], corpus.reviews.labels[te])
    rep = accuracy_report(est.model_, test)
    rep.update({"alpha": est.alpha_, "best_epoch": est.best_epoch_, "train_seconds": seconds, "stop_reason": est.stop_reason_})
    write_json(run / "test.json", rep)
    typer.echo(json.dumps(rep, indent=2))


@app.command()
def evaluate(
    run_arg: Optional[Path] = typer.Argument(None, metavar="RUN", help="A run folder written by `attndyn sentiment train`."),
    run_opt: Optional[Path] = typer.Option(None, "--run", help="The run folder (same as the RUN argument)."),
    data: Optional[Path] = typer.Option(None, help="Data to evaluate on (default: the run's data and split)."),
    out: Optional[Path] = typer.Option(None, help="Output folder for evaluation.json and figures (default: RUN)."),
    figures: bool = typer.Option(True, help="Draw Figures 8 and 10 and the accuracy curves."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    device: str = typer.Option("cpu", help=_DEVICE_HELP),
) -> None:
    """Softmax vs hardmax test accuracy and agreement, the leader table, clustering, Figures 8 and 10."""
    from ..io import write_json
    from ..sentiment.corpus import load_corpus
    from ..sentiment.evaluate import evaluate_model

    if (run_arg is None) == (run_opt is None):
        raise InputError("give the run folder once: attndyn sentiment evaluate RUN (or --run RUN)")
    run = run_arg or run_opt
    est = _estimator(run, device)
    info_path = run / "data.json"
    info = json.loads(info_path.read_text()) if info_path.is_file() else {"data": DEFAULT_DATA, "split": "random", "seed": 0}
    corpus = load_corpus(data or info["data"], split=info["split"], seed=info["seed"], tokenizer=est.tokenizer, cache_dir=run / "cache")
    te = corpus.test_idx
    test = est._encode_tokens([corpus.tokens[i] for i in te], corpus.reviews.labels[te])
    rep = evaluate_model(est, test)
    rep["split"] = info["split"]
    dest = out or run
    write_json(dest / "evaluation.json", rep)
    if figures:
        from ..sentiment import plots

        plots.figure8(rep["figure8"], dest / "figure8.png")
        plots.accuracy_curves(rep["figure8"], dest / "accuracy.png")
        plots.figure10(rep["figure10"], dest / "figure10.png")
    if as_json:
        typer.echo(json.dumps({k: v for k, v in rep.items() if k != "figure8"}, indent=2))
    else:
        typer.echo(f"d={rep['d']} alpha={rep['alpha']:.3f} test n={rep['n']}: softmax acc {rep['softmax_acc']:.4f}, "
                   f"hardmax acc {rep['hardmax_acc']:.4f}, agreement {rep['agreement']:.4f}, "
                   f"hardmax inference {rep['hardmax_seconds']:.1f}s")
        typer.echo(f"clusters per real token (last layer, rtol {rep['cluster_rtol']:g}): mean {rep['clusters_per_token_mean']:.3f}")
        typer.echo(f"leaders per review: mean {rep['leaders_mean']:.2f} std {rep['leaders_std']:.2f} min {rep['leaders_min']} "
                   f"max {rep['leaders_max']}; already leaders at layer 0: {rep['leaders_at_layer0_fraction']:.3f}")
        typer.echo("figure 10 words: " + ", ".join(f"{r['word']} ({r['count']})" for r in rep["figure10"]))
        typer.echo(f"written to {dest}")


@app.command()
def predict(
    text: Optional[str] = typer.Argument(None, help="A review (or use --file)."),
    model: Path = typer.Option(..., "--model", help="Run or model folder."),
    file: Optional[Path] = typer.Option(None, "--file", help="One text per line, or a CSV with a 'text' column."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON lines."),
    device: str = typer.Option("cpu", help=_DEVICE_HELP),
) -> None:
    """Label and probability of positive sentiment for each text."""
    texts = _texts_from(text, file)
    est = _estimator(model, device)
    proba = est.predict_proba(texts)[:, 1]
    for t, p in zip(texts, proba):
        label = est.classes_[int(p > 0.5)]
        label = label.item() if hasattr(label, "item") else label
        name = {1: "positive", 0: "negative"}.get(label, label) if not isinstance(label, str) else label
        if as_json:
            typer.echo(json.dumps({"text": t, "label": name, "probability_positive": float(p)}))
        else:
            typer.echo(f"{name}\t{p:.4f}\t{t[:70]}")


@app.command()
def explain(
    text: str = typer.Argument(..., help="A review."),
    model: Path = typer.Option(..., "--model", help="Run or model folder."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    figure: Optional[Path] = typer.Option(None, help="Draw Figure 9 (d = 2) to this PNG."),
    gif: Optional[Path] = typer.Option(None, help="Draw the animated Figure 9 (d = 2) to this GIF."),
    device: str = typer.Option("cpu", help=_DEVICE_HELP),
) -> None:
    """Label, probability, last-layer leaders with the words clustered around each, and each cluster's share of the decision."""
    from ..sentiment.explain import explain as run_explain

    est = _estimator(model, device)
    e = run_explain(est, text)
    if (figure or gif) and est.model_.config.d != 2:
        raise InputError(f"--figure/--gif draw the plane and need a d = 2 model; this one has d = {est.model_.config.d}")
    if figure or gif:
        from ..sentiment import plots

        data = plots.figure9_data(est, text)
        if figure:
            plots.figure9(data, figure)
        if gif:
            plots.figure9_gif(data, gif)
    if as_json:
        typer.echo(json.dumps(e.to_dict(), indent=2))
        return
    side = "positive" if e.decision_value > 0 else "negative"
    typer.echo(f"{side} (p positive = {e.probability:.3f}; H = {e.decision_value:+.3f}, bias {e.bias:+.3f}, alpha {e.alpha:.3f})")
    for c in e.clusters:
        typer.echo(f"  {', '.join(c.leaders):<20} share {c.share:+.2f}  ({c.size} {'word' if c.size == 1 else 'words'}: {', '.join(c.words[:12])}{' …' if len(c.words) > 12 else ''})")


@data_app.command("imdb")
def data_imdb(
    download: Path = typer.Option(..., "--download", help="Folder to download and extract aclImdb into."),
    url: str = typer.Option("https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz", help="Archive URL."),
) -> None:
    """Fetch the official IMDb archive (needs a network) and extract it."""
    from ..sentiment.data import download_imdb

    root = download_imdb(download, url=url, progress=sys.stderr.isatty())
    typer.echo(str(root))

"""``attndyn pretrained analyze | compare-imdb``: a real pretrained transformer read as attention dynamics.

Needs the optional extra (``pip install -e ".[pretrained]"``); without it every command ends with one
line saying so and exit status 2.
"""

from __future__ import annotations

import json
import numbers
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from .._errors import InputError
from ..sentiment._defaults import DEFAULT_DATA
from ._interrupt import on_interrupt

if TYPE_CHECKING:
    from ..pretrained._analyzer import PretrainedAnalysis

app = typer.Typer(
    help="Leaders, clusters and value spectra of a pretrained BERT-family model (default: MiniLM, "
    "offline; needs the \\[pretrained] extra).",
    no_args_is_help=True,
)

# Ginibre samples of the value-matrix baseline: at most this many (0.2 s each at d = 384: about 7 minutes).
MAX_GINIBRE = 2000


def _check_out(out: Path | None, flag: str = "--out") -> None:
    """An output folder that is a file, or lies under one, is refused before any work."""
    if out is None:
        return
    for p in (out, *out.parents):
        if p.exists() and not p.is_dir():
            where = "is a file" if p == out else f"lies under the file {str(p)!r}"
            raise InputError(f"{flag} {str(out)!r} {where}; give a folder (it is created if missing)")
        if p.exists():
            return


def _check_analyze(ginibre_samples: int, spectra: bool, out: Path | None, head: str | None) -> tuple[int, int] | None:
    """The options of ``analyze`` checked before any work; returns the parsed ``--head``."""
    if isinstance(ginibre_samples, int) and ginibre_samples < 0:
        raise InputError(f"--ginibre-samples {ginibre_samples}: give a non-negative integer")
    if ginibre_samples > 0 and not spectra:  # the default is 0: a positive number was given
        raise InputError(
            f"--ginibre-samples {ginibre_samples} samples the baseline of the value spectra, and --no-spectra skips "
            "the spectra; drop one of the two"
        )
    if ginibre_samples > MAX_GINIBRE and spectra:
        raise InputError(
            f"--ginibre-samples {ginibre_samples}: at most {MAX_GINIBRE} (about 0.2 s each at d = 384, so about "
            f"{0.2 * ginibre_samples / 3600:.3g} h); give fewer"
        )
    _check_out(out)
    return _parse_head(head)


def _parse_head(head: str | None) -> tuple[int, int] | None:
    if head is None:
        return None
    try:
        layer, h = (int(p) for p in head.split(","))
    except ValueError:
        raise InputError(f"--head {head!r}: give LAYER,HEAD as two integers, e.g. --head 2,0") from None
    return layer, h


@app.command()
def analyze(
    text: str = typer.Argument(..., help="The text to run through the model."),
    model: Path | None = typer.Option(
        None, "--model", help="A local BERT-family model folder (default: the packaged all-MiniLM-L6-v2)."
    ),
    json_: bool = typer.Option(False, "--json", help="Print one JSON object."),
    out: Path | None = typer.Option(None, "--out", help="Write analysis.json, config.json and the figures (PNG) here."),
    cluster_tol: float = typer.Option(
        0.5,
        "--cluster-tol",
        help="Distance between unit-normalized tokens under which they are one cluster (0.5: cosine >= 0.875).",
    ),
    spectra: bool = typer.Option(
        True,
        "--spectra/--no-spectra",
        help="Eigenvalues of the value matrices and Definitions 1-2 (about 3 s for MiniLM).",
    ),
    ginibre_samples: int = typer.Option(
        0,
        "--ginibre-samples",
        help="Also sample this many d x d real Ginibre matrices for the layers' baseline (0.2 s each at d = 384).",
    ),
    head: str | None = typer.Option(
        None, "--head", help="LAYER,HEAD of the idealized run (default: the first good-triple head)."
    ),
    idealized: bool = typer.Option(
        True,
        "--idealized/--no-idealized",
        help="Run the softmax paper's model with one real head's (Q, K, V) shared across depth.",
    ),
) -> None:
    r"""Leaders per layer and head, clusters against depth, value spectra and the idealized model's regime.

    Needs the \[pretrained] extra."""
    from ..pretrained import analyze as run_analysis

    idealized_head = _check_analyze(ginibre_samples, spectra, out, head)
    with on_interrupt(lambda: "interrupted before the analysis ended; nothing was written: rerun the same command"):
        result = run_analysis(
            text,
            model,
            cluster_tol=cluster_tol,
            with_spectra=spectra,
            ginibre_samples=ginibre_samples,
            idealized=idealized,
            idealized_head=idealized_head,
        )
    record = result.record()
    if out is not None:
        config = {
            "text": text,
            "model": str(model) if model else record["model"],
            "cluster_tol": cluster_tol,
            "spectra": spectra,
            "ginibre_samples": ginibre_samples,
            "head": head,
            "idealized": idealized,
        }
        _write_folder(out, result, record, config)
    typer.echo(json.dumps(record)) if json_ else _summary(record)


def _write_folder(out: Path, result: PretrainedAnalysis, record: dict, config: dict) -> None:
    """``out``/config.json (the options), analysis.json (``record``) and the PNG figures of the analysis."""
    from .._io import write_json
    from ..plotting import _pretrained as plots
    from ..plotting import save_figure

    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "config.json", config)
    write_json(out / "analysis.json", record)
    save_figure(plots.attention_layers(result), out / "attention_layers", formats=("png",))
    save_figure(plots.leader_counts(result), out / "leaders", formats=("png",))
    save_figure(plots.clusters_depth(result), out / "clusters_depth", formats=("png",))
    if result.spectra is not None:
        save_figure(plots.layer_eigenvalues(result.spectra), out / "eigenvalues_layers", formats=("png",))
        save_figure(plots.head_eigenvalues(result.spectra), out / "eigenvalues_heads", formats=("png",))


def _summary(r: dict) -> None:
    toks = r["tokens"]
    typer.echo(f"{r['model']}: {r['layers']} layers x {r['heads']} heads, width {r['width']}; {r['n_tokens']} tokens")
    typer.echo("leaders (tokens whose follow set is themselves in at least half the heads), per layer:")
    for p in r["leaders"]["per_layer"]:
        typer.echo(
            f"  layer {p['layer']}: {' '.join(p['words']) or '-'}   (in >= 1 head: "
            f"{' '.join(toks[i] for i in p['leaders'])})"
        )
    c = r["clusters"]
    typer.echo(f"clusters at tol {c['tol']} against depth: {c['clusters']}")
    typer.echo("mean cosine similarity: " + " ".join(f"{v:.2f}" for v in c["cosine_mean"]))
    typer.echo("effective rank: " + " ".join(f"{v:.1f}" for v in c["effective_rank"]))
    if r["spectra"] is not None:
        f = r["spectra"]["fractions"]
        typer.echo(
            f"value matrices with a real, positive, simple leading eigenvalue: layers W_V "
            f"{f['layers']['leading_real_positive_simple']:.2f}, heads W_O W_V {f['heads']['leading_real_positive_simple']:.2f}; "
            f"good triples: layers {f['layers']['good_triple']:.2f}, heads {f['heads']['good_triple']:.2f}"
        )
        for name, b in r["spectra"]["baseline"].items():
            typer.echo(f"  random baseline ({name}: {b['ensemble']}): {b['fraction']:.3f}")
    if r["idealized"] is not None:
        i = r["idealized"]
        typer.echo(
            f"idealized model, head ({i['layer']}, {i['head']}) in every layer from depth {i['start_depth']}: "
            f"regime {i['regime']}; {i['statement']}: "
            + ("holds" if i["holds"] else "does not hold" if i["holds"] is False else f"undecided: {i['undecided']}")
            + (f" (measured: {_measured(i['measured'])})" if i["measured"] else "")
        )


def _measured(values: dict) -> str:
    """``{"radius": np.float64(0.12345), "k": 3}`` as ``radius 0.1235, k 3``: plain numbers, as a person reads them."""
    return ", ".join(f"{k.replace('_', ' ')} {_plain(v)}" for k, v in values.items())


def _plain(v: object) -> str:
    item = getattr(v, "item", None)
    if callable(item) and getattr(v, "ndim", None) == 0:  # a numpy scalar: the Python number it holds
        v = item()
    if isinstance(v, bool) or v is None:
        return {True: "yes", False: "no", None: "none"}[v]
    if isinstance(v, numbers.Integral):
        return str(int(v))
    if isinstance(v, numbers.Real):
        return f"{float(v):.4g}"
    if isinstance(v, (list, tuple)):
        shown = [_plain(x) for x in v[:8]]
        return "[" + ", ".join(shown) + (", …" if len(v) > 8 else "") + "]"
    if isinstance(v, dict):
        return "{" + _measured(v) + "}"
    return str(v)


@app.command("compare-imdb")
def compare_imdb(
    sentiment_run: Path = typer.Option(..., "--sentiment-run", help="A run folder of `attndyn sentiment train`."),
    data: Path = typer.Option(Path(DEFAULT_DATA), "--data", help="imdb.csv(.gz) or an aclImdb folder."),
    reviews: int = typer.Option(1000, "--reviews", help="How many test reviews (the run's own test split)."),
    model: Path | None = typer.Option(None, "--model", help="A local BERT-family model folder (default: MiniLM)."),
    out: Path | None = typer.Option(None, "--out", help="Write comparison.json and the figure here."),
    json_: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar (standard error)."),
) -> None:
    r"""MiniLM's leader words beside the hardmax sentiment model's, on the same test reviews.

    Needs the \[pretrained] extra."""
    from .._io import write_json
    from ..pretrained._imdb import compare_on_run

    _check_out(out)
    comp = compare_on_run(sentiment_run, data, reviews=reviews, model=model, progress=progress)
    summary = comp.summary()
    if out is not None:
        from ..plotting import _pretrained as plots
        from ..plotting import save_figure

        out.mkdir(parents=True, exist_ok=True)
        write_json(out / "comparison.json", comp.record())
        save_figure(plots.imdb_comparison(comp.record()), out / "imdb_leaders", formats=("png", "svg"))
    if json_:
        typer.echo(json.dumps(summary))
        return
    for k, v in summary.items():
        typer.echo(f"{k}: {v}")


def register(root: typer.Typer) -> None:
    """Add the ``pretrained`` command group to the ``attndyn`` app."""
    root.add_typer(app, name="pretrained")

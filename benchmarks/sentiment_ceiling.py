"""Where the sentiment model's accuracy goes: the tokens, the recipe, and the dynamics, measured apart.

The hardmax model's decision is exactly a weighted mean of word values,
H = (1/n) sum_i u_i <v, z^0_{w_i}> + b with influences u_i >= 0 that sum to n
(:mod:`attndyn.sentiment._attribution`). Three parts, each a row of docs/sentiment-results.md's
"Where the accuracy goes":

- ``text``: logistic regression on exactly the tokens the model sees (its vocabulary filters, phrase
  tokens and length cut), as the mean bag of words (every u_i = 1) and as TF-IDF; beside it TF-IDF of
  words and pairs of the full cleaned text (the linear baseline of issue 30). What the text side allows.
- ``baseline``: the linear baselines of ``text`` (TF-IDF of the full text; TF-IDF of the model's tokens) on the
  split of each seed of ``--seeds``, so that the models are compared with the baseline seed by seed.
- ``control``: the model with ``layers=0`` -- no attention, the decoder reads the mean of the word
  vectors -- trained by the recipe for d (its optimiser, word dropout, sign prior, early stopping) with
  the estimator itself; per setting changed (``--changes``), per seed. What the recipe costs.
- ``dynamics``: the word vectors and decoder of a trained ``layers=0`` model put through the model's K
  hardmax layers at several alpha (no training): test accuracy and clusters per real word; and at alpha = 1
  through other dynamics: scores <A z_i, z_j> with A = I + c uu^T (u the decision's direction), h heads
  on blocks of coordinates, an attention sink (one more token of value 0 that weak words follow) and registers
  (R tokens at graded values that words join by their own value's level). What the clustering itself costs, with the
  word vectors held fixed.
- ``registers``: the control's vectors with R registers for the R, c and L of REGISTER_SWEEP (up to 63
  registers): how near the control's accuracy the registers come as their levels get finer, and at how many
  clusters per word.

    python benchmarks/sentiment_ceiling.py text --json docs/results/sentiment_ceiling.json
    python benchmarks/sentiment_ceiling.py baseline --d 16 --seeds 0 1 2 --json docs/results/sentiment_ceiling.json
    python benchmarks/sentiment_ceiling.py control --d 16 --seeds 0 1 2 --json docs/results/sentiment_ceiling.json
    python benchmarks/sentiment_ceiling.py control --d 16 --seeds 0 1 2 --changes prior_weight=0 \
        --json docs/results/sentiment_ceiling.json
    python benchmarks/sentiment_ceiling.py dynamics --d 16 --seeds 0 --json docs/results/sentiment_ceiling.json
    python benchmarks/sentiment_ceiling.py registers --d 16 --seeds 0 1 2 --changes prior_margin=0.1 \
        --json docs/results/sentiment_ceiling.json
    python benchmarks/sentiment_ceiling.py summarize --json docs/results/sentiment_ceiling.json  # summaries only

Each part adds its entries to the JSON (other entries are kept). The split is the seeded 70/30 split of the
seed (35,000 / 15,000), the vocabulary is built from the training part as the estimator builds it, C of the
logistic regression is chosen on a seeded tenth of the training part. Training is pinned
(:func:`attndyn.sentiment.pin_kernels`) and on one thread. Not part of the test suite (minutes per entry).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from attndyn.sentiment import pin_kernels
from attndyn.sentiment._checklist import CATEGORIES

#: name -> (d of the recipe, text settings changed on top of it).
VARIANTS: dict[str, tuple[int, dict]] = {
    "d2-recipe": (2, {}),
    "d16-recipe": (16, {}),
    "d16-len512": (16, {"max_len": 512}),
    "d16-len1024": (16, {"max_len": 1024}),
    "d16-no-filter": (16, {"min_log_odds": 0.0}),
    "d16-no-filter-len1024": (16, {"min_log_odds": 0.0, "max_len": 1024}),
    "d16-bigrams2-len1024": (16, {"bigrams": 2, "max_len": 1024}),
}
ALPHAS = (0.05, 0.1, 0.2, 0.5, 1.0)
#: (c, L) of the attention-sink probe of :func:`other_dynamics`.
SINKS = ((0.2, 2.0), (0.4, 0.5), (0.4, 2.0), (0.4, 8.0), (1.0, 2.0))
#: (R, c, L) of the register probe of :func:`other_dynamics` (benchmarks/sentiment_registers.py trains them).
REGISTERS = ((3, 2.0, 8.0), (5, 2.0, 8.0), (5, 3.0, 8.0), (5, 3.0, 16.0), (7, 3.0, 8.0))
#: (R, c, L) of the ``registers`` part: more registers (finer levels) and larger shifts (more nearly linear levels).
REGISTER_SWEEP = ((5, 3.0, 8.0), (15, 5.0, 8.0), (31, 5.0, 16.0), (31, 8.0, 16.0), (63, 8.0, 16.0))


def _text_config(d: int, changes: dict) -> Any:
    from attndyn.sentiment._recipes import recipe
    from attndyn.sentiment._text import TextConfig

    fields = set(TextConfig.__dataclass_fields__)
    return TextConfig(**{k: v for k, v in {**recipe(d), **changes}.items() if k in fields})


def _corpus(data: str, text: Any, seed: int, cache: Path) -> Any:
    from attndyn.sentiment._corpus import load_corpus

    return load_corpus(data, split="random", seed=seed, tokenizer=text.tokenizer(), cache_dir=cache)


def _bags(rows: list[list[int]], vocab_size: int, mean: bool) -> Any:
    from scipy.sparse import csr_matrix

    indptr = np.cumsum([0] + [len(r) for r in rows])
    data = np.concatenate([np.full(len(r), 1.0 / len(r) if mean else 1.0) for r in rows])
    m = csr_matrix((data, np.concatenate(rows), indptr), shape=(len(rows), vocab_size))
    m.sum_duplicates()
    return m


def _fit(Xtr: Any, ytr: np.ndarray, Xte: Any, yte: np.ndarray, seed: int = 0) -> dict:
    """Logistic regression with C chosen on a seeded tenth of the training rows; test accuracy at that C."""
    from sklearn.linear_model import LogisticRegression

    perm = np.random.default_rng(seed).permutation(Xtr.shape[0])
    n_val = Xtr.shape[0] // 10
    va, fi = perm[:n_val], perm[n_val:]
    scores = {}
    for C in (0.25, 1.0, 4.0, 16.0, 64.0, 256.0, 1024.0):
        clf = LogisticRegression(C=C, max_iter=3000).fit(Xtr[fi], ytr[fi])
        scores[C] = float(clf.score(Xtr[va], ytr[va]))
    C = max(scores, key=lambda c: (scores[c], -c))
    clf = LogisticRegression(C=C, max_iter=3000).fit(Xtr, ytr)
    return {"C": C, "val_acc": scores[C], "test_acc": float(clf.score(Xte, yte))}


def text_variant(name: str, d: int, changes: dict, data: str, cache: Path, seed: int = 0) -> dict:
    """Linear models on the tokens the model of ``d`` sees with ``changes`` to its text settings (the split and
    the vocabulary of ``seed``)."""
    from sklearn.feature_extraction.text import TfidfTransformer

    from attndyn.sentiment._estimator import _vocabulary

    text = _text_config(d, changes)
    t0 = time.perf_counter()
    corpus = _corpus(data, text, seed, cache)
    y = np.asarray(corpus.reviews.labels)
    tr, te = corpus.train_idx, corpus.test_idx
    vocab = _vocabulary([corpus.tokens[i] for i in tr], y[tr], text)
    known = [vocab.ids(t) for t in corpus.tokens]
    rows = [r[: text.max_len] for r in known]
    lengths = np.array([len(r) for r in known])
    out: dict[str, Any] = {
        "d": d,
        "changes": changes,
        "vocabulary": len(vocab),
        "known_tokens_median": float(np.median(lengths)),
        "cut_fraction": float(np.mean(lengths > text.max_len)),
    }
    counts = _bags(rows, len(vocab), mean=False)
    tfidf = TfidfTransformer(sublinear_tf=True).fit(counts[tr])
    for key, X in (("mean_bag_lr", _bags(rows, len(vocab), mean=True)), ("tfidf_lr", tfidf.transform(counts))):
        out[key] = _fit(X[tr], y[tr], X[te], y[te])
        print(f"{name}: {key} {out[key]['test_acc']:.4f} (C={out[key]['C']})", flush=True)
    out["seconds"] = time.perf_counter() - t0
    return out


def reference(data: str, seed: int = 0) -> dict:
    """TF-IDF of words and pairs of the full cleaned text, logistic regression (the linear baseline), on the
    70/30 split of ``seed``."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    from attndyn.sentiment._corpus import split_indices
    from attndyn.sentiment._data import read_reviews
    from attndyn.sentiment._text import clean

    reviews = read_reviews(data)
    tr, te = split_indices(reviews, "random", seed)
    y = np.asarray(reviews.labels)
    vec = TfidfVectorizer(preprocessor=clean, ngram_range=(1, 2), min_df=2, sublinear_tf=True, max_features=200_000)
    Xtr = vec.fit_transform([reviews.texts[i] for i in tr])
    out = _fit(Xtr, y[tr], vec.transform([reviews.texts[i] for i in te]), y[te])
    print(f"reference TF-IDF (1,2)-grams, full text, seed {seed}: {out['test_acc']:.4f} (C={out['C']})", flush=True)
    return out


def _label(changes: dict) -> str:
    """``recipe`` or ``name=value,...`` with no dot (the docs' result markers split keys at dots)."""
    return ",".join(f"{k}={v}" for k, v in sorted(changes.items())).replace(".", "_") or "recipe"


def _summary(entries: dict, value: str) -> dict:
    """Mean, min, max and n of ``value`` (a key, or a path of keys split at "/") over the seeds of each
    ``d<d>/<label>`` (keys ``d<d>/<label>/seed<s>``); seeds without it are left out."""
    groups: dict[str, list[float]] = {}
    for key, entry in entries.items():
        for part in value.split("/"):
            entry = entry.get(part) if isinstance(entry, dict) else None
        if entry is not None:
            groups.setdefault(key.rsplit("/", 1)[0], []).append(entry)
    return {
        g: {"mean": float(np.mean(v)), "min": min(v), "max": max(v), "n": len(v)} for g, v in sorted(groups.items())
    }


def _fit_control(d: int, seed: int, changes: dict, data: str, cache: Path) -> tuple[Any, Any, dict]:
    """The ``layers=0`` estimator of the recipe for ``d`` (with ``changes``), fitted on the seed's training split;
    the fitted estimator, the encoded test split and its entry."""
    import torch

    from attndyn.sentiment import HardmaxSentimentClassifier
    from attndyn.sentiment._evaluate import accuracy_report

    torch.set_num_threads(1)
    params = {"layers": 0, **changes}
    corpus = _corpus(data, _text_config(d, changes), seed, cache)
    y = np.asarray(corpus.reviews.labels)
    tr, te = corpus.train_idx, corpus.test_idx
    est = HardmaxSentimentClassifier(d=d, random_state=seed, **params)
    t0 = time.perf_counter()
    est.fit([corpus.reviews.texts[i] for i in tr], y[tr], tokens=[corpus.tokens[i] for i in tr])
    test = est.encode(y=y[te], tokens=[corpus.tokens[i] for i in te])
    rep = accuracy_report(est.model_, test)
    entry = {
        "d": d,
        "seed": seed,
        "changes": changes,
        "hardmax_accuracy": rep["hardmax_acc"],
        "best_epoch": est.best_epoch_,
        "epochs_run": len(est.history_),
        "train_seconds": time.perf_counter() - t0,
    }
    print(f"control d={d} seed={seed} {_label(changes)}: {rep['hardmax_acc']:.4f}", flush=True)
    return est, test, entry


def dynamics(est: Any, test: Any, layers: int) -> dict:
    """The fitted ``layers=0`` model's word vectors and decoder through ``layers`` hardmax layers at each alpha of
    :data:`ALPHAS`: test accuracy and clusters per real word (no training)."""
    import torch

    from attndyn.sentiment import CLUSTER_RTOL
    from attndyn.sentiment._evaluate import accuracy_report, hardmax_statistics
    from attndyn.sentiment._model import SentimentConfig, SentimentTransformer

    out = {}
    for alpha in ALPHAS:
        cfg = SentimentConfig(
            vocab_size=est.model_.config.vocab_size,
            d=est.model_.config.d,
            layers=layers,
            alpha_init=alpha,
            alpha_min=alpha / 2,
        )
        model = SentimentTransformer(cfg)
        with torch.no_grad():
            model.embed.weight.copy_(est.model_.embed.weight)
            model.decoder.load_state_dict(est.model_.decoder.state_dict())
            model.alpha_raw.fill_(_raw(alpha, alpha / 2))
        acc = accuracy_report(model, test)["hardmax_acc"]
        st = hardmax_statistics(model, test, est.vocab_.words, rtol=CLUSTER_RTOL)
        out[f"alpha={alpha}".replace(".", "_")] = {  # no dot: the docs' result markers split keys at dots
            "hardmax_accuracy": acc,
            "clusters_per_word": st["clusters_per_token_mean"],
            "leaders_per_review": st["leaders_mean"],
        }
        print(f"  alpha {alpha}: {acc:.4f}, clusters per word {st['clusters_per_token_mean']:.3f}", flush=True)
    return out


def other_dynamics(est: Any, test: Any, layers: int, alpha: float = 1.0) -> dict:
    """The same fixed word vectors through two other hardmax dynamics at ``alpha`` (no training): scores
    <A z_i, z_j> with A = I + c uu^T (u = v/|v|: the decision's direction weighted c times more), and ``h`` heads
    (the d coordinates cut into h blocks, each running its own hardmax; the decision is linear, so it sums over
    the heads). Test accuracy of each."""
    import torch

    from attndyn import SaveAt, hardmax

    z0, counts, w, b, y, e = _fixed_vectors(est, test)
    c = counts.to(torch.float64)

    def accuracy(zK: Any) -> float:
        H = ((zK * c[..., None]).sum(1) / c.sum(1, keepdim=True)) @ w + b
        return float(((H > 0).numpy() == y).mean())

    def run(z: Any, A: Any = None) -> Any:
        return hardmax(
            z, alpha=alpha, layers=layers, A=A, mask=counts > 0, save=SaveAt(every=None), check_hypotheses=False
        ).ys[-1]

    u = w / w.norm()
    out: dict[str, float] = {"layer0": accuracy(z0)}
    for cw in (1.0, 10.0, 100.0):
        out[f"A=I+{cw:g}uu"] = accuracy(run(z0, torch.eye(len(w), dtype=torch.float64) + cw * torch.outer(u, u)))
    for h in (2, 4, 16):
        if h <= len(w):
            zK = torch.empty_like(z0)
            for block in torch.arange(len(w)).chunk(h):
                zK[..., block] = run(z0[..., block].contiguous())
            out[f"heads={h}"] = accuracy(zK)
    # An attention sink: one more token s = L e in every review (e a unit vector orthogonal to v, so the sink's
    # value is 0) and c e added to every word (their values unchanged), so that a word whose best score is weak
    # follows the sink and votes 0 instead of joining the strongest word of its sign.
    B = z0.shape[0]
    cs = torch.cat([c, torch.ones(B, 1, dtype=torch.float64)], dim=1)
    for shift, L in SINKS:
        zs = torch.cat([z0 + shift * e * (counts[..., None] > 0), (L * e).expand(B, 1, len(w))], dim=1)
        zK = hardmax(zs, alpha=alpha, layers=layers, mask=cs > 0, save=SaveAt(every=None), check_hypotheses=False)
        H = ((zK.ys[-1] * cs[..., None]).sum(1) / cs.sum(1, keepdim=True)) @ w + b
        out[f"sink_c={shift:g}_L={L:g}".replace(".", "_")] = float(((H > 0).numpy() == y).mean())
    out.update(register_probe(z0, counts, w, b, y, e, layers, REGISTERS, alpha))
    print("  other dynamics:", {k: round(v, 4) for k, v in out.items()}, flush=True)
    return out


def register_probe(
    z0: Any, counts: Any, w: Any, b: float, y: Any, e: Any, layers: int, specs: Any, alpha: float = 1.0, est: Any = None
) -> dict:
    """Registers on fixed word vectors: R tokens r_k = L (cos t_k u + sin t_k e), t_k = k pi/(R + 1) (u = w/|w|,
    e a unit vector orthogonal to u), one more in every review, and every word shifted by c e; the decoder reads
    the words only. A word joins the register of its value's level unless another word outscores it. Test
    accuracy and clusters per real word per (R, c, L) of ``specs``; with the fitted ``est``, also the behavioural
    suites (tuning and held-out) of the register model (``<key>_checklist``)."""
    from attndyn.sentiment import distinct_words
    from attndyn.sentiment._checklist import score

    B, n, d = z0.shape
    out: dict[str, Any] = {}
    for R, shift, L in specs:
        traj, H = _register_run(z0, counts, w, b, e, layers, R, shift, L, alpha)
        key = f"registers_R={R}_c={shift:g}_L={L:g}".replace(".", "_")
        out[key] = float(((H > 0).numpy() == y).mean())
        out[key + "_clusters_per_word"] = _clusters_per_word(traj.ys[0][:, :n], traj.ys[-1][:, :n], counts)
        if est is not None:

            def predict(texts: list[str], R=R, shift=shift, L=L) -> Any:
                enc = est.encode(texts)
                uid, c = distinct_words(enc.ids, enc.mask)
                z = est.model_.embed.weight.detach().to(z0.dtype)[uid]
                return (_register_run(z, c, w, b, e, layers, R, shift, L, alpha)[1] > 0).numpy().astype(int)

            out[key + "_checklist"] = {
                suite: {cat: r["accuracy"] for cat, r in score(predict, suite=suite).items()}
                for suite in ("tuning", "heldout")
            }
        print(f"  registers R={R} c={shift:g} L={L:g}: {out[key]:.4f} at {out[key + '_clusters_per_word']:.3f}"
              " clusters per word", out.get(key + "_checklist", ""), flush=True)  # fmt: skip
    return out


def _register_run(
    z0: Any, counts: Any, w: Any, b: float, e: Any, layers: int, R: int, shift: float, L: float, alpha: float
) -> tuple:
    """The hardmax run of the distinct words ``z0`` (B, U, d) with R registers appended and every word shifted
    by ``shift`` e, and the decision (B,) read from the words' final mean weighted by ``counts``."""
    import math

    import torch

    from attndyn import SaveAt, hardmax

    B, n, d = z0.shape
    t = torch.tensor([math.pi * (k + 1) / (R + 1) for k in range(R)], dtype=torch.float64)
    regs = L * (torch.cos(t)[:, None] * (w / w.norm()) + torch.sin(t)[:, None] * e)
    zs = torch.cat([z0 + shift * e * (counts[..., None] > 0), regs.expand(B, R, d)], dim=1)
    ms = torch.cat([counts > 0, torch.ones(B, R, dtype=torch.bool)], dim=1)
    traj = hardmax(zs, alpha=alpha, layers=layers, mask=ms, save=SaveAt(every=None), check_hypotheses=False)
    c = counts.to(torch.float64)
    H = ((traj.ys[-1][:, :n] * c[..., None]).sum(1) / c.sum(1, keepdim=True)) @ w + b
    return traj, H


def _fixed_vectors(est: Any, test: Any) -> tuple:
    """The fitted model's distinct word vectors per review (float64), their counts, the decoder (w, b), the
    labels and the unit vector e orthogonal to w (seeded) of the sink and register probes."""
    import torch

    from attndyn.sentiment import distinct_words

    uid, counts = distinct_words(test.ids, test.mask)
    z0 = est.model_.embed.weight.detach().to(torch.float64)[uid]
    w = est.model_.decoder.weight.detach().to(torch.float64)[0]
    b = float(est.model_.decoder.bias.detach()[0])
    u = w / w.norm()
    g = torch.Generator().manual_seed(0)
    e = torch.randn(len(w), dtype=torch.float64, generator=g)
    e = e - (e @ u) * u
    return z0, counts, w, b, test.labels.numpy(), e / e.norm()


def _clusters_per_word(z0: Any, zK: Any, counts: Any) -> float:
    """Clusters per real token at the last layer, as docs/sentiment.md counts them (single linkage at
    ``CLUSTER_RTOL`` x the review's largest |coordinate| at layer 0), averaged over reviews."""
    from attndyn.analysis import cluster_tolerance
    from attndyn.analysis import clusters as find_clusters
    from attndyn.sentiment._explain import CLUSTER_FLOOR, CLUSTER_RTOL

    ratios = []
    for b in range(z0.shape[0]):
        real = np.flatnonzero((counts[b] > 0).numpy())
        tol = cluster_tolerance(z0[b, real].numpy(), CLUSTER_RTOL, floor=CLUSTER_FLOOR)
        ratios.append(len(find_clusters(zK[b, real].numpy(), tol=tol)) / float(counts[b].sum()))
    return float(np.mean(ratios))


def _raw(alpha: float, alpha_min: float) -> float:
    import math

    y = alpha - alpha_min
    return y + math.log(-math.expm1(-y))


def _merge(path: Path, key: str, entries: dict, command: str) -> None:
    from attndyn._io import write_json
    from attndyn.sentiment import kernel_paths

    res = json.loads(path.read_text()) if path.is_file() else {"script": "benchmarks/sentiment_ceiling.py"}
    part = res.setdefault(key, {})
    for name, entry in entries.items():  # a seed probed again with other specs keeps the specs probed before
        part[name] = {**part[name], **entry} if isinstance(part.get(name), dict) else entry
    res[key] = {k.replace(".", "_"): v for k, v in res[key].items()}  # entries written before labels lost their dots
    if key == "control":
        res["control_summary"] = _summary(res[key], "hardmax_accuracy")
    if key == "dynamics":
        res["dynamics_summary"] = _summary(res[key], "layer0_accuracy")
        res["registers_summary"] = {  # the register probes over the seeds of each setting
            f"R={R}_c={c:g}_L={L:g}".replace(".", "_"): _summary(
                res[key], f"at_alpha_1/registers_R={R}_c={c:g}_L={L:g}".replace(".", "_")
            )
            for R, c, L in REGISTERS
        }
    if key == "baseline":
        res["baseline_summary"] = {
            value: _summary(res[key], f"{value}/test_acc") for value in ("reference_tfidf_full_text", "tfidf_lr")
        }
    if key == "registers":
        res["registers_control_summary"] = _summary(res[key], "layer0_accuracy")  # the controls they start from
        res["registers_sweep_summary"] = {  # accuracy and clusters per word over the seeds of each setting
            spec: {
                value: _summary(res[key], f"registers_{spec}{suffix}")
                for value, suffix in (
                    ("accuracy", ""),
                    ("clusters_per_word", "_clusters_per_word"),
                    *(
                        (f"{suite}_{cat}", f"_checklist/{suite}/{cat}")
                        for suite in ("tuning", "heldout")
                        for cat in CATEGORIES
                    ),
                )
            }
            for spec in _probed_specs(res[key])
        }
    res.setdefault("commands", {})[key] = sorted({*res.get("commands", {}).get(key, []), command})
    res["processor"] = kernel_paths().processor
    res.setdefault("load_1min", {})[key] = os.getloadavg()[0]
    write_json(path, res)


def _probed_specs(entries: dict) -> list[str]:
    """The ``R=.._c=.._L=..`` labels of every register spec some seed's entry holds, in the order of R, c, L."""
    names = {
        k[len("registers_") :]
        for entry in entries.values()
        for k in entry
        if k.startswith("registers_R=") and not k.endswith(("_clusters_per_word", "_checklist"))
    }

    def order(name: str) -> tuple[float, ...]:
        return tuple(
            float(part.split("=")[1].replace("_", "."))
            for part in name.replace("_c=", " c=").replace("_L=", " L=").split()
        )

    return sorted(names, key=order)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("part", choices=["text", "baseline", "control", "dynamics", "registers", "summarize"])
    ap.add_argument("--data", default="../shared/data/imdb/imdb.csv.gz")
    ap.add_argument("--cache", type=Path, default=Path("runs/ceiling-cache"), help="tokenized corpora (reused)")
    ap.add_argument("--d", type=int, default=16)
    ap.add_argument("--seeds", type=int, nargs="*", default=[0])
    ap.add_argument("--changes", nargs="*", default=[], help="settings on top of the recipe, NAME=VALUE")
    ap.add_argument("--layers", type=int, default=8, help="hardmax layers of the dynamics part")
    ap.add_argument(
        "--specs", nargs="*", default=None, help="the registers part's R,c,L triples (default: REGISTER_SWEEP)"
    )
    ap.add_argument("--json", type=Path, required=True)
    a = ap.parse_args()
    pin_kernels()
    command = "python " + " ".join(["benchmarks/sentiment_ceiling.py", *sys.argv[1:]])
    changes = {k: json.loads(v) for k, v in (c.split("=", 1) for c in a.changes)}
    if a.part == "summarize":  # the summaries again from the entries the file holds (nothing is run)
        for key in ("baseline", "control", "dynamics", "registers"):
            if a.json.is_file() and key in json.loads(a.json.read_text()):
                _merge(a.json, key, {}, command)
        return
    if a.part == "text":
        entries = {"reference_tfidf_full_text": reference(a.data)}
        entries.update({name: text_variant(name, *VARIANTS[name], a.data, a.cache) for name in VARIANTS})
        _merge(a.json, "text", entries, command)
        return
    if a.part == "baseline":  # the linear baselines on the split of each seed
        for seed in a.seeds:
            name = f"d{a.d}-recipe"
            entry = {"reference_tfidf_full_text": reference(a.data, seed)}
            entry["tfidf_lr"] = text_variant(name, a.d, changes, a.data, a.cache, seed)["tfidf_lr"]
            _merge(a.json, "baseline", {f"d{a.d}/{_label(changes)}/seed{seed}": entry}, command)
        return
    for seed in a.seeds:
        est, test, entry = _fit_control(a.d, seed, changes, a.data, a.cache)
        key = f"d{a.d}/{_label(changes)}/seed{seed}"
        if a.part == "dynamics":
            entry["layer0_accuracy"] = entry.pop("hardmax_accuracy")
            entry["layers"] = a.layers
            entry["alphas"] = dynamics(est, test, a.layers)
            entry["at_alpha_1"] = other_dynamics(est, test, a.layers)
        if a.part == "registers":
            entry["layer0_accuracy"] = entry.pop("hardmax_accuracy")
            specs = REGISTER_SWEEP if a.specs is None else [tuple(float(x) for x in t.split(",")) for t in a.specs]
            specs = [(int(R), c, L) for R, c, L in specs]
            entry.update(register_probe(*_fixed_vectors(est, test), a.layers, specs, est=est))
        _merge(a.json, a.part, {key: entry}, command)


if __name__ == "__main__":
    main()

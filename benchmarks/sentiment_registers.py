"""Learned register tokens in the d = 16 sentiment model, trained end to end (issue 30, item 3).

The fixed-vector probe of ``sentiment_ceiling.py dynamics`` put one more token s = L e in every review (e a unit
vector orthogonal to the decision's direction u = v/|v|, so that its value <v, s> is 0) and shifted every word by
c e: a word whose best score is weak then follows this sink and votes 0 instead of joining the strongest word of
its sign. Registers generalise it: R tokens on the half circle of radius L in the plane of u and e,
r_k = L (cos t_k u + sin t_k e), t_k = k pi/(R + 1), k = 1..R (R = 1: the sink). A word z = a u + c e + w (w the
rest) scores L (a cos t + c sin t) against the register at angle t, whose best angle is the direction of (a, c):
a word that no other word outscores joins the register of its own value's level and then votes with that
register's value L cos t_k, a saturating function of its own value a (about (L/c) a for |a| < c). The clusters
are then "the words of one sentiment level", and the decision a vote of R levels and the strong words that lead
themselves, weighted by their clusters' sizes.

Here the registers are parameters of the model, trained with the word vectors by the d = 16 recipe
(:func:`register_model`): every layer runs on the review's tokens and the registers (the core's hardmax at
inference, :func:`attndyn.hardmax`), and the decoder reads the mean of the review's own tokens, so the decision is
still exactly a sum, (1/n) sum_i u_i <v, z_i^0> over the words plus the registers' shares. Initialised as above:
e drawn from a fixed seed and made orthogonal to the initial decoder, the words shifted by ``--shift`` e, the
registers at length ``--length``.

    python benchmarks/sentiment_registers.py --registers 1 --shift 0.5 --length 2 --seeds 0 1 2 \
        --json docs/results/sentiment_registers.json
    python benchmarks/sentiment_registers.py --registers 5 --shift 2 --length 8 --seeds 0 1 2 \
        --json docs/results/sentiment_registers.json

Per seed: the hardmax test accuracy on the seed's 70/30 split (the split, vocabulary and recipe of
``sentiment_seeds.py``, pinned, one thread), the validation accuracy per epoch, the best epoch and the
registers' final lengths; beside each, the recipe's own seed from docs/results/sentiment_seeds.json. Not part of
the test suite (about 15 CPU-minutes a seed).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from attndyn.sentiment import pin_kernels

SEED_E = 12345  # the seed of the direction e


def register_model(R: int, shift: float, length: float) -> Any:
    """A :class:`~attndyn.sentiment.SentimentTransformer` with ``R`` learned register tokens appended to every
    review (defined once torch is imported, after :func:`pin_kernels`)."""
    import math

    import torch
    from torch import nn

    from attndyn import SaveAt, hardmax
    from attndyn.sentiment import SentimentTransformer, distinct_words

    class RegisterTransformer(SentimentTransformer):
        """The sentiment model with R learned tokens appended to every review: they attend and are attended like
        words, and the decoder does not read them."""

        def __init__(self, config: Any, *, generator: Any = None) -> None:
            super().__init__(config, generator=generator)
            e = torch.randn(config.d, generator=torch.Generator().manual_seed(SEED_E))
            u = self.decoder.weight.detach()[0]
            u = u / u.norm()
            e = e - (e @ u) * u
            e = e / e.norm()
            t = torch.tensor([math.pi * (k + 1) / (R + 1) for k in range(R)])
            with torch.no_grad():
                self.embed.weight[1:] += shift * e
            self.registers = nn.Parameter(length * (torch.cos(t)[:, None] * u + torch.sin(t)[:, None] * e))

        def _with_registers(self, z: Any, mask: Any) -> tuple[Any, Any]:
            B, _, d = z.shape
            z = torch.cat([z, self.registers.to(z).expand(B, R, d)], dim=1)
            return z, torch.cat([mask, torch.ones(B, R, dtype=mask.dtype, device=mask.device)], dim=1)

        def layers_softmax(self, ids: Any, mask: Any, *, tau: float | None = None) -> Any:
            tau = self.config.tau if tau is None else tau
            z = self.hook_embed(self.embed(ids))
            n = z.shape[1]
            yield z
            z, m = self._with_registers(z, mask)
            for _ in range(self.config.layers):
                z = self.attention_layer(z, m, tau)
                yield z[:, :n]

        @torch.no_grad()
        def hardmax_run(self, ids: Any, mask: Any, *, every: int | None = None, follow: bool = False) -> Any:
            """Logits and the trajectory of the words and the registers (the registers are the last R rows)."""
            uid, counts = distinct_words(ids.cpu(), mask.cpu())
            z0 = self.embed.weight.detach().to("cpu", torch.float64)[uid]
            z0, m = self._with_registers(z0, counts > 0)
            traj = hardmax(
                z0,
                alpha=float(self.alpha.detach()),
                layers=self.config.layers,
                mask=m,
                save=SaveAt(every=every, follow=follow),
                check_hypotheses=False,
            )
            return self.decode(traj.ys[-1][:, :-R], counts), traj

        def hardmax_logits(self, ids: Any, mask: Any) -> Any:
            return self.hardmax_run(ids, mask)[0]

    return RegisterTransformer


def clusters_per_word(model: Any, data: Any, R: int) -> float:
    """The docs' statistic (:func:`attndyn.sentiment._evaluate.hardmax_statistics`) on the words' last-layer tokens,
    registers excluded: clusters of a review's real tokens (single linkage at ``CLUSTER_RTOL`` x the review's largest
    |coordinate| at layer 0) per real token, averaged over reviews."""
    import numpy as np

    from attndyn.analysis import cluster_tolerance
    from attndyn.analysis import clusters as find_clusters
    from attndyn.sentiment import distinct_words
    from attndyn.sentiment._explain import CLUSTER_FLOOR, CLUSTER_RTOL

    ratios = []
    for lo in range(0, len(data.labels), 512):
        ids, mask = data.ids[lo : lo + 512], data.mask[lo : lo + 512]
        _, counts = distinct_words(ids, mask)
        _, traj = model.hardmax_run(ids, mask)
        for b in range(len(ids)):
            real = np.flatnonzero((counts[b] > 0).numpy())
            z0, zK = traj.ys[0, b, real].numpy(), traj.ys[-1, b, real].numpy()
            tol = cluster_tolerance(z0, CLUSTER_RTOL, floor=CLUSTER_FLOOR)
            ratios.append(len(find_clusters(zK, tol=tol)) / float(counts[b].sum()))
    return float(np.mean(ratios))


def run_seed(seed: int, R: int, shift: float, length: float, data: str, cache: Path) -> dict:
    import numpy as np
    import torch

    from attndyn.sentiment import HardmaxSentimentClassifier
    from attndyn.sentiment._evaluate import accuracy_report

    sys.path.insert(0, str(Path(__file__).parent))
    from sentiment_ceiling import _corpus, _text_config

    torch.set_num_threads(1)

    class RegisterClassifier(HardmaxSentimentClassifier):
        model_class = register_model(R, shift, length)

    corpus = _corpus(data, _text_config(16, {}), seed, cache)
    y = np.asarray(corpus.reviews.labels)
    tr, te = corpus.train_idx, corpus.test_idx
    est = RegisterClassifier(d=16, random_state=seed)
    t0 = time.perf_counter()
    est.fit([corpus.reviews.texts[i] for i in tr], y[tr], tokens=[corpus.tokens[i] for i in tr])
    seconds = time.perf_counter() - t0
    test = est.encode(y=y[te], tokens=[corpus.tokens[i] for i in te])
    rep = accuracy_report(est.model_, test)
    entry = {
        "seed": seed,
        "hardmax_accuracy": rep["hardmax_acc"],
        "softmax_accuracy": rep["softmax_acc"],
        "clusters_per_word": clusters_per_word(est.model_, test, R),
        "best_epoch": est.best_epoch_,
        "val_hardmax_accuracy": [h["val_hardmax_acc"] for h in est.history_],
        "register_lengths": est.model_.registers.detach().norm(dim=1).tolist(),
        "train_seconds": seconds,
    }
    print(f"registers R={R} seed {seed}: {rep['hardmax_acc']:.4f}, {entry['clusters_per_word']:.3f} clusters per word")
    return entry


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--registers", type=int, default=1, help="R: how many register tokens (1: a sink of value 0)")
    ap.add_argument("--shift", type=float, default=0.5, help="c: every word's initial shift along e")
    ap.add_argument("--length", type=float, default=2.0, help="L: the registers' initial length")
    ap.add_argument("--data", default="../shared/data/imdb/imdb.csv.gz")
    ap.add_argument("--cache", type=Path, default=Path("runs/ceiling-cache"), help="tokenized corpora (reused)")
    ap.add_argument("--recipe", type=Path, default=Path("docs/results/sentiment_seeds.json"))
    ap.add_argument("--json", type=Path, required=True)
    a = ap.parse_args()
    if a.registers < 1:
        sys.exit("--registers must be at least 1")
    pin_kernels()
    import numpy as np

    from attndyn._io import write_json
    from attndyn.sentiment import kernel_paths

    label = f"R={a.registers}_c={a.shift:g}_L={a.length:g}".replace(".", "_")  # no dot: the docs' markers split at dots
    recipe = {s["seed"]: s["hardmax_accuracy"] for s in json.loads(a.recipe.read_text())["models"]["d16"]["seeds"]}
    command = "python " + " ".join(["benchmarks/sentiment_registers.py", *sys.argv[1:]])
    for seed in a.seeds:
        entry = run_seed(seed, a.registers, a.shift, a.length, a.data, a.cache)
        entry["recipe_hardmax_accuracy"] = recipe.get(seed)
        # read again after every seed: two processes may add seeds to the same file
        res = json.loads(a.json.read_text()) if a.json.is_file() else {"script": "benchmarks/sentiment_registers.py"}
        entries = res.setdefault("runs", {}).setdefault(label, {})
        entries[f"seed{seed}"] = entry
        res["commands"] = sorted({*res.get("commands", []), command})
        res["processor"] = kernel_paths().processor
        res.setdefault("load_1min", {})[f"{label}/seed{seed}"] = os.getloadavg()[0]
        acc = [e["hardmax_accuracy"] for e in entries.values()]
        base = [e["recipe_hardmax_accuracy"] for e in entries.values() if e["recipe_hardmax_accuracy"] is not None]
        res.setdefault("summary", {})[label] = {
            "hardmax_accuracy": {"mean": float(np.mean(acc)), "min": min(acc), "max": max(acc), "n": len(acc)},
            "clusters_per_word": float(np.mean([e["clusters_per_word"] for e in entries.values()])),
            "recipe_mean": float(np.mean(base)) if base else None,
        }
        write_json(a.json, res)  # after every seed: a stopped run keeps what it measured


if __name__ == "__main__":
    main()

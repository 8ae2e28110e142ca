"""A learned attention sink in the d = 16 sentiment model, trained end to end (issue 30, item 3).

The fixed-vector probe of ``sentiment_ceiling.py dynamics`` put one more token s = L e in every review (e a unit
vector orthogonal to the decision's direction v, so that its value <v, s> is 0) and shifted every word by c e:
a word whose best score is weak then follows the sink and votes 0 instead of joining the strongest word of its
sign. Here the sink is a parameter of the model, trained with the word vectors by the d = 16 recipe
(:class:`SinkTransformer`): every layer runs on the review's tokens and the sink (the core's hardmax at inference,
:func:`attndyn.hardmax`), and the decoder reads the mean of the review's own tokens, so the decision is still
exactly a sum over words, (1/n) sum_i u_i <v, z_i^0> plus the sink's share u_s <v, s>. Initialised as the probe:
e drawn from a fixed seed and made orthogonal to the initial decoder, the words shifted by ``--shift`` e, the
sink at ``--length`` e.

    python benchmarks/sentiment_sink.py --seeds 0 1 2 --json docs/results/sentiment_sink.json

Per seed: the hardmax test accuracy on the seed's 70/30 split (the split, vocabulary and recipe of
``sentiment_seeds.py``, pinned, one thread), the best epoch and the sink's final length; beside each, the
recipe's own seed from docs/results/sentiment_seeds.json. Not part of the test suite (about 15 CPU-minutes a seed).
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

SEED_E = 12345  # the seed of the sink's direction e


def _sink_model() -> Any:
    """:class:`SinkTransformer`, defined once torch is imported (after :func:`pin_kernels`)."""
    import torch
    from torch import nn

    from attndyn import SaveAt, hardmax
    from attndyn.sentiment import SentimentTransformer, distinct_words

    class SinkTransformer(SentimentTransformer):
        """The sentiment model with one learned token appended to every review (a sink): it attends and is
        attended like a word, and the decoder does not read it."""

        shift = 0.5
        length = 2.0

        def __init__(self, config: Any, *, generator: Any = None) -> None:
            super().__init__(config, generator=generator)
            e = torch.randn(config.d, generator=torch.Generator().manual_seed(SEED_E))
            u = self.decoder.weight.detach()[0]
            u = u / u.norm()
            e = e - (e @ u) * u
            e = e / e.norm()
            with torch.no_grad():
                self.embed.weight[1:] += self.shift * e
            self.sink = nn.Parameter(self.length * e)

        def _with_sink(self, z: Any, mask: Any) -> tuple[Any, Any]:
            B, _, d = z.shape
            z = torch.cat([z, self.sink.to(z).expand(B, 1, d)], dim=1)
            return z, torch.cat([mask, torch.ones(B, 1, dtype=mask.dtype, device=mask.device)], dim=1)

        def layers_softmax(self, ids: Any, mask: Any, *, tau: float | None = None) -> Any:
            tau = self.config.tau if tau is None else tau
            z = self.hook_embed(self.embed(ids))
            n = z.shape[1]
            yield z
            z, m = self._with_sink(z, mask)
            for _ in range(self.config.layers):
                z = self.attention_layer(z, m, tau)
                yield z[:, :n]

        @torch.no_grad()
        def hardmax_logits(self, ids: Any, mask: Any) -> Any:
            uid, counts = distinct_words(ids, mask)
            z0 = self.embed.weight.detach().to(torch.float64)[uid]
            z0, m = self._with_sink(z0, counts > 0)
            traj = hardmax(
                z0,
                alpha=float(self.alpha.detach()),
                layers=self.config.layers,
                mask=m,
                save=SaveAt(every=None),
                check_hypotheses=False,
            )
            return self.decode(traj.ys[-1][:, :-1], counts)

    return SinkTransformer


def run_seed(seed: int, shift: float, length: float, data: str, cache: Path) -> dict:
    import numpy as np
    import torch

    from attndyn.sentiment import HardmaxSentimentClassifier
    from attndyn.sentiment._evaluate import accuracy_report

    sys.path.insert(0, str(Path(__file__).parent))
    from sentiment_ceiling import _corpus, _text_config

    torch.set_num_threads(1)
    model = _sink_model()
    model.shift, model.length = shift, length

    class SinkClassifier(HardmaxSentimentClassifier):
        model_class = model

    corpus = _corpus(data, _text_config(16, {}), seed, cache)
    y = np.asarray(corpus.reviews.labels)
    tr, te = corpus.train_idx, corpus.test_idx
    est = SinkClassifier(d=16, random_state=seed)
    t0 = time.perf_counter()
    est.fit([corpus.reviews.texts[i] for i in tr], y[tr], tokens=[corpus.tokens[i] for i in tr])
    test = est.encode(y=y[te], tokens=[corpus.tokens[i] for i in te])
    rep = accuracy_report(est.model_, test)
    entry = {
        "seed": seed,
        "hardmax_accuracy": rep["hardmax_acc"],
        "softmax_accuracy": rep["softmax_acc"],
        "best_epoch": est.best_epoch_,
        "val_hardmax_accuracy": [h["val_hardmax_acc"] for h in est.history_],
        "sink_length": float(est.model_.sink.detach().norm()),
        "train_seconds": time.perf_counter() - t0,
    }
    print(f"sink seed {seed}: {rep['hardmax_acc']:.4f}", flush=True)
    return entry


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--shift", type=float, default=0.5, help="c: every word's initial shift along e")
    ap.add_argument("--length", type=float, default=2.0, help="L: the sink's initial length")
    ap.add_argument("--data", default="../shared/data/imdb/imdb.csv.gz")
    ap.add_argument("--cache", type=Path, default=Path("runs/ceiling-cache"), help="tokenized corpora (reused)")
    ap.add_argument("--recipe", type=Path, default=Path("docs/results/sentiment_seeds.json"))
    ap.add_argument("--json", type=Path, required=True)
    a = ap.parse_args()
    pin_kernels()
    import numpy as np

    from attndyn._io import write_json
    from attndyn.sentiment import kernel_paths

    res = json.loads(a.json.read_text()) if a.json.is_file() else {"script": "benchmarks/sentiment_sink.py"}
    label = f"c={a.shift:g}_L={a.length:g}".replace(".", "_")
    recipe = {s["seed"]: s["hardmax_accuracy"] for s in json.loads(a.recipe.read_text())["models"]["d16"]["seeds"]}
    entries = res.setdefault("runs", {}).setdefault(label, {})
    for seed in a.seeds:
        entry = run_seed(seed, a.shift, a.length, a.data, a.cache)
        entry["recipe_hardmax_accuracy"] = recipe.get(seed)
        entries[f"seed{seed}"] = entry
        res.setdefault("commands", [])
        command = "python " + " ".join(["benchmarks/sentiment_sink.py", *sys.argv[1:]])
        res["commands"] = sorted({*res["commands"], command})
        res["processor"] = kernel_paths().processor
        res.setdefault("load_1min", {})[f"{label}/seed{seed}"] = os.getloadavg()[0]
        acc = [e["hardmax_accuracy"] for e in entries.values()]
        base = [e["recipe_hardmax_accuracy"] for e in entries.values() if e["recipe_hardmax_accuracy"] is not None]
        res.setdefault("summary", {})[label] = {
            "mean": float(np.mean(acc)),
            "min": min(acc),
            "max": max(acc),
            "n": len(acc),
            "recipe_mean": float(np.mean(base)) if base else None,
        }
        write_json(a.json, res)  # after every seed: a stopped run keeps what it measured


if __name__ == "__main__":
    main()

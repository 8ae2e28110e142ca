"""Counterfactual leaders on the sentiment model: which words of a review could another A make lead,
and what would the model predict then?

    python examples/control_sentiment.py [--model runs/d2] [--text "..."] [--out DIR] [--json FILE]

The model (hardmax paper, Section 6) runs eq. (1.1) with A = I on the review's word vectors and
reads the mean of the last layer. Here each word that some SPD matrix could make lead at layer 0
(attndyn.control.leadable; the others carry a certificate that no SPD A can) is a candidate; every
set of candidates (all subsets when there are at most 6, else each alone and all but one) is asked
to be exactly the leaders. The chosen A is verified by the exact engine over the model's layers, and
the model's decoder reads the resulting last layer: P(positive) if that word led. Without a
trained run folder (`attndyn sentiment train --run runs/d2 --d 2`, a few minutes) a small model is
fitted on a synthetic corpus first, so the script always runs.
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import numpy as np
import torch

import attndyn
from attndyn.control import choose_A, leadable
from attndyn.sentiment import HardmaxSentimentClassifier, distinct_words, trajectory_of

REVIEW = "The acting was not good and the plot was a boring waste of time, although the music was wonderful."


def synthetic_model() -> HardmaxSentimentClassifier:
    rng = np.random.default_rng(0)
    pos, neg = ["great", "wonderful", "superb", "loved"], ["awful", "boring", "terrible", "waste"]
    neutral = ["movie", "film", "plot", "acting", "music", "story"]
    texts, labels = [], []
    for i in range(160):
        words = list(rng.choice(pos if i % 2 else neg, size=3)) + list(rng.choice(neutral, size=3))
        rng.shuffle(words)
        texts.append(" ".join(words))
        labels.append(i % 2)
    return HardmaxSentimentClassifier(
        d=2, epochs=6, min_freq=1, lr=3e-2, embed_lr=1e-1, patience=6, random_state=0, verbose=False
    ).fit(texts, labels)


def counterfactuals(est: HardmaxSentimentClassifier, text: str, spd: bool = True) -> dict:
    words, traj, H, ids = trajectory_of(est, text)
    model = est.model_
    uid, counts = distinct_words(ids, torch.ones_like(ids, dtype=torch.bool))
    vocab = est.vocab_.words
    names = [vocab[int(i)] for i in uid[0]]
    Z = model.embed.weight.detach().double()[uid[0]].numpy()  # (U, d) one token per distinct word
    w = counts[0].numpy()
    v, b = model.decoder.weight.detach().double()[0].numpy(), float(model.decoder.bias.detach()[0])
    alpha, layers = float(model.alpha.detach()), model.config.layers

    def prob(final: np.ndarray) -> float:  # the decoder on the count-weighted mean of the last layer
        return float(1.0 / (1.0 + np.exp(-((w @ final) / w.sum() @ v + b))))

    base = attndyn.hardmax(Z, alpha=alpha, layers=layers, check_hypotheses=False)
    own = list(attndyn.leaders(base).indices)
    cand = leadable(Z, spd=spd)
    if len(cand) <= 6:
        targets = [list(c) for k in range(1, len(cand) + 1) for c in itertools.combinations(cand, k)]
    else:
        targets = [[i] for i in cand] + [[j for j in cand if j != i] for i in cand]
    rows = []
    for S in targets:
        res = choose_A(Z, S, spd=spd, alpha=alpha, layers=layers)
        p = prob(res.trajectory.final_tokens.numpy()) if res.trajectory is not None else float("nan")
        rows.append(
            {
                "words": [names[i] for i in S],
                "verdict": res.verdict,
                "p_positive": p,
                "leaders_found": [names[j] for j in res.leaders_found],
                "result": res,
            }
        )
    inside = [names[i] for i in range(len(names)) if i not in cand]
    return {
        "names": names,
        "own_leaders": [names[j] for j in own],
        "p_model": prob(base.final_tokens.numpy()),
        "p_check": float(1 / (1 + np.exp(-H))),
        "targets": rows,
        "candidates": [names[i] for i in cand],
        "inside": inside,
        "n_words": len(names),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = Path(__file__).resolve().parents[1]
    ap.add_argument("--model", type=Path, default=root / "runs" / "d2")
    ap.add_argument("--text", default=REVIEW)
    ap.add_argument("--out", type=Path, default=None, help="Write the figures here.")
    ap.add_argument("--json", type=Path, default=None, help="Write the counterfactuals (and the load) here.")
    a, _ = ap.parse_known_args(argv)  # known only: the examples test runs this under pytest's argv
    if (a.model / "weights.safetensors").is_file():
        est = HardmaxSentimentClassifier.load(a.model)
        print(f"model: {a.model}")
    else:
        print(f"no trained model at {a.model}: fitting a small one on a synthetic corpus")
        est = synthetic_model()
    try:
        import cvxpy  # noqa: F401  (the optional 'control' extra: SPD A)

        spd = True
    except ImportError:
        spd = False
        print('cvxpy is not installed (pip install -e ".[control]"): general A instead of SPD A')
    kind = "SPD A" if spd else "A"
    r = counterfactuals(est, a.text, spd)
    print(f"review: {a.text!r}\n{r['n_words']} distinct known words: {', '.join(r['names'])}")
    print(
        f"the model's leaders (A = I): {', '.join(r['own_leaders'])};  P(positive) = {r['p_model']:.3f}"
        f" (the estimator says {r['p_check']:.3f})"
    )
    print(f"words some {kind} can make lead: {', '.join(r['candidates'])}")
    if r["inside"]:
        print(
            f"the others ({', '.join(r['inside'])}) lie in the hull of the other words"
            + (" and the origin" if spd else "")
            + f": no {kind} makes them lead at layer 0"
        )
    reached = [x for x in r["targets"] if x["verdict"] == "reached"]
    print(
        f"{len(reached)} of {len(r['targets'])} leader sets reached and verified; P(positive) when exactly they lead:"
    )
    for x in sorted(reached, key=lambda x: -x["p_positive"]):
        print(f"  {' + '.join(x['words']):<40s} P(positive) = {x['p_positive']:.3f}")
    for x in r["targets"]:
        if x["verdict"] != "reached":
            print(f"  {' + '.join(x['words']):<40s} {x['verdict']}: {x['result'].reason[:90]}")
    if a.json is not None:
        import json
        import os
        import sys

        ranked = sorted(reached, key=lambda x: -x["p_positive"])
        record = {
            "script": "examples/control_sentiment.py",
            "command": "python " + " ".join(["examples/control_sentiment.py", *sys.argv[1:]]),
            "model": str(a.model),
            "spd": spd,
            "text": a.text,
            "words": r["names"],
            "n_words": r["n_words"],
            "own_leaders": r["own_leaders"],
            "n_own_leaders": len(r["own_leaders"]),
            "candidates": r["candidates"],
            "n_candidates": len(r["candidates"]),
            "inside": r["inside"],
            "n_inside": len(r["inside"]),
            "p_model": r["p_model"],
            "p_check": r["p_check"],
            "targets": len(r["targets"]),
            "reached": len(reached),
            "singletons_reached": sum(len(x["words"]) == 1 for x in reached),
            "most_positive": {"words": ranked[0]["words"], "p_positive": ranked[0]["p_positive"]} if ranked else None,
            "most_negative": {"words": ranked[-1]["words"], "p_positive": ranked[-1]["p_positive"]} if ranked else None,
            "counterfactuals": [
                {
                    **{k: x[k] for k in ("words", "verdict", "leaders_found")},
                    "p_positive": None if np.isnan(x["p_positive"]) else x["p_positive"],
                }
                for x in r["targets"]
            ],
            "load_1min": os.getloadavg()[0],
            "cpu_count": os.cpu_count(),
        }
        a.json.write_text(json.dumps(record, indent=2) + "\n")
    if a.out is not None and reached:
        from attndyn.plotting import control_comparison, counterfactual_bars, save_figure

        fig = counterfactual_bars(
            [" + ".join(x["words"]) for x in reached],
            [x["p_positive"] for x in reached],
            r["p_model"],
            title=f"if exactly these words led ({kind}, verified by the engine)",
        )
        print("wrote", *save_figure(fig, a.out / "control_sentiment", formats=("png",)))
        far = max(reached, key=lambda x: abs(x["p_positive"] - r["p_model"]))
        fig = control_comparison(
            far["result"], labels=r["names"], title=f"making exactly {' + '.join(far['words'])} lead"
        )
        print("wrote", *save_figure(fig, a.out / "control_sentiment_words", formats=("png",)))


if __name__ == "__main__":
    main()

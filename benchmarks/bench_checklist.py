"""The behavioural suite (attndyn.sentiment._checklist) on trained models and on the TF-IDF + LR baseline.

    python benchmarks/bench_checklist.py runs/d2 runs/d16 [--baseline] [--data imdb.csv.gz]

For each run folder: the per-category pass rates of its hardmax predictions. ``--baseline``
also fits TF-IDF (words and word pairs, sublinear tf) + logistic regression, the baseline of
benchmarks/bench_sentiment.py, on the training part of the same seeded 70/30 split (seed 0) and
scores it the same way. Prints one line per model; not part of the test suite.
"""

from __future__ import annotations

import argparse
import time

from attndyn.sentiment import HardmaxSentimentClassifier
from attndyn.sentiment._checklist import score, summary


def tfidf_baseline(data: str, seed: int = 0):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from attndyn.sentiment._data import read_reviews, split_random
    from attndyn.sentiment._text import clean

    reviews = read_reviews(data)
    tr, te = split_random(len(reviews), seed=seed)
    pipe = make_pipeline(
        TfidfVectorizer(preprocessor=clean, ngram_range=(1, 2), min_df=2, sublinear_tf=True, max_features=200_000),
        LogisticRegression(C=4.0, max_iter=1000),
    )
    pipe.fit([reviews.texts[i] for i in tr], reviews.labels[tr])
    acc = float(pipe.score([reviews.texts[i] for i in te], reviews.labels[te]))
    return pipe, acc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="*", help="run or model folders")
    ap.add_argument("--baseline", action="store_true", help="also fit and score TF-IDF + logistic regression")
    ap.add_argument("--data", default="/work/shared/data/imdb/imdb.csv.gz", help="IMDb CSV for the baseline")
    args = ap.parse_args()
    for run in args.runs:
        est = HardmaxSentimentClassifier.load(run)
        res = score(est)
        print(f"{run}: {summary(res)}")
        for cat, r in res.items():
            for t in r["failures"]:
                print(f"    {cat} failure: {t}")
    if args.baseline:
        t0 = time.perf_counter()
        pipe, acc = tfidf_baseline(args.data)
        res = score(pipe)
        print(f"TF-IDF + LR (70/30 test acc {acc:.4f}, {time.perf_counter() - t0:.0f} s): {summary(res)}")
        for cat, r in res.items():
            for t in r["failures"]:
                print(f"    {cat} failure: {t}")


if __name__ == "__main__":
    main()

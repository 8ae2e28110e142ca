"""Benchmark of attndyn.pretrained on the packaged MiniLM: time per review and memory (issue 14).

    python benchmarks/bench_pretrained.py --reviews 50 --out runs/bench-pretrained
    python benchmarks/bench_pretrained.py --reviews 20 --json docs/results/bench_pretrained.json

Times, on the first N reviews of the IMDb CSV (truncated to --max-tokens word pieces): importing
transformers and loading the model; per review, the model's forward pass, the leaders of every head
(follow sets under the heads' scores), clusters against depth, and a full ``analyze`` without spectra;
once, the value spectra (6 layers x 12 heads), the Ginibre baseline per sample (d = 384) and the
idealized run. Memory: peak resident set size of the process. The record holds the one-minute load
before and after and the core count (``--json PATH`` writes it atomically). Needs the [pretrained]
extra. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
from pathlib import Path

import numpy as np


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reviews", type=int, default=50)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--data", default="../shared/data/imdb/imdb.csv.gz")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1: a shared 2-core machine)")
    ap.add_argument("--out", type=Path, default=None, help="write results.json here")
    ap.add_argument("--json", type=Path, default=None, help="write the results to this file")
    ap.add_argument("--ginibre-samples", type=int, default=3, help="Ginibre samples timed (0: skip)")
    args = ap.parse_args()

    import os
    import sys

    load0 = os.getloadavg()[0]
    wall0 = time.perf_counter()

    import torch

    torch.set_num_threads(args.threads)
    rss0 = _rss_mb()
    t0 = time.perf_counter()
    from attndyn.pretrained import analyze, depth_clusters, idealized_run, leader_map, load_model, spectra

    pm = load_model()
    load_s = time.perf_counter() - t0
    rss_model = _rss_mb()
    pm.max_tokens = args.max_tokens
    from attndyn.sentiment import read_reviews

    texts = read_reviews(args.data).texts[: args.reviews]
    fw, ld, cl, full, ntok = [], [], [], [], []
    for text in texts:
        t = time.perf_counter()
        fwd = pm.run(text)
        fw.append(time.perf_counter() - t)
        t = time.perf_counter()
        leader_map(fwd, pm.weights())
        ld.append(time.perf_counter() - t)
        t = time.perf_counter()
        depth_clusters(fwd.hidden)
        cl.append(time.perf_counter() - t)
        t = time.perf_counter()
        analyze(text, pm, with_spectra=False, idealized=False)
        full.append(time.perf_counter() - t)
        ntok.append(len(fwd.tokens))
    t = time.perf_counter()
    spectra(pm.weights(), ginibre_samples=0)
    spectra_s = time.perf_counter() - t
    ginibre_s = None
    if args.ginibre_samples > 0:  # timed on their own: a difference of two spectra() calls mixes in warm-up
        from attndyn.experiments._samplers import ginibre_leading_count

        d = int(pm.weights()[0].value.shape[-1])  # the model width (384 for MiniLM)
        t = time.perf_counter()
        ginibre_leading_count(np.random.default_rng(0), d, args.ginibre_samples)
        ginibre_s = (time.perf_counter() - t) / args.ginibre_samples
    t = time.perf_counter()
    idealized_run(pm.run(texts[0]), pm.weights())
    ideal_s = time.perf_counter() - t
    res = {
        "script": "benchmarks/bench_pretrained.py",
        "command": "python " + " ".join(["benchmarks/bench_pretrained.py", *sys.argv[1:]]),
        "reviews": len(texts),
        "max_tokens": args.max_tokens,
        "threads": args.threads,
        "tokens_mean": statistics.mean(ntok),
        "load_s": load_s,
        "per_review_s": {
            "forward": statistics.mean(fw),
            "leaders": statistics.mean(ld),
            "clusters": statistics.mean(cl),
            "analyze_without_spectra": statistics.mean(full),
        },
        "spectra_s": spectra_s,
        "ginibre_per_sample_s": ginibre_s,
        "idealized_s": ideal_s,
        "peak_rss_mb": {"before_import": rss0, "after_load": rss_model, "end": _rss_mb()},
        "wall_s": time.perf_counter() - wall0,
        "load_1min": {"before": load0, "after": os.getloadavg()[0]},
        "load_average": os.getloadavg()[0],
        "cpu_count": os.cpu_count(),
    }
    import json

    print(json.dumps(res, indent=1))
    if args.out is not None:
        from attndyn._io import write_json

        write_json(args.out / "results.json", res)
    if args.json is not None:
        from attndyn._io import write_json

        write_json(args.json, res)


if __name__ == "__main__":
    main()

"""MiniLM's leader words beside the hardmax sentiment model's on IMDb test reviews (docs/pretrained.md).

    python benchmarks/compare_imdb.py --sentiment-run runs/d2 --reviews 1000 \\
        --json docs/results/pretrained_imdb.json --figure docs/images/pretrained/imdb_leaders.png

What ``attndyn pretrained compare-imdb`` computes (:func:`attndyn.pretrained.compare_on_run`: the
first N reviews of the run's own test split), written as the summary docs/pretrained.md quotes, the
settings, the most frequent leader words of both models, the wall time, the one-minute load before
and after and the core count (the per-review records are left out: ``compare-imdb --out`` writes
them). The sentiment run folder is only read. Needs the [pretrained] extra.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from attndyn._io import write_json


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sentiment-run", required=True, help="a run folder of `attndyn sentiment train`")
    ap.add_argument("--data", default=None, help="imdb.csv(.gz) (default: the run's data.json)")
    ap.add_argument("--reviews", type=int, default=1000)
    ap.add_argument("--json", type=Path, required=True, help="write the summary here")
    ap.add_argument("--figure", type=Path, default=None, help="also draw the comparison figure (PNG) here")
    a = ap.parse_args()

    from attndyn.pretrained._imdb import compare_on_run

    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    comp = compare_on_run(a.sentiment_run, a.data, reviews=a.reviews, progress=sys.stderr.isatty())
    seconds = time.perf_counter() - t0
    rec = comp.record()
    rec.pop("per_review")
    out = {
        "script": "benchmarks/compare_imdb.py",
        "command": "python " + " ".join(["benchmarks/compare_imdb.py", *sys.argv[1:]]),
        "seconds": seconds,
        "load_1min": {"before": load0, "after": os.getloadavg()[0]},
        "cpu_count": os.cpu_count(),
        **rec,
    }
    write_json(a.json, out)
    if a.figure is not None:
        from attndyn.plotting import _pretrained as plots
        from attndyn.plotting import save_figure

        save_figure(plots.imdb_comparison(comp.record()), a.figure.with_suffix(""), formats=("png",))
    print(out["summary"])


if __name__ == "__main__":
    main()

"""MiniLM's value spectra beside their random baselines, as `attndyn reproduce` (full) computes them.

    python benchmarks/pretrained_spectra.py --json docs/results/pretrained_spectra.json

:func:`attndyn.pretrained.spectra` on the packaged MiniLM with the full reproduce run's sample sizes
(200 real Ginibre 384 x 384 matrices, 2,000 Gaussian products of the heads' shapes) and its seed
(``attndyn reproduce``'s default seed 0, + 141 as in ``pretrained-fig10``): the fractions of layers and
heads with a real, positive, simple leading eigenvalue and with a good triple, the baselines with their
99% intervals, the counts, and how far the heads' count lies from the product baseline in standard
deviations of a binomial with that rate. Records the wall time, the one-minute load before and after
and the core count. Needs the [pretrained] extra.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

from attndyn._io import write_json


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ginibre-samples", type=int, default=200)
    ap.add_argument("--head-samples", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=141)
    ap.add_argument("--json", type=Path, required=True)
    a = ap.parse_args()

    from attndyn.pretrained import load_model, spectra

    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    pm = load_model()
    sp = spectra(pm.weights(), ginibre_samples=a.ginibre_samples, head_samples=a.head_samples, seed=a.seed)
    seconds = time.perf_counter() - t0
    L, H = sp.head_good.shape
    nh = int(sp.head_leading.sum())
    p = sp.baseline["heads"]["fraction"]
    mean, sd = L * H * p, math.sqrt(L * H * p * (1 - p))
    out = {
        "script": "benchmarks/pretrained_spectra.py",
        "command": "python " + " ".join(["benchmarks/pretrained_spectra.py", *sys.argv[1:]]),
        "model": pm.name,
        "layers": L,
        "heads": H,
        "counts": {
            "layers_leading": int(sp.layer_leading.sum()),
            "layers_good": int(sp.layer_good.sum()),
            "heads_leading": nh,
            "heads_good": int(sp.head_good.sum()),
        },
        "fractions": sp.fractions(),
        "baseline": sp.baseline,
        "heads_vs_baseline": {"expected": mean, "sd": sd, "z": (nh - mean) / sd},
        "seconds": seconds,
        "load_1min": {"before": load0, "after": os.getloadavg()[0]},
        "cpu_count": os.cpu_count(),
    }
    write_json(a.json, out)
    print({k: out[k] for k in ("counts", "baseline", "heads_vs_baseline", "seconds")})


if __name__ == "__main__":
    main()

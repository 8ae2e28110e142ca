"""Counts over the heads of the example sentence's analysis that docs/pretrained.md quotes.

    attndyn pretrained analyze "The plot was dull, but the acting was wonderful." --out docs/images/pretrained
    python benchmarks/pretrained_example.py --json docs/results/pretrained_example.json

Reads ``analysis.json`` (written by the command above) and counts, over the 72 (layer, head) pairs,
the heads whose most-followed token (hardmax follow sets) is [CLS], the range of its follower counts
and how many heads all tokens follow it in; the heads whose most-attended token (softmax weights) is
[CLS] and the range of the attention mass it receives.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from attndyn._io import write_json


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--analysis", type=Path, default=Path("docs/images/pretrained/analysis.json"))
    ap.add_argument("--json", type=Path, required=True)
    a = ap.parse_args()
    d = json.loads(a.analysis.read_text(encoding="utf-8"))
    cls = d["tokens"].index("[CLS]")
    heads = [h for layer in d["leaders"]["per_head"] for h in layer]
    followed = [h for h in heads if h["most_followed"] == cls]
    attended = [h for h in heads if h["most_attended"] == cls]
    out = {
        "script": "benchmarks/pretrained_example.py",
        "command": "python " + " ".join(["benchmarks/pretrained_example.py", *sys.argv[1:]]),
        "analysis": str(a.analysis),
        "text": d["text"],
        "heads": len(heads),
        "tokens": d["n_tokens"],
        "cls_most_followed": {
            "heads": len(followed),
            "followers_min": min(h["followers"] for h in followed),
            "followers_max": max(h["followers"] for h in followed),
            "heads_followed_by_all": sum(h["followers"] == d["n_tokens"] for h in followed),
        },
        "cls_most_attended": {
            "heads": len(attended),
            "attention_min": min(h["attention_received"] for h in attended),
            "attention_max": max(h["attention_received"] for h in attended),
        },
    }
    write_json(a.json, out)
    print(out)


if __name__ == "__main__":
    main()

"""Write into README.md and docs/*.md the numbers their result files hold.

A quoted number is written ``VALUE<!-- result: FILE KEY -->`` (tests/test_doc_numbers.py checks it).
This tool rewrites each VALUE from FILE at KEY, keeping the printed number of decimals (and a
leading sign or trailing %); a placeholder that is not a number yet (``X<!-- result: ... -->``)
gets a precision from the key's last part (accuracies 4 decimals, rates and shares 2, counts 0).

    python tools/fill_results.py            # rewrite in place
    python tools/fill_results.py --check    # exit 1 if anything would change
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
QUOTE = re.compile(
    r"(?<![\w.,>])(?P<value>[-+−]?(?:\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?|[A-Za-z_]\w*)?)(?P<pct>%?)(?P<bold>\**)<!-- result: (?P<file>\S+) (?P<key>\S+) -->"
)
NUMBER = re.compile(r"^[-+−]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?$")


def _lookup(data, key: str):
    for part in key.split("."):
        data = data[int(part)] if isinstance(data, list) else data[part]
    return data


def _default_decimals(key: str) -> int:
    parts = key.split(".")
    name = " ".join(parts)
    if "accuracy" in name or "agreement" in name:
        return 4
    if "clusters_per_word" in name:
        return 3
    if "seconds" in name:
        return 0
    if "leaders_per_review" in name:
        return 1
    return 2


def _format(old: str, value: float | str | bool, key: str, pct: str) -> str:
    if isinstance(value, str):  # a word the file holds (a verdict): written as it is
        return value
    if isinstance(value, bool):  # a check the file holds: as JSON writes it
        return "true" if value else "false"
    v = float(value) * (100 if pct else 1)
    if NUMBER.match(old):
        text = old.replace(",", "").replace("−", "-")
        if "e" in text:
            mant = text.split("e")[0]
            dec = len(mant.split(".")[1]) if "." in mant else 0
            return f"{v:.{dec}e}".replace("e-0", "e-").replace("e+0", "e")
        dec = len(text.split(".")[1]) if "." in text else 0
        sign = "+" if old.startswith("+") and v >= 0 else ""
        out = f"{sign}{v:,.{dec}f}" if "," in old else f"{sign}{v:.{dec}f}"
        return out
    return f"{v:.{_default_decimals(key)}f}"


def fill(text: str) -> str:
    cache: dict[str, object] = {}

    def sub(m: re.Match) -> str:
        path = m["file"]
        if path not in cache:
            cache[path] = json.loads((ROOT / path).read_text(encoding="utf-8"))
        value = _lookup(cache[path], m["key"])
        new = _format(m["value"], value, m["key"], m["pct"])
        return f"{new}{m['pct']}{m['bold']}<!-- result: {path} {m['key']} -->"

    return QUOTE.sub(sub, text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    changed = []
    for doc in DOCS:
        old = doc.read_text(encoding="utf-8")
        new = fill(old)
        if new != old:
            changed.append(doc.relative_to(ROOT))
            if not args.check:
                doc.write_text(new, encoding="utf-8")
    print("\n".join(map(str, changed)) or "nothing to change")
    sys.exit(1 if args.check and changed else 0)


if __name__ == "__main__":
    main()

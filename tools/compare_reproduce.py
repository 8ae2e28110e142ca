"""Compare two ``attndyn reproduce`` results.json files number by number.

    python tools/compare_reproduce.py BEFORE/results.json AFTER/results.json

Prints each experiment's status before and after, every check whose measured text changed, and a count of
the numeric fields (in checks' measured text and in params) that are identical, changed, or present on one
side only. Run-time fields (``runtime_s``) are left out. Exit status 0; a reading aid, not a test.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def numbers(obj, path=""):
    """(path, value) for every number in ``obj`` (JSON), numbers inside strings included."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k != "runtime_s":
                yield from numbers(v, f"{path}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from numbers(v, f"{path}[{i}]")
    elif isinstance(obj, bool):
        yield path, obj
    elif isinstance(obj, (int, float)):
        yield path, obj
    elif isinstance(obj, str):
        for i, m in enumerate(NUMBER.findall(obj)):
            yield f"{path}#{i}", m


def main() -> None:
    before, after = (json.loads(Path(p).read_text()) for p in sys.argv[1:3])
    old = {e["name"]: e for e in before["experiments"]}
    new = {e["name"]: e for e in after["experiments"]}
    same = changed = one_side = 0
    for name in dict.fromkeys([*old, *new]):
        a, b = old.get(name), new.get(name)
        if a is None or b is None:
            print(f"{name}: only {'after' if a is None else 'before'}")
            continue
        print(f"{name}: {a['status']} -> {b['status']}")
        for ca, cb in zip(a["checks"], b["checks"]):
            if ca["measured"] != cb["measured"]:
                print(f"    {ca['claim'][:70]!r}: {ca['measured']!r} -> {cb['measured']!r}")
        na = dict(numbers({"checks": a["checks"], "params": a["params"]}))
        nb = dict(numbers({"checks": b["checks"], "params": b["params"]}))
        for key in na.keys() | nb.keys():
            if key in na and key in nb:
                same, changed = (same + 1, changed) if na[key] == nb[key] else (same, changed + 1)
            else:
                one_side += 1
    print(f"numeric fields: {same} identical, {changed} changed, {one_side} on one side only")


if __name__ == "__main__":
    main()

"""Every measured number the docs quote is the value in the result file a named script wrote.

In README.md and docs/*.md such a number is followed at once by an HTML comment naming its
source, ``0.869<!-- result: docs/results/sentiment_seeds.json models.d2.hardmax_accuracy.mean -->``:
a JSON file under docs/ (docs/results/, or a command's output folder such as docs/images/pretrained/
with its config.json) and a dotted key path into it (integers index lists). The printed
number must be the file's value rounded to the printed digits (a trailing ``%`` means the value
times 100; ``,`` groups thousands). A word so marked (a verdict, ``met<!-- result: ... -->``) must be the
file's string, or its boolean as JSON writes it (``true``, ``false``). Each result file names the script that wrote it.
"""

import json
import re
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
QUOTE = re.compile(r"(?<![\w.,>])([-+−]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?)(%?)\**\s*<!-- result: (\S+) (\S+) -->")

WORD = re.compile(r"(?<![\w.,>])([A-Za-z_]\w*)\**\s*<!-- result: (\S+) (\S+) -->")


def _marked(pattern: re.Pattern):
    """One pytest param per match of ``pattern`` in the docs, its groups as arguments, named by file, line, key."""
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for m in pattern.finditer(text):
            line = text[: m.start()].count("\n") + 1
            yield pytest.param(*m.groups(), id=f"{doc.relative_to(ROOT)}:{line}:{m.groups()[-1]}")


def _words():
    return _marked(WORD)


def _quotes():
    return _marked(QUOTE)


def lookup(data, key: str):
    for part in key.split("."):
        data = data[int(part)] if isinstance(data, list) else data[part]
    return data


def matches(printed: str, percent: str, value: float) -> bool:
    """``printed`` is ``value`` (x100 when ``percent``) rounded to the printed number of decimals."""
    text = printed.replace(",", "").replace("−", "-")
    want = Decimal(text)
    got = Decimal(repr(float(value) * (100 if percent else 1)))
    return (
        got.quantize(want, rounding=ROUND_HALF_EVEN) == want
        or abs(got - want) <= Decimal(10) ** want.as_tuple().exponent / 2
    )


def test_the_docs_quote_result_files():
    assert len(list(_quotes())) >= 20


@pytest.mark.parametrize("printed, percent, path, key", list(_quotes()))
def test_quoted_number_is_the_files_value(printed, percent, path, key):
    file = ROOT / path
    assert file.is_file() and file.is_relative_to(ROOT / "docs"), f"{path}: not a result file under docs/"
    data = json.loads(file.read_text(encoding="utf-8"))
    named = "script" in data or "benchmark" in data or "command" in data or (file.parent / "config.json").is_file()
    assert named, f"{path} names neither the script that wrote it nor (config.json beside it) the command's settings"
    value = lookup(data, key)
    assert matches(printed, percent, value), f"the docs say {printed}{percent}, {path} {key} = {value!r}"


@pytest.mark.parametrize("printed, path, key", list(_words()))
def test_quoted_word_is_the_files_string(printed, path, key):
    file = ROOT / path
    assert file.is_file() and file.is_relative_to(ROOT / "docs"), f"{path}: not a result file under docs/"
    value = lookup(json.loads(file.read_text(encoding="utf-8")), key)
    if isinstance(value, bool):  # a check the file holds, quoted as JSON writes it
        value = "true" if value else "false"
    assert value == printed, f"the docs say {printed}, {path} {key} = {value!r}"


def test_a_range_is_two_numbers_not_a_negative_one():
    found = [
        m.group(1)
        for m in QUOTE.finditer("(0.8667<!-- result: f a -->-0.8720<!-- result: f b -->, -0.09<!-- result: f c -->")
    ]
    assert found == ["0.8667", "0.8720", "-0.09"]


def test_matches_rounds_like_the_printed_digits():
    assert matches("0.869", "", 0.86912) and matches("0.87", "", 0.8651) and not matches("0.869", "", 0.8702)
    assert matches("86.9", "%", 0.8691) and matches("1,234", "", 1234.4) and not matches("12", "", 13.0)

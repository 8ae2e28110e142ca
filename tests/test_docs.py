"""Every ```python block of README.md and docs/*.md runs as written, alone, in an empty folder."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def _blocks():
    for doc in DOCS:
        for m in BLOCK.finditer(doc.read_text(encoding="utf-8")):
            line = doc.read_text(encoding="utf-8")[: m.start()].count("\n") + 1
            slow = "load_imdb" in m.group(1) or "reproduce(" in m.group(
                1
            )  # reads 50,000 reviews / runs the quick report
            yield pytest.param(
                doc, m.group(1), id=f"{doc.relative_to(ROOT)}:{line}", marks=[pytest.mark.slow] if slow else []
            )


def test_docs_have_python_blocks():
    assert len(list(_blocks())) >= 5


@pytest.mark.parametrize("doc, code", list(_blocks()))
def test_doc_block_runs(doc, code, tmp_path, monkeypatch):
    if "load_imdb" in code:
        from attndyn._validation import InputError
        from attndyn.sentiment.data import _find_imdb

        try:
            _find_imdb()
        except InputError:
            pytest.skip("the IMDb copy is not on this machine (set ATTNDYN_IMDB)")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, f"{doc.name} block", "exec"), {"__name__": "__doc_block__"})

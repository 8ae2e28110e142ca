"""What the report's reader sees (issue 34): prose without raw reST markup, one spelling for measured truth values,
and each quick-mode verdict with the sample it rests on."""

from __future__ import annotations

import html as html_module
import math
import re

import pytest
from scipy.stats import t as student_t

from attndyn.experiments._statistics import wilson_interval
from attndyn.reproduce import SECTIONS
from attndyn.reproduce._evidence import (
    CONFIDENCE,
    EVERY_NEGATION,
    Sample,
    every_instance_decided,
    fraction_decided,
    mean_decided,
)
from attndyn.reproduce._html import render_html
from attndyn.reproduce._markup import inline_markup
from attndyn.reproduce._registry import Check, Context, SectionResult

RAW_MARKUP = re.compile(r"``|:(?:[\w]+:)?(?:mod|func|class|meth|data|attr|obj):`")


def _text(page: str) -> str:
    """The page's text as a reader sees it: no tags, no script or style, entities decoded."""
    page = re.sub(r"<(script|style)>.*?</\1>", "", page, flags=re.S)
    return html_module.unescape(re.sub(r"<[^>]+>", " ", page))


# --- markup rendered ---------------------------------------------------------------------------------------------


def test_the_report_shows_no_raw_markup_and_renders_it_as_code(quick_report):
    page = quick_report.files["report"].read_text(encoding="utf-8")
    text = _text(page)
    assert RAW_MARKUP.search(text) is None, RAW_MARKUP.search(text)
    assert "`" not in text
    # the docstrings' literals and roles of issue 34, now code
    for shown in ("theorem-1.1", "params.cells", "attndyn sweep", "attndyn.analysis._collapse"):
        assert f"<code>{shown}</code>" in page


@pytest.mark.parametrize(
    ("text", "html"),
    [
        ("``params.cells``", "<code>params.cells</code>"),
        (":mod:`attndyn.analysis._collapse`", "<code>attndyn.analysis._collapse</code>"),
        (":func:`~attndyn.analysis.clusters`", "<code>clusters</code>"),
        (":py:meth:`fit <attndyn.Model.fit>`", "<code>fit</code>"),
        ("`x`", "<code>x</code>"),
        ("``<script>`` & :data:`a<b`", "<code>&lt;script&gt;</code> &amp; <code>a&lt;b</code>"),
        ("no markup: a < b", "no markup: a &lt; b"),
    ],
)
def test_inline_markup_renders_literals_and_roles_escaped(text, html):
    assert inline_markup(text) == html


def test_claims_captions_and_summaries_are_rendered_and_escaped(tmp_path):
    res = SectionResult(
        name="x", title="t", source="s", summary=":mod:`a.b` <i>", checks=[Check("``c`` <b>", "``p``", "``m``", None)]
    )
    page = render_html([res], out=tmp_path, config={}, runtime_s=0.0, environment={})
    assert "<code>a.b</code> &lt;i&gt;" in page and "<code>c</code> &lt;b&gt;" in page
    assert "<code>p</code>" in page and "<code>m</code>" in page and "``" not in page
    assert "<code>c</code>" in res._repr_html_() and "``" not in res._repr_html_()


# --- one vocabulary for measured truth values --------------------------------------------------------------------


def test_measured_truth_values_are_spelt_yes_or_no(quick_report):
    measured = [c.measured for r in quick_report.results for c in r.checks]
    assert not [m for m in measured if re.search(r"\b(True|False)\b", m)]
    truth = {
        ("softmax-thm4.1", "(Q, K, V) is a good triple"),
        ("softmax-thm5.1", "V is paranormal"),
        ("softmax-thmC.5", "the radius of the cloud never grows"),
    }
    for name, claim in truth:
        (check,) = [c for c in quick_report[name].checks if c.claim == claim]
        assert check.measured == ("yes" if check.passed else "no")
    # shown, not judged (true by the definition of C_1), and still spelt yes or no
    (check,) = [c for c in quick_report["hardmax-fig1"].checks if c.claim == "A = I: attracting tokens lie in H_1"]
    assert check.passed is None and check.measured == "yes"


# --- quick verdicts with their sample ----------------------------------------------------------------------------


def _judged_monte_carlo(report):
    return [c for r in report.results if SECTIONS[r.name].cell is not None for c in r.checks if c.passed is not None]


def test_every_quick_monte_carlo_verdict_carries_its_sample(quick_report):
    checks = _judged_monte_carlo(quick_report)
    assert len(checks) >= 8 and all(c.sample is not None for c in checks)
    rows = [c for c in quick_report["softmax-table1"].checks if c.claim.startswith("Theorem")]
    assert len(rows) == 4
    for c in rows:
        assert c.sample == Sample(4, 100, decided=c.passed is False)  # 4/4 cannot tell "every" from 9 in 10
        if c.passed:
            assert c.verdict == "pass (N = 4: too small to tell; the full run uses 100)"
    stats = [c for c in quick_report["softmax-thm2.1"].checks if c.claim.startswith("over 16 random sequences")]
    assert len(stats) == 2 and all(c.sample == Sample(16, 500, decided=c.passed is False) for c in stats)
    (gin,) = quick_report["softmax-ginibre"].checks
    assert gin.sample == Sample(100, 3000, decided=False) and "0.046-0.204" in gin.measured
    (thm,) = [c for c in quick_report["hardmax-theorem-1.1"].checks if c.passed is not None]
    assert thm.sample == Sample(12, 400, decided=False)
    page = quick_report.files["report"].read_text(encoding="utf-8")
    assert page.count('<span class="sample">N = 4: too small to tell; the full run uses 100</span>') >= 4
    assert "Quick settings: each Monte Carlo verdict says beside it how many random instances" in page
    recorded = quick_report.record()["experiments"]
    table1 = next(e for e in recorded if e["name"] == "softmax-table1")
    assert table1["checks"][0]["sample"] == {"n": 4, "full": 100, "decided": False}


def test_the_full_run_verdicts_stand_alone(tmp_path):
    ctx = Context(out=tmp_path, quick=False)
    assert ctx.sample(100, full=100, decided=True) is None
    check = Check("c", "p", "m", True, ctx.sample(100, full=100, decided=True))
    assert check.verdict == "pass" and "sample" not in check.record()
    quick = Context(out=tmp_path, quick=True).sample(4, full=100, decided=False)
    assert Check("c", "p", "m", False, quick).verdict == "fail (N = 4: too small to tell; the full run uses 100)"


@pytest.mark.parametrize("n", [1, 4, 12, 16, 59, 60, 100, 400, 500])
def test_every_instance_is_decided_when_the_wilson_interval_excludes_one_failure_in_ten(n):
    lo = wilson_interval(n, n, confidence_level=CONFIDENCE)[0]
    assert every_instance_decided(n, n) is (lo > EVERY_NEGATION)
    # n passes of n: the interval's low end is n / (n + z^2), above 0.9 once n > 9 z^2 = 59.7 (z = 2.576)
    assert every_instance_decided(n, n) is (n >= 60)
    assert every_instance_decided(n - 1, n) is True  # a counterexample refutes the claim
    assert not every_instance_decided(0, 0)


def test_fraction_decided_needs_the_interval_inside_or_outside_the_allowed_range():
    allowed = (0.12, 0.16)
    assert not fraction_decided(wilson_interval(10, 100, confidence_level=0.99), allowed)  # the quick Ginibre
    assert fraction_decided(wilson_interval(420, 3000, confidence_level=0.99), allowed)  # a full run at 0.14
    assert fraction_decided((0.3, 0.4), allowed) and fraction_decided((0.01, 0.05), allowed)  # refuted
    assert not fraction_decided((0.15, 0.2), allowed)


@pytest.mark.parametrize(
    "values", [[-3.0, -2.5, -3.5, -2.0], [-1.0, 2.0, 0.5], [0.4, 0.6, 0.5, 0.7, 0.3], [-1.0, 1.0], [2.0, 2.0]]
)
def test_mean_decided_is_the_student_t_interval_on_one_side_of_zero(values):
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    if sd == 0:
        assert mean_decided(values) is (mean != 0)
        return
    lo, hi = student_t.interval(CONFIDENCE, n - 1, loc=mean, scale=sd / math.sqrt(n))
    assert mean_decided(values) is bool(lo > 0 or hi <= 0)
    assert not mean_decided(values[:1])
